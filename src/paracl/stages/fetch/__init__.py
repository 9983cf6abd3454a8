"""Fetch raw datasets into data/raw/, from a local mirror or their canonical URLs.

The registry (`sources.tsv` beside this file, read by registry.py) lists every file with
its canonical URL, checksum, size, licence and where the checksum came from. A file is
taken from the mirror directory when the mirror holds it, else downloaded from its URL, so
a fresh clone runs where it is: the mirror is `$PARACL_DATA_MIRROR` (which must exist), else
`fetch.mirror` when that directory exists (the default `../shared/data` does on the
development machines). Every file is checked against its checksum before it is kept; a file
with no published checksum is used only when its source is listed in
`fetch.allow_unverified`. Archives are unpacked after the check. Each file is written under
a temporary name and renamed once verified, and the whole data/raw/ directory appears only
when every file arrived intact, so a failed fetch leaves nothing half-written. Everything
that can be checked before any work (an unknown source, an unverified file) is.
A mirror of other bytes (a subsample) brings its own registry: `$PARACL_DATA_REGISTRY`.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from tqdm import tqdm

from paracl.core.io import atomic_dir, atomic_path, write_json
from paracl.core.params import RunWide, Section
from paracl.core.stage import args
from paracl.stages.fetch.sources.archives import unpack
from paracl.stages.fetch.sources.download import Unreachable, download
from paracl.stages.fetch.sources.registry import (
    REGISTRY,
    FetchError,
    SourceFile,
    load_registry,
    select,
    verify,
)

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class Fetch(Section):
    sources: list[str]
    mirror: str | None
    # sources whose registry files have no published checksum, used anyway (paracl.stages.fetch)
    allow_unverified: list[str] | None


class Params(RunWide):
    """What stage fetch reads of params.yaml: the run-wide keys and these."""

    fetch: Fetch


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

MIRROR_ENV = "PARACL_DATA_MIRROR"
SET_A_MIRROR = (
    f"set fetch.mirror (params.yaml) or {MIRROR_ENV} to a directory holding the registry's "
    "files (docs/stages/fetch.md), or run where the URL is reachable"
)


def resolve_mirror(param: str | None) -> Path | None:
    """The mirror directory, or None: every file is downloaded from its URL.

    $PARACL_DATA_MIRROR is a deliberate choice, so a missing directory is an error.
    `fetch.mirror` says where a mirror sits when there is one: the default names
    ../shared/data, which a fresh clone lacks, and that must not stop the pipeline."""
    if value := os.environ.get(MIRROR_ENV):
        mirror = Path(value).expanduser()
        if not mirror.is_dir():
            raise FetchError(
                f"data mirror {mirror} is not a directory ({MIRROR_ENV}); unset it to use "
                "fetch.mirror or the registered URLs"
            )
        return mirror
    if not param:
        return None
    mirror = Path(param).expanduser()
    if mirror.is_dir():
        return mirror
    log.info("fetch.mirror %s is not a directory: files come from their registered URLs", mirror)
    return None


def _mirrored(entry: SourceFile, mirror: Path | None) -> Path | None:
    """The mirror's copy of the file, where the mirror holds one."""
    origin = mirror / entry.file if mirror is not None else None
    return origin if origin is not None and origin.is_file() else None


def _plan(entries: list[SourceFile], mirror: Path | None, allow_unverified: list[str]) -> dict:
    """file -> 'mirror' or 'download', checked before any work."""
    for e in entries:
        if not e.verified and e.source not in allow_unverified:
            raise FetchError(
                f"{e.file} (source {e.source!r}): no published checksum to verify it against "
                f"(see sources.tsv); add {e.source!r} to fetch.allow_unverified to use it anyway"
            )
    plan = {e.file: "mirror" if _mirrored(e, mirror) else "download" for e in entries}
    missing = [e for e in entries if plan[e.file] == "download"]
    if missing:
        unknown = sum(e.bytes is None for e in missing)
        mb = sum(e.bytes or 0 for e in missing) / 1e6
        log.info(
            "downloading %d file(s), %.1f MB%s, from their registered URLs (%s)",
            len(missing),
            mb,
            f" + {unknown} of unknown size" if unknown else "",
            f"not in the mirror {mirror}" if mirror else "no data mirror",
        )
    return plan


def _download(entry: SourceFile, dest: Path, name: str, mirror: Path | None) -> None:
    """Download one registered file; an unreachable host says how to use a mirror."""
    try:
        download(entry.url, dest, entry.bytes, name)
    except Unreachable as err:
        place = f"not in the mirror {mirror}" if mirror else "no data mirror"
        raise FetchError(
            f"{entry.file} (source {entry.source!r}): {err}; {place}: {SET_A_MIRROR}"
        ) from None


def fetch_file(entry: SourceFile, dest_root: Path, mirror: Path | None) -> dict:
    """Copy or download one file under dest_root, verify it under a temporary name, rename
    it, unpack an archive; return what the metrics record of it."""
    dest = dest_root / entry.file
    origin = _mirrored(entry, mirror)
    with atomic_path(dest) as part:
        if origin is not None:
            shutil.copyfile(origin, part)
            where = str(origin)
        else:
            _download(entry, part, dest.name, mirror)
            where = entry.url
        sha256 = verify(entry, part, where)
    record = {"bytes": dest.stat().st_size, "sha256": sha256}
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
            records[entry.file] = fetch_file(entry, tmp, mirror)
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


def main(params: dict) -> None:
    paths = args("raw", "metrics")
    cfg = params["fetch"]
    mirror = resolve_mirror(cfg["mirror"])
    metrics = fetch(cfg["sources"], paths.raw, mirror, cfg.get("allow_unverified") or [])
    write_json(metrics, paths.metrics)
