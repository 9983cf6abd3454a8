"""Fetch raw datasets into data/raw/, from a local mirror or their canonical URLs.

The registry (`sources.tsv` beside this file) lists every file with its canonical URL,
sha256 and licence. With a mirror directory (the `PARACL_DATA_MIRROR` environment
variable, else `fetch.mirror` in params.yaml) files are copied from it; otherwise they
are downloaded. Either way the checksum is verified before the file is kept, and the
whole data/raw/ directory appears only when every file arrived intact.
"""

from __future__ import annotations

import csv
import logging
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from paracl.errors import UserError
from paracl.io import atomic_dir, sha256_file

log = logging.getLogger(__name__)

REGISTRY = Path(__file__).with_name("sources.tsv")


class FetchError(UserError, RuntimeError):
    """A file is missing, unreachable or fails its checksum."""


@dataclass(frozen=True)
class SourceFile:
    source: str
    file: str
    url: str
    sha256: str
    bytes: int
    license: str


def load_registry(path: Path = REGISTRY) -> list[SourceFile]:
    with open(path, encoding="utf-8") as f:
        rows = csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t")
        return [
            SourceFile(r["source"], r["file"], r["url"], r["sha256"], int(r["bytes"]), r["license"])
            for r in rows
        ]


def select(registry: list[SourceFile], sources: list[str]) -> list[SourceFile]:
    """The registry rows of the named sources; an unknown name is an error."""
    known = sorted({f.source for f in registry})
    unknown = [s for s in sources if s not in known]
    if unknown:
        raise FetchError(
            f"fetch.sources: unknown source {unknown[0]!r} (known: {', '.join(known)})"
        )
    return [f for f in registry if f.source in sources]


def resolve_mirror(param: str | None) -> Path | None:
    """The mirror directory: $PARACL_DATA_MIRROR, else the param; None to download."""
    value = os.environ.get("PARACL_DATA_MIRROR") or param
    if not value:
        return None
    mirror = Path(value).expanduser()
    if not mirror.is_dir():
        raise FetchError(
            f"data mirror {mirror} is not a directory (PARACL_DATA_MIRROR / fetch.mirror)"
        )
    return mirror


def _download(url: str, dest: Path, size: int) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "paracl-fetch"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response, open(dest, "wb") as out:
            with tqdm(total=size, unit="B", unit_scale=True, desc=dest.name, leave=False) as bar:
                while block := response.read(1 << 20):
                    out.write(block)
                    bar.update(len(block))
    except OSError as err:
        raise FetchError(f"could not download {url}: {err}") from None


def fetch_file(entry: SourceFile, dest_root: Path, mirror: Path | None) -> None:
    """Copy or download one file under dest_root and verify its sha256."""
    dest = dest_root / entry.file
    dest.parent.mkdir(parents=True, exist_ok=True)
    if mirror is not None:
        origin = mirror / entry.file
        if not origin.is_file():
            raise FetchError(f"{origin}: missing from the mirror (registry file {entry.file!r})")
        shutil.copyfile(origin, dest)
    else:
        _download(entry.url, dest, entry.bytes)
    actual = sha256_file(dest)
    if actual != entry.sha256:
        where = mirror / entry.file if mirror is not None else entry.url
        raise FetchError(
            f"{where}: sha256 mismatch (expected {entry.sha256}, got {actual}); "
            "the file differs from the registered version, nothing was kept"
        )


def fetch(sources: list[str], out_dir: str | Path, mirror: Path | None) -> dict:
    """Fetch every file of `sources` into out_dir, atomically; return metrics."""
    entries = select(load_registry(), sources)
    with atomic_dir(out_dir) as tmp:
        for entry in tqdm(entries, desc="fetch", unit="file"):
            fetch_file(entry, tmp, mirror)
    per_source: dict[str, dict] = {}
    for e in entries:
        s = per_source.setdefault(e.source, {"files": 0, "bytes": 0, "license": e.license})
        s["files"] += 1
        s["bytes"] += e.bytes
    return {
        "origin": "mirror" if mirror is not None else "download",
        "files": len(entries),
        "bytes": sum(e.bytes for e in entries),
        "sources": per_source,
    }
