"""Run a per-sentence stage as a map over Parquet shards: resumable, bounded, any executor.

Why every per-sentence stage goes through this one function: the three promises of the
pipeline at scale are the same for all of them, so they are kept in one place.

- Same bytes on any engine: shard i of the output is the stage's `ShardJob` applied to
  shard i of the input, written in shard order; it must depend only on the shard's rows,
  its index and the seed (never on which worker ran it or what ran before it).
- Resumable: each finished shard is written atomically into
  `<artifact>.partial-<key>/` (`paracl.core.distributed.shards.ShardCache`); a rerun with
  the same key skips the shards whose files match their manifest lines. `key`
  fingerprints the params and input checksums, so other params never reuse stale shards.
- Bounded memory: input shards are read lazily (`stream_shards`) and only
  `AHEAD × workers` of them are in flight; the output is never held whole.

The artifact is a directory of `part-NNNNN.parquet` files plus `_manifest.json` (each
shard's rows and sha256), which DVC tracks with the directory; `paracl.core.io.read_parquet`
and `iter_batches` read it like one file.

Grouped shards (`group_shards`): rank_fluency keeps the best candidate of each sentence
and tag removes a sentence's duplicate candidates, so all candidates of one sentence
must be in the same shard; upstream stages write them as consecutive rows, so grouping
while streaming is enough. `CountedShards` counts what a driver handed out, `prepend`
puts back a peeked first shard.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from paracl.core.distributed.executor import Done, Executor, ShardJob, make_executor
from paracl.core.distributed.shards import ShardCache
from paracl.core.io import iter_batches, to_table

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Engine:
    """Where a stage's shards run (the top-level params executor, ray_address, workers,
    model_workers, gpus_per_model_worker)."""

    executor: str = "local"
    ray_address: str | None = None
    workers: int = 1  # CPU stages: processes (local) or Ray actors
    model_workers: int = 1  # model stages on Ray: actors, each holding the model
    gpus_per_model_worker: float = 1.0  # per actor, where the cluster has GPUs

    @classmethod
    def from_params(cls, params: dict) -> Engine:
        return cls(
            executor=params["executor"],
            ray_address=params["ray_address"],
            workers=params["workers"],
            model_workers=params["model_workers"],
            gpus_per_model_worker=params["gpus_per_model_worker"],
        )


def stream_shards(frames: Iterable[pd.DataFrame], rows: int) -> Iterator[pd.DataFrame]:
    """Re-cut a stream of frames into shards of exactly `rows` rows (the last may be
    shorter), so shard boundaries depend only on the data, not on read batch sizes."""
    buffer: list[pd.DataFrame] = []
    held = 0
    for frame in frames:
        buffer.append(frame)
        held += len(frame)
        while held >= rows:
            joined = pd.concat(buffer, ignore_index=True)
            yield joined.iloc[:rows].reset_index(drop=True)
            rest = joined.iloc[rows:].reset_index(drop=True)
            buffer, held = [rest], len(rest)
    if held:
        yield pd.concat(buffer, ignore_index=True)


def parquet_shards(
    path: str | Path, rows: int, schema: pa.Schema | None = None, columns: list[str] | None = None
) -> Iterator[pd.DataFrame]:
    """The Parquet file or shard directory at `path` as shards of `rows` rows, streamed."""
    for shard in stream_shards(iter_batches(path, batch_size=max(rows, 1024), schema=schema), rows):
        yield shard if columns is None else shard[columns]


@dataclass(frozen=True)
class Shard:
    """One task of `map_shards`: the input rows of shard `index`."""

    index: int
    rows: pd.DataFrame


def _part(index: int) -> str:
    return f"part-{index:05d}"


def _workers(engine: Engine, model: bool) -> int:
    """Model stages run on `model_workers` Ray actors, locally in this process (one
    model, all cores); CPU stages on `workers` processes or Ray actors."""
    if model:
        return engine.model_workers if engine.executor == "ray" else 1
    return engine.workers


def map_shards(
    job: ShardJob,
    shards: Iterable[pd.DataFrame],
    *,
    out: str | Path,
    schema: pa.Schema,
    key: str,
    engine: Engine,
    metadata: dict | None = None,
    model: bool = False,
    desc: str = "shards",
) -> dict:
    """Write `job.process(state, Shard(i, rows))` for every input shard i as the shard
    directory `out`; return its manifest (rows per shard, checksums). The artifact is
    published in one rename after the last shard.

    `job` is a module-level class (it travels to worker processes and Ray actors by
    pickle); its `setup()` runs once per worker (loading the model there). `model=True`
    marks a model stage (see `_workers`; `engine.gpus_per_model_worker` GPUs an actor).

    Inputs are checked before anything is written: the first input shard is read (the
    Parquet readers check every shard's footer and schema on the first read) and the
    workers are set up (the model loaded) before the first shard is saved, so a damaged
    input or model leaves nothing behind. An empty input starts no worker: it gives a
    valid, empty artifact with the schema.
    """
    stream = iter(shards)
    first = list(itertools.islice(stream, 1))
    cache = ShardCache(out, key)
    count = 0
    if first:
        with make_executor(
            job,
            engine.executor,
            _workers(engine, model),
            engine.ray_address,
            model=model,
            num_gpus=engine.gpus_per_model_worker,
        ) as ex:
            count = _run(ex, cache, itertools.chain(first, stream), schema, metadata, desc)
    if count == 0:
        if not cache.has(_part(0)):
            cache.put(_part(0), to_table(schema.empty_table().to_pandas(), schema, metadata))
        count = 1
    if cache.loaded:
        log.info("resumed: %d of %d shards of %s were already done", cache.loaded, count, out)
    return cache.publish([_part(i) for i in range(count)])


def _run(
    ex: Executor,
    cache: ShardCache,
    frames: Iterable[pd.DataFrame],
    schema: pa.Schema,
    metadata: dict | None,
    desc: str,
) -> int:
    """Hand out every shard the cache does not hold, save each result as it comes in
    order; return the number of shards."""
    tasks = (
        Done(None) if cache.has(_part(i)) else Shard(i, frame) for i, frame in enumerate(frames)
    )
    count = 0
    for index, result in enumerate(tqdm(ex.map(tasks), desc=desc, unit="shard")):
        if result is not None:
            cache.put(_part(index), to_table(result, schema, metadata))
        count = index + 1
    return count


def group_shards(
    frames: Iterable[pd.DataFrame],
    rows: int,
    key: str = "id",
    max_groups: int | None = None,
) -> Iterator[pd.DataFrame]:
    """Re-cut a stream of frames into shards of whole groups (consecutive rows with the
    same `key`): a shard is closed at the first group boundary at or after `rows` rows,
    so boundaries depend only on the data. `max_groups` stops after that many groups
    (the first ones, in stream order); `CountedShards(..., key=key)` counts what was
    handed out.
    """
    buffer: list[pd.DataFrame] = []
    held = groups = 0
    last = None

    def emit() -> pd.DataFrame:
        nonlocal held
        shard = pd.concat(buffer, ignore_index=True)
        buffer.clear()
        held = 0
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
        buffer.append(frame.iloc[pos:cut])
        held += cut - pos
        last = ids[cut - 1] if cut else last
        if cut < len(ids):
            break
    if held:
        yield emit()


class CountedShards(Iterator[pd.DataFrame]):
    """Shards passed on unchanged, counting what the driver handed out: `rows`, `shards`
    and, given a `key` column, `groups` (runs of equal keys, as `group_shards` cuts them).
    `sentences = CountedShards(parquet_shards(...))`; after `map_shards(job, sentences, …)`
    has drained it, `sentences.rows` is complete (one way to count, for every stage)."""

    def __init__(self, shards: Iterable[pd.DataFrame], key: str | None = None):
        self._shards = iter(shards)
        self._key = key
        self.rows = self.shards = self.groups = 0

    def __next__(self) -> pd.DataFrame:
        shard = next(self._shards)
        self.rows += len(shard)
        self.shards += 1
        if self._key is not None and len(shard):
            keys = shard[self._key].to_numpy()
            self.groups += 1 + int((keys[1:] != keys[:-1]).sum())
        return shard


def prepend(first: T, rest: Iterable[T]) -> Iterator[T]:
    """`first`, then `rest`: puts back the item taken to see whether a stream is empty."""
    yield first
    yield from rest
