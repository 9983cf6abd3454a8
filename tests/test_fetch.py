"""fetch: copies from a mirror, checks sha256, and keeps nothing on failure."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stage_helpers import stage_argv

from paracl import fetch as fetch_mod
from paracl.fetch import FetchError, SourceFile

REPO = Path(__file__).resolve().parents[1]


def fake_registry(tmp_path, monkeypatch, content: bytes, registered: bytes | None = None):
    """A one-file registry and a mirror holding `content`."""
    mirror = tmp_path / "mirror"
    (mirror / "ds").mkdir(parents=True)
    (mirror / "ds" / "f.txt").write_bytes(content)
    digest = hashlib.sha256(registered if registered is not None else content).hexdigest()
    entry = SourceFile(
        "ds", "ds/f.txt", "https://example.invalid/f.txt", digest, len(content), "CC0"
    )
    monkeypatch.setattr(fetch_mod, "load_registry", lambda: [entry])
    return mirror


def test_fetch_from_mirror(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"hello\n")
    metrics = fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    assert (tmp_path / "raw" / "ds" / "f.txt").read_bytes() == b"hello\n"
    assert metrics["files"] == 1 and metrics["origin"] == "mirror"


def test_checksum_mismatch_keeps_nothing(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"tampered\n", registered=b"hello\n")
    with pytest.raises(FetchError, match=r"f.txt: sha256 mismatch"):
        fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    assert not (tmp_path / "raw").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["mirror"]  # no temp dir left


def test_missing_file_and_unknown_source_are_named(tmp_path, monkeypatch):
    mirror = fake_registry(tmp_path, monkeypatch, b"x")
    (mirror / "ds" / "f.txt").unlink()
    with pytest.raises(FetchError, match=r"ds/f.txt: missing from the mirror"):
        fetch_mod.fetch(["ds"], tmp_path / "raw", mirror)
    with pytest.raises(FetchError, match=r"unknown source 'nope' \(known: ds\)"):
        fetch_mod.fetch(["nope"], tmp_path / "raw", mirror)


def test_mirror_env_var_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("PARACL_DATA_MIRROR", str(tmp_path))
    assert fetch_mod.resolve_mirror("/does/not/matter") == tmp_path
    monkeypatch.setenv("PARACL_DATA_MIRROR", str(tmp_path / "absent"))
    with pytest.raises(FetchError, match="is not a directory"):
        fetch_mod.resolve_mirror(None)


def test_registry_matches_the_real_mirror(mirror):
    """Every registered file is in the mirror with the registered size (sha256: slow test)."""
    registry = fetch_mod.load_registry()
    assert len(registry) > 100
    for entry in registry:
        path = mirror / entry.file
        assert path.is_file(), entry.file
        assert path.stat().st_size == entry.bytes, entry.file
        assert entry.url.startswith("https://") and len(entry.sha256) == 64


def test_fetch_stage_reports_a_bad_param_cleanly(tmp_path):
    params = (REPO / "params.yaml").read_text().replace("theta: 0.3", "theta: 1.7")
    (tmp_path / "params.yaml").write_text(params)
    script, *paths = stage_argv("fetch", yaml.safe_load(params))
    proc = subprocess.run(
        [sys.executable, str(REPO / script), *paths],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "error: params.yaml: 'theta' must be int or float in [0.0, 1.0], got 1.7" in proc.stderr
    assert "Traceback" not in proc.stderr
