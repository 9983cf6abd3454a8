"""Fetch raw datasets into data/raw/, from a local mirror or their canonical URLs.

The registry (`sources.tsv` beside this file, read by registry.py) lists every file with
its canonical URL, checksum, size, licence and where the checksum came from. A file is
taken from the mirror directory (`$PARACL_DATA_MIRROR`, else `fetch.mirror`) when the
mirror holds it, else downloaded from its URL, which needs the user's yes:
`PARACL_ALLOW_DOWNLOAD=1` (or `fetch.mirror: null`). Every file is checked against its
checksum before it is kept; a file with no published checksum is used only when its
source is listed in `fetch.allow_unverified`. Archives are unpacked after the check.
The whole data/raw/ directory appears only when every file arrived intact, so a failed
fetch leaves nothing half-written. Everything that can be checked before any work (an
unknown source, an unverified file, a file neither mirrored nor downloadable) is.
A mirror of other bytes (a subsample) brings its own registry: `$PARACL_DATA_REGISTRY`.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from tqdm import tqdm

from paracl.fetch.archives import unpack
from paracl.fetch.download import ALLOW_ENV, download, downloads_allowed
from paracl.fetch.registry import (
    REGISTRY,
    FetchError,
    SourceFile,
    load_registry,
    select,
    verify,
)
from paracl.io import atomic_dir

__all__ = [
    "REGISTRY",
    "FetchError",
    "SourceFile",
    "fetch",
    "fetch_file",
    "load_registry",
    "resolve_mirror",
    "select",
]

log = logging.getLogger(__name__)


def resolve_mirror(param: str | None) -> Path | None:
    """The mirror directory: $PARACL_DATA_MIRROR, else the param; None to download.

    A configured mirror that does not exist is an error, unless downloads are allowed:
    then every file comes from its URL (the default params name ../shared/data, which a
    fresh machine lacks)."""
    value = os.environ.get("PARACL_DATA_MIRROR") or param
    if not value:
        return None
    mirror = Path(value).expanduser()
    if mirror.is_dir():
        return mirror
    if downloads_allowed():
        log.warning("data mirror %s is not a directory: downloading every file", mirror)
        return None
    raise FetchError(
        f"data mirror {mirror} is not a directory (PARACL_DATA_MIRROR / fetch.mirror); "
        f"set {ALLOW_ENV}=1 to download the data from the registered URLs instead"
    )


def _plan(entries: list[SourceFile], mirror: Path | None, allow_unverified: list[str]) -> dict:
    """file -> 'mirror' or 'download', checked before any work."""
    for e in entries:
        if not e.verified and e.source not in allow_unverified:
            raise FetchError(
                f"{e.file} (source {e.source!r}): no published checksum to verify it against "
                f"(see sources.tsv); add {e.source!r} to fetch.allow_unverified to use it anyway"
            )
    plan = {
        e.file: "mirror" if mirror and (mirror / e.file).is_file() else "download" for e in entries
    }
    missing = [e for e in entries if plan[e.file] == "download"]
    if missing and mirror is not None and not downloads_allowed():
        mb = sum(e.bytes or 0 for e in missing) / 1e6
        raise FetchError(
            f"{mirror / missing[0].file}: missing from the mirror ({len(missing)} file(s) of "
            f"fetch.sources are, {mb:.0f} MB); set {ALLOW_ENV}=1 to download them from their "
            f"registered URLs (first: {missing[0].url})"
        )
    return plan


def fetch_file(entry: SourceFile, dest_root: Path, mirror: Path | None) -> dict:
    """Copy or download one file under dest_root, verify it, unpack an archive; return
    what the metrics record of it."""
    dest = dest_root / entry.file
    dest.parent.mkdir(parents=True, exist_ok=True)
    origin = mirror / entry.file if mirror is not None else None
    if origin is not None and origin.is_file():
        shutil.copyfile(origin, dest)
        where = str(origin)
    else:
        download(entry.url, dest, entry.bytes)
        where = entry.url
    record = {"bytes": dest.stat().st_size, "sha256": verify(entry, dest, where)}
    if entry.archive:
        record["unpacked_files"] = unpack(dest)
    return record


REGISTRY_ENV = "PARACL_DATA_REGISTRY"


def resolve_registry() -> Path:
    """The registry: $PARACL_DATA_REGISTRY, else the packaged sources.tsv.

    A private mirror whose files are not the published ones (a subsample, a re-encoded
    copy; paracl.testing.data_mirror builds one) carries its own registry with the same
    columns and its own checksums; every file is still checked against the registry in
    use, and the metrics name it."""
    value = os.environ.get(REGISTRY_ENV)
    if not value:
        return REGISTRY
    path = Path(value).expanduser()
    if not path.is_file():
        raise FetchError(f"{path}: registry not found ({REGISTRY_ENV})")
    return path


def fetch(
    sources: list[str],
    out_dir: str | Path,
    mirror: Path | None,
    allow_unverified: list[str] | None = None,
) -> dict:
    """Fetch every file of `sources` into out_dir, atomically; return metrics."""
    registry = resolve_registry()
    entries = select(load_registry(registry), sources)
    plan = _plan(entries, mirror, allow_unverified or [])
    records = {}
    with atomic_dir(out_dir) as tmp:
        for entry in tqdm(entries, desc="fetch", unit="file"):
            source = mirror if plan[entry.file] == "mirror" else None
            records[entry.file] = fetch_file(entry, tmp, source)
    metrics = _metrics(entries, plan, records)
    if registry != REGISTRY:  # a run on a private registry says so
        metrics["registry"] = str(registry)
    return metrics


def _metrics(entries: list[SourceFile], plan: dict, records: dict) -> dict:
    per_source: dict[str, dict] = {}
    for e in entries:
        s = per_source.setdefault(
            e.source, {"files": 0, "bytes": 0, "license": e.license, "mirror": 0, "download": 0}
        )
        s["files"] += 1
        s["bytes"] += records[e.file]["bytes"]
        s[plan[e.file]] += 1
        if not e.verified:  # pinned from now on: the run records what it used
            s.setdefault("unverified", {})[e.file] = records[e.file]["sha256"]
        if "unpacked_files" in records[e.file]:
            s.setdefault("unpacked", {})[e.file] = records[e.file]["unpacked_files"]
    return {
        "origin": "+".join(sorted(set(plan.values()))) or "none",
        "files": len(entries),
        "bytes": sum(r["bytes"] for r in records.values()),
        "sources": per_source,
    }
