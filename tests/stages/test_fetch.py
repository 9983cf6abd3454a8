"""fetch: copies from a mirror, checks checksums, and keeps nothing on failure."""

import csv
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stage_helpers import stage_argv

from paracl.stages import fetch as fetch_mod
from paracl.stages.fetch import FetchError, SourceFile
from paracl.stages.fetch.sources.registry import load_registry

REPO = Path(__file__).resolve().parents[2]
MIRRORED = "mirror MANIFEST.tsv"  # checksum_from of the rows the offline mirror holds


def fake_registry(tmp_path, monkeypatch, content: bytes, registered: bytes | None = None):
    """A one-file registry and a mirror holding `content`."""
    mirror = tmp_path / "mirror"
    (mirror / "ds").mkdir(parents=True)
    (mirror / "ds" / "f.txt").write_bytes(content)
    digest = hashlib.sha256(registered if registered is not None else content).hexdigest()
    entry = SourceFile(
        "ds", "ds/f.txt", "https://example.invalid/f.txt", digest, len(content), "CC0"
    )
    monkeypatch.setattr(fetch_mod, "load_registry", lambda *_: [entry])
    return mirror


def test_fetch_from_mirror(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"hello\n")
    metrics = fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    assert (tmp_path / "raw" / "ds" / "f.txt").read_bytes() == b"hello\n"
    assert metrics["files"] == 1 and metrics["origin"] == "mirror"
    assert metrics["sources"]["ds"] == {
        "files": 1, "bytes": 6, "license": "CC0", "mirror": 1, "download": 0
    }  # fmt: skip


def test_checksum_mismatch_keeps_nothing(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"tampered\n", registered=b"hello\n")
    with pytest.raises(FetchError, match=r"f.txt: sha256 mismatch for ds/f.txt \(source 'ds';"):
        fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    assert not (tmp_path / "raw").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["mirror"]  # no temp dir left


def test_unknown_source_is_named(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"x")
    with pytest.raises(FetchError, match=r"unknown source 'nope' \(known: ds\)"):
        fetch_mod.fetch(["nope"], tmp_path / "raw", mirror)


def test_unverified_file_needs_the_opt_in(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"no checksum published\n")
    entry = SourceFile("ds", "ds/f.txt", "https://example.invalid/f.txt", "unknown", None, "-")
    monkeypatch.setattr(fetch_mod, "load_registry", lambda *_: [entry])
    with pytest.raises(FetchError, match=r"no published checksum.*fetch.allow_unverified"):
        fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    assert not (tmp_path / "raw").exists()
    metrics = fetch_mod.fetch(["ds"], tmp_path / "raw", mirror, allow_unverified=["ds"])
    pinned = hashlib.sha256(b"no checksum published\n").hexdigest()
    assert metrics["sources"]["ds"]["unverified"] == {"ds/f.txt": pinned}


def test_git_blob_checksum(tmp_path, monkeypatch):
    """A publisher that states only the git object id: checked as git hashes a blob."""
    content = b'{"sentence_pair_id": "0", "label": "neutral"}\n'
    mirror = fake_registry(tmp_path, monkeypatch, content)
    blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    good = SourceFile("ds", "ds/f.txt", "https://x.invalid/f", f"git-blob-sha1:{blob}", None, "-")
    monkeypatch.setattr(fetch_mod, "load_registry", lambda *_: [good])
    fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    bad = SourceFile(
        "ds", "ds/f.txt", "https://x.invalid/f", "git-blob-sha1:" + "0" * 40, None, "-"
    )
    monkeypatch.setattr(fetch_mod, "load_registry", lambda *_: [bad])
    with pytest.raises(FetchError, match="git blob id mismatch"):
        fetch_mod.fetch(["ds"], tmp_path / "raw2", mirror)


def test_mirror_env_var_wins_and_a_missing_param_mirror_means_download(tmp_path, monkeypatch):
    """$PARACL_DATA_MIRROR must exist; fetch.mirror is used only where it exists (a fresh
    clone lacks the default ../shared/data: then every file is downloaded)."""
    monkeypatch.setenv("PARACL_DATA_MIRROR", str(tmp_path))
    assert fetch_mod.resolve_mirror("/does/not/matter") == tmp_path
    monkeypatch.setenv("PARACL_DATA_MIRROR", str(tmp_path / "absent"))
    with pytest.raises(FetchError, match=r"absent is not a directory \(PARACL_DATA_MIRROR\)"):
        fetch_mod.resolve_mirror(str(tmp_path))
    monkeypatch.delenv("PARACL_DATA_MIRROR")
    assert fetch_mod.resolve_mirror(str(tmp_path)) == tmp_path
    assert fetch_mod.resolve_mirror(str(tmp_path / "absent")) is None
    assert fetch_mod.resolve_mirror(None) is None


def test_registry_rows_are_well_formed_and_malformed_rows_named(tmp_path):
    registry = load_registry()
    assert len(registry) > 200
    for entry in registry:
        assert entry.url.startswith("https://") and entry.checksum_from, entry.file
    bad = tmp_path / "sources.tsv"
    header = "source\tfile\turl\tsha256\tbytes\tlicense\tchecksum_from\n"
    bad.write_text(header + "ds\tds/f\thttps://x/f\tabc\t1\tCC0\tsomewhere\n")
    with pytest.raises(FetchError, match=r"sources.tsv:2: sha256 must be"):
        load_registry(bad)


