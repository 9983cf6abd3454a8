"""The download path, with the real HTTP client, against a server on 127.0.0.1 serving
files in the real published formats (an SNLI-layout zip, a PAWS-X-layout tar.gz, a
PAWS-Wiki TSV): a checksum mismatch, a cut-off download, a 404, an unreachable host and an
unsafe archive each give one line naming the URL and leave nothing in data/raw. The fetch
stage itself, on a fresh clone's params (no mirror there), downloads what it needs."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from stage_helpers import REPO, stage_argv

from paracl.stages import fetch as fetch_mod
from paracl.stages.fetch import FetchError, SourceFile
from paracl.stages.fetch.sources.registry import COLUMNS

PAWS_TSV = (
    b"id\tsentence1\tsentence2\tlabel\r\n"
    b"1\tIn Paris , in October 1560 , he secretly met the English ambassador , Nicolas "
    b"Throckmorton , asking him for a passport to return to England through Scotland .\t"
    b"In October 1560 , he secretly met with the English ambassador , Nicolas Throckmorton "
    b", in Paris , and asked him for a passport to return to Scotland through England .\t0\r\n"
)
PPDB2_LINE = (
    b"[JJ] ||| high ||| elevated ||| -logp(e1|e2)=2.39790 -logp(e2|e1)=1.38629 "
    b"PPDB2.0Score=3.5 ||| 0-0 ||| Equivalence\n"
)
SNLI_LINE = {
    "annotator_labels": ["neutral"],
    "captionID": "3416050480.jpg#4",
    "gold_label": "neutral",
    "pairID": "3416050480.jpg#4r1n",
    "sentence1": "A person on a horse jumps over a broken down airplane.",
    "sentence1_binary_parse": "( ( ( A person ) ( on ( a horse ) ) ) ( ( jumps ... ) . ) )",
    "sentence1_parse": "(ROOT (S (NP (NP (DT A) (NN person)) ...)))",
    "sentence2": "A person is training his horse for a competition.",
    "sentence2_binary_parse": "( ( A person ) ( ( is ( ( training ... ) ) ) . ) )",
    "sentence2_parse": "(ROOT (S (NP (DT A) (NN person)) ...))",
}


def _snli_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("snli_1.0/snli_1.0_dev.jsonl", json.dumps(SNLI_LINE) + "\n")
        zf.writestr("snli_1.0/snli_1.0_dev.txt", "gold_label\tsentence1\n")
        zf.writestr("__MACOSX/snli_1.0/._snli_1.0_dev.jsonl", b"\x00\x05\x16\x07")
    return buf.getvalue()


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _evil_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../escape.txt", "outside the data directory")
    return buf.getvalue()


FILES = {
    "/paws/dev.tsv": PAWS_TSV,
    "/snli/snli_1.0.zip": _snli_zip(),
    "/pawsx/x-final.tar.gz": _tar_gz(
        {
            "x-final/ja/translated_train.tsv": "id\tsentence1\tsentence2\tlabel\n1\t文。\t文だ。\t1\n".encode(),
            "x-final/en/test_2k.tsv": b"id\tsentence1\tsentence2\tlabel\n1\ta .\tb .\t0\n",
        }
    ),
    "/evil.zip": _evil_zip(),
    "/ppdb2/ppdb-2.0-s-all.gz": gzip.compress(PPDB2_LINE, mtime=0),
    "/drive/confirm": b"<!DOCTYPE html><html><body>Google Drive can't scan this file</body></html>",
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path
        if path.startswith("/cut"):  # announces the whole file, sends half, hangs up
            body = FILES[path.removeprefix("/cut")]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        if path not in FILES:
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        if path.startswith("/drive"):
            self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(FILES[path])))
        self.end_headers()
        self.wfile.write(FILES[path])

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def entry(source: str, file: str, url: str, content: bytes | None) -> SourceFile:
    digest = hashlib.sha256(content).hexdigest() if content is not None else "0" * 64
    return SourceFile(source, file, url, digest, len(content) if content else None, "CC0")


def use(monkeypatch, *entries: SourceFile) -> None:
    monkeypatch.setattr(fetch_mod, "load_registry", lambda *_: list(entries))


def fetch_fails(tmp_path: Path, sources: list[str], mirror: Path | None = None) -> str:
    """Fetch into raw/ over an earlier good copy: it must stay, nothing else appears."""
    raw = tmp_path / "raw"
    (raw / "old").mkdir(parents=True, exist_ok=True)
    (raw / "old" / "kept.txt").write_text("from the last good fetch")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    with pytest.raises(FetchError) as err:
        fetch_mod.fetch(sources, raw, mirror=mirror)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    assert "raw/old/kept.txt" in before
    message = str(err.value)
    assert "\n" not in message
    return message


def closed_port_url(path: str) -> str:
    """A URL on 127.0.0.1 where nothing listens: the connection is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def test_download_verifies_and_unpacks_real_layouts(server, tmp_path, monkeypatch):
    use(
        monkeypatch,
        entry("paws", "paws/dev.tsv", f"{server}/paws/dev.tsv", FILES["/paws/dev.tsv"]),
        entry("snli", "snli/snli_1.0.zip", f"{server}/snli/snli_1.0.zip", FILES["/snli/snli_1.0.zip"]),
        entry("pawsx", "pawsx/x-final.tar.gz", f"{server}/pawsx/x-final.tar.gz",
              FILES["/pawsx/x-final.tar.gz"]),
        entry("ppdb2", "ppdb2/ppdb-2.0-s-all.gz", f"{server}/ppdb2/ppdb-2.0-s-all.gz",
              FILES["/ppdb2/ppdb-2.0-s-all.gz"]),
    )  # fmt: skip
    metrics = fetch_mod.fetch(["paws", "snli", "pawsx", "ppdb2"], tmp_path / "raw", mirror=None)
    raw = tmp_path / "raw"
    assert (raw / "paws/dev.tsv").read_bytes() == PAWS_TSV
    line = json.loads((raw / "snli/snli_1.0/snli_1.0_dev.jsonl").read_text())
    assert line["gold_label"] == "neutral"
    assert (raw / "pawsx/x-final/ja/translated_train.tsv").read_text().endswith("1\n")
    assert not (raw / "snli/snli_1.0.zip").exists() and not (raw / "snli/__MACOSX").exists()
    assert metrics["origin"] == "download"
    assert metrics["sources"]["snli"]["unpacked"] == {"snli/snli_1.0.zip": 2}
    assert metrics["sources"]["pawsx"]["unpacked"] == {"pawsx/x-final.tar.gz": 2}
    assert (raw / "ppdb2/ppdb-2.0-s-all").read_bytes() == PPDB2_LINE  # one gzip'd file
    assert not (raw / "ppdb2/ppdb-2.0-s-all.gz").exists()


