"""Shard helpers for stages whose rows come in groups (a sentence's candidates).

Why not plain fixed-size shards (`paracl.distributed.sharded.parquet_shards`): rank_fluency
keeps the best candidate of each sentence and tag removes a sentence's duplicate
candidates, so all candidates of one sentence must be in the same shard. Upstream stages
write a sentence's candidates as consecutive rows, so grouping while streaming is enough:
the driver holds one shard (plus one read batch) at a time, never the artifact.

Also: the checksum of an input that may be a file or a shard directory (for resume keys),
and a column-only streaming reader that tells which shard each batch came from (for
driver-side reductions that must not depend on read batch sizes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from paracl.io import ArtifactError, sha256_file


def input_checksum(path: str | Path) -> str:
    """sha256 of a Parquet file, or of a shard directory's `_manifest.json` (which lists
    every shard's sha256), so a resume key changes whenever the input does."""
    path = Path(path)
    if path.is_dir():
        manifest = path / "_manifest.json"
        if not manifest.exists():
            raise ArtifactError(f"{path}: shard directory without _manifest.json")
        return sha256_file(manifest)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    return sha256_file(path)


def dir_checksum(path: str | Path) -> str:
    """sha256 over every file of a directory (a model), in path order."""
    path = Path(path)
    return ";".join(
        f"{p.relative_to(path)}:{sha256_file(p)}" for p in sorted(path.rglob("*")) if p.is_file()
    )


def group_shards(
    frames: Iterable[pd.DataFrame],
    rows: int,
    key: str = "id",
    max_groups: int | None = None,
    counts: dict | None = None,
) -> Iterator[pd.DataFrame]:
    """Re-cut a stream of frames into shards of whole groups (consecutive rows with the
    same `key`): a shard is closed at the first group boundary at or after `rows` rows,
    so boundaries depend only on the data. `max_groups` stops after that many groups
    (the first ones, in stream order). `counts` (if given) gets `groups` and `rows`:
    what was handed out, complete once the iterator is exhausted.
    """
    if counts is not None:
        counts.update(groups=0, rows=0)
    buffer: list[pd.DataFrame] = []
    held = groups = 0
    last = None

    def emit() -> pd.DataFrame:
        nonlocal held
        shard = pd.concat(buffer, ignore_index=True)
        buffer.clear()
        held = 0
        if counts is not None:
            counts["rows"] += len(shard)
        return shard

    for frame in frames:
        if frame.empty:
            continue
        ids = frame[key].to_numpy()
        starts = [0] + [i for i in range(1, len(ids)) if ids[i] != ids[i - 1]]
        if last is not None and ids[0] == last:
            starts = starts[1:]  # the first group continues the previous frame's last one
        cut = len(ids)
        if max_groups is not None and groups + len(starts) > max_groups:
            cut = starts[max_groups - groups]
            starts = starts[: max_groups - groups]
        # close the shard at each group start once it holds `rows` rows
        pos = 0
        for start in starts:
            if held + (start - pos) >= rows and held + start - pos > 0:
                buffer.append(frame.iloc[pos:start])
                held += start - pos
                pos = start
                yield emit()
            groups += 1
            if counts is not None:
                counts["groups"] = groups
        buffer.append(frame.iloc[pos:cut])
        held += cut - pos
        last = ids[cut - 1] if cut else last
        if cut < len(ids):
            break
    if held:
        yield emit()


def part_files(path: str | Path) -> list[Path]:
    """A Parquet file, or a shard directory's parts in shard order."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    return sorted(path.glob("part-*.parquet")) if path.is_dir() else [path]


def column_parts(
    path: str | Path, columns: list[str], batch_size: int = 65536
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(shard index, batch) with only `columns`, streamed: a driver-side pass over an
    artifact that reads only what it needs."""
    for index, part in enumerate(part_files(path)):
        for batch in pq.ParquetFile(part).iter_batches(batch_size=batch_size, columns=columns):
            yield index, batch.to_pandas()