def test_registry_matches_the_real_mirror(mirror):
    """Every mirrored row is in the mirror with its MANIFEST size and sha256, and every
    file of the mirror's MANIFEST is registered (sha256 of the files: slow test)."""
    registry = {e.file: e for e in load_registry()}
    with open(mirror / "MANIFEST.tsv", encoding="utf-8") as f:
        manifest = {row["file"]: row for row in csv.DictReader(f, delimiter="\t")}
    assert set(manifest) <= set(registry)
    for entry in registry.values():
        if entry.checksum_from.startswith(MIRRORED):
            row = manifest[entry.file]
            assert (mirror / entry.file).stat().st_size == entry.bytes == int(row["bytes"])
            assert entry.sha256 == row["sha256"], entry.file
        else:  # download-only: the mirror does not hold it
            assert not (mirror / entry.file).exists(), entry.file


def test_every_preset_names_registered_sources():
    registry = load_registry()
    for path in [REPO / "params.yaml", *sorted((REPO / "presets").glob("*.yaml"))]:
        sources = (yaml.safe_load(path.read_text()).get("fetch") or {}).get("sources")
        if sources:
            fetch_mod.select(registry, sources)  # raises on an unknown name


def test_new_mirror_sources_fetch_from_the_mirror(mirror, tmp_path):
    """paws-wiki, the PAWS-X test files and jcse come from the mirror, layout as there."""
    metrics = fetch_mod.fetch(["paws-wiki", "pawsx", "jcse"], tmp_path / "raw", mirror)
    raw = tmp_path / "raw"
    for name in ("paws-wiki/dev.tsv", "pawsx/test-ja.tsv", "jcse/QAbot/20/data.csv",
                 "jcse/corpora/clinic_corpus.txt", "jcse/STS16-ja-test/STS.gs.question-question.txt"):  # fmt: skip
        assert (raw / name).read_bytes() == (mirror / name).read_bytes(), name
    assert metrics["origin"] == "mirror" and metrics["sources"]["jcse"]["files"] == 93


def test_fetch_stage_reports_a_bad_param_cleanly(tmp_path):
    """A bad key of its own section stops the stage with one line naming it (a bad key of
    another stage's section is that stage's to report: test_params_check_only_own_keys)."""
    params = (
        (REPO / "params.yaml")
        .read_text()
        .replace("  allow_unverified: []", "  allow_unverified: 3")
    )
    (tmp_path / "params.yaml").write_text(params)
    script, *paths = stage_argv("fetch", yaml.safe_load(params))
    proc = subprocess.run(
        [sys.executable, str(REPO / script), *paths],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert (
        "error: params.yaml: 'fetch.allow_unverified' must be list (or null), got 3" in proc.stderr
    )
    assert "Traceback" not in proc.stderr


def test_a_private_registry_serves_a_private_mirror(tmp_path, monkeypatch):
    """$PARACL_DATA_REGISTRY: another sources.tsv (same columns, its own checksums)."""
    mirror = tmp_path / "mirror"
    (mirror / "snli").mkdir(parents=True)
    (mirror / "snli" / "small.jsonl").write_bytes(b'{"gold_label": "neutral"}\n')
    digest = hashlib.sha256(b'{"gold_label": "neutral"}\n').hexdigest()
    registry = tmp_path / "sources.tsv"
    registry.write_text(
        "# a private registry\nsource\tfile\turl\tsha256\tbytes\tlicense\tchecksum_from\n"
        f"snli\tsnli/small.jsonl\thttps://example.invalid/s\t{digest}\t26\tCC BY-SA 4.0\tbuilt\n"
    )
    monkeypatch.setenv("PARACL_DATA_REGISTRY", str(registry))
    metrics = fetch_mod.fetch(["snli"], tmp_path / "raw", mirror)
    assert metrics["registry"] == str(registry) and metrics["files"] == 1
    monkeypatch.setenv("PARACL_DATA_REGISTRY", str(tmp_path / "absent.tsv"))
    with pytest.raises(FetchError, match="registry not found"):
        fetch_mod.fetch(["snli"], tmp_path / "raw", mirror)


def test_archive_links_and_damage_are_refused(tmp_path):
    import io
    import tarfile

    from paracl.stages.fetch.sources.archives import unpack

    link = tmp_path / "a" / "links.tar.gz"
    link.parent.mkdir()
    with tarfile.open(link, "w:gz") as tf:
        info = tarfile.TarInfo("x-final/ja/train.tsv")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(FetchError, match="'x-final/ja/train.tsv' is not a regular file"):
        unpack(link)
    damaged = tmp_path / "b" / "cut.tar.gz"
    damaged.parent.mkdir()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"id\tsentence1\tsentence2\tlabel\n" * 500
        info = tarfile.TarInfo("final/dev.tsv")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    damaged.write_bytes(buf.getvalue()[:60])
    with pytest.raises(FetchError, match="cut.tar.gz: damaged archive"):
        unpack(damaged)