def test_a_web_page_in_place_of_the_file_keeps_nothing(server, tmp_path, monkeypatch):
    """Google Drive answers a large file's link with a confirmation page: refused."""
    page = FILES["/drive/confirm"]
    use(
        monkeypatch,
        entry("ehimerppdb", "ehimerppdb/EhiMerPPDB.txt", f"{server}/drive/confirm", page),
    )
    message = fetch_fails(tmp_path, ["ehimerppdb"])
    assert message.startswith(
        f"{server}/drive/confirm: the server sent a web page, not EhiMerPPDB.txt"
    )


def test_checksum_mismatch_keeps_nothing(server, tmp_path, monkeypatch):
    """The registered version differs in one byte (same size): only the checksum tells."""
    registered = PAWS_TSV.replace(b"Paris", b"Paros", 1)
    use(monkeypatch, entry("paws", "paws/dev.tsv", f"{server}/paws/dev.tsv", registered))
    message = fetch_fails(tmp_path, ["paws"])
    assert message.startswith(
        f"{server}/paws/dev.tsv: sha256 mismatch for paws/dev.tsv (source 'paws'; expected "
    )
    assert message.endswith("nothing was kept")


def test_a_file_that_fails_its_check_is_not_left_under_any_name(server, tmp_path):
    """fetch_file writes under a temporary name and renames only a verified file."""
    registered = PAWS_TSV.replace(b"Paris", b"Paros", 1)
    bad = entry("paws", "paws/dev.tsv", f"{server}/paws/dev.tsv", registered)
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch_mod.fetch_file(bad, tmp_path, mirror=None)
    assert list(tmp_path.rglob("*")) == [tmp_path / "paws"]  # the folder, no file in it


def test_cut_off_download_keeps_nothing(server, tmp_path, monkeypatch):
    body = FILES["/snli/snli_1.0.zip"]
    use(monkeypatch, entry("snli", "snli/snli_1.0.zip", f"{server}/cut/snli/snli_1.0.zip", body))
    message = fetch_fails(tmp_path, ["snli"])
    assert f"{server}/cut/snli/snli_1.0.zip: download cut off after" in message
    assert f"of {len(body)} bytes" in message


def test_404_keeps_nothing(server, tmp_path, monkeypatch):
    use(
        monkeypatch,
        entry("paws", "paws/dev.tsv", f"{server}/paws/dev.tsv", FILES["/paws/dev.tsv"]),
        entry("paws", "paws/gone.tsv", f"{server}/paws/gone.tsv", b"x"),
    )
    message = fetch_fails(tmp_path, ["paws"])
    assert message == f"{server}/paws/gone.tsv: HTTP 404 Not Found; nothing was kept"


def test_unsafe_archive_member_keeps_nothing(server, tmp_path, monkeypatch):
    use(monkeypatch, entry("evil", "evil/evil.zip", f"{server}/evil.zip", FILES["/evil.zip"]))
    message = fetch_fails(tmp_path, ["evil"])
    assert message.startswith("evil.zip: unsafe member path '../escape.txt'")


def test_mirror_first_then_download(server, tmp_path, monkeypatch):
    """A file the mirror holds is copied (its URL unused); one it lacks is downloaded."""
    mirror = tmp_path / "mirror"
    (mirror / "paws").mkdir(parents=True)
    (mirror / "paws" / "dev.tsv").write_bytes(PAWS_TSV)
    use(
        monkeypatch,
        entry("paws", "paws/dev.tsv", f"{server}/gone", PAWS_TSV),  # mirrored: url unused
        entry("snli", "snli/snli_1.0.zip", f"{server}/snli/snli_1.0.zip", FILES["/snli/snli_1.0.zip"]),
    )  # fmt: skip
    metrics = fetch_mod.fetch(["paws", "snli"], tmp_path / "raw", mirror)
    assert metrics["origin"] == "download+mirror"
    assert metrics["sources"]["paws"]["mirror"] == metrics["sources"]["snli"]["download"] == 1
    assert (tmp_path / "raw/snli/snli_1.0/snli_1.0_dev.jsonl").is_file()


def test_unreachable_without_a_mirror_says_how_to_set_one(tmp_path, monkeypatch):
    url = closed_port_url("/paws/dev.tsv")
    use(monkeypatch, entry("paws", "paws/dev.tsv", url, PAWS_TSV))
    message = fetch_fails(tmp_path, ["paws"])
    assert message.startswith(f"paws/dev.tsv (source 'paws'): {url}: unreachable (")
    assert message.endswith(
        "; no data mirror: set fetch.mirror (params.yaml) or PARACL_DATA_MIRROR to a "
        "directory holding the registry's files (docs/stages/fetch.md), or run where the URL "
        "is reachable"
    )


def test_unreachable_and_not_in_the_mirror_names_the_mirror(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    use(monkeypatch, entry("paws", "paws/dev.tsv", closed_port_url("/dev.tsv"), PAWS_TSV))
    message = fetch_fails(tmp_path, ["paws"], mirror)
    assert f"; not in the mirror {mirror}: set fetch.mirror (params.yaml) or " in message


def test_fetch_stage_on_a_fresh_clone_downloads(server, tmp_path):
    """The stage script as dvc runs it, with the default params' fetch.mirror naming a
    directory that is not there and no PARACL_DATA_MIRROR: every file comes from its
    registered URL (here a registry of the local server's files), verified."""
    rows = [
        ("paws", "paws/dev.tsv", f"{server}/paws/dev.tsv", FILES["/paws/dev.tsv"]),
        ("snli", "snli/snli_1.0.zip", f"{server}/snli/snli_1.0.zip", FILES["/snli/snli_1.0.zip"]),
    ]
    registry = tmp_path / "sources.tsv"
    registry.write_text(
        "\t".join(COLUMNS) + "\n" + "".join(
            f"{src}\t{file}\t{url}\t{hashlib.sha256(body).hexdigest()}\t{len(body)}\tCC0\ttest\n"
            for src, file, url, body in rows
        )
    )  # fmt: skip
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["fetch"]["sources"] = ["paws", "snli"]
    assert not (tmp_path / params["fetch"]["mirror"]).exists()  # ../shared/data: not here
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    script, raw, metrics = stage_argv("fetch", params)
    env = {k: v for k, v in os.environ.items() if k != "PARACL_DATA_MIRROR"}
    env |= {"PARACL_DATA_REGISTRY": str(registry), "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, str(REPO / script), raw, metrics],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "downloading 2 file(s), 0.0 MB, from their registered URLs (no data mirror)" in (
        proc.stderr
    )
    assert (tmp_path / raw / "paws/dev.tsv").read_bytes() == PAWS_TSV
    assert (tmp_path / raw / "snli/snli_1.0/snli_1.0_dev.jsonl").is_file()
    result = json.loads((tmp_path / metrics).read_text())
    assert result["origin"] == "download" and result["files"] == 2
