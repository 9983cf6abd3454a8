"""Run a per-sentence stage as a map over Parquet shards: resumable, bounded, any executor.

Why every per-sentence stage goes through this one function: the three promises of the
pipeline at scale are the same for all of them, so they are kept in one place.

- Same bytes on any engine: shard i of the output is `fn(shard i of the input)`, written
  in shard order; `fn` must depend only on the shard's rows, its index and the seed
  (never on which worker ran it or what ran before it).
- Resumable: each finished shard is written atomically into
  `<artifact>.partial-<key>/` (`paracl.core.io.ShardedWriter`); a rerun with the same key
  skips it. `key` fingerprints the params and input checksums, so other params never
  reuse stale shards.
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

import functools
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from paracl.core.distributed.executor import Done, make_executor
from paracl.core.io import ShardedWriter, iter_batches

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Engine:
    """Where a stage's shards run (the top-level params executor, ray_address, workers,
    model_workers, gpus_per_model_worker)."""

    executor: str = "local"
    ray_address: str | None = None
    workers: int = 1  # CPU stages: processes (local) or Ray tasks in flight
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


def _call(fn: Callable, task: tuple[int, pd.DataFrame]) -> pd.DataFrame:
    index, frame = task
    return fn(frame, index)


def map_shards(
    fn: Callable[[pd.DataFrame, int], pd.DataFrame],
    shards: Iterable[pd.DataFrame],
    *,
    out: str | Path,
    schema: pa.Schema,
    key: str,
    engine: Engine,
    metadata: dict | None = None,
    model: bool = False,
    init: Callable | None = None,
    init_args: tuple = (),
    desc: str = "shards",
) -> dict:
    """Write `fn(shard, index)` for every input shard as the shard directory `out`.

    `fn` and `init` must be module-level functions (they travel to worker processes and
    Ray workers by pickle); `init(*init_args)` runs once per worker before its shards
    (load a model into a module-level cache there). `model=True` marks a model stage:
    on Ray it runs on `engine.model_workers` actors with `engine.gpus_per_model_worker`
    GPUs each; locally it runs in this process (one model, all cores). CPU stages run
    on `engine.workers` processes or Ray tasks. Returns the manifest (rows per shard,
    checksums); the artifact is published in one rename after the last shard.

    Inputs are checked before anything is written: the first input shard is read (the
    Parquet readers check every shard's footer and schema on the first read) and the
    workers are initialised (the model loaded) before the writer makes its partial
    directory, so a damaged input or model leaves nothing behind.
    """
    stream = iter(shards)
    first = list(itertools.islice(stream, 1))
    writer = ShardedWriter(out, schema, key, metadata=metadata)
    resumed = 0

    def tasks() -> Iterator[Any]:
        nonlocal resumed
        for index, frame in enumerate(itertools.chain(first, stream)):
            if writer.done(index):
                resumed += 1
                yield Done(None)
            else:
                yield (index, frame)

    if model:
        workers = engine.model_workers if engine.executor == "ray" else 1
    else:
        workers = engine.workers
    count = 0
    with make_executor(
        engine.executor,
        workers,
        init,
        init_args,
        engine.ray_address,
        actors=model,
        num_gpus=engine.gpus_per_model_worker if model else 0.0,
    ) as ex:
        for index, result in enumerate(
            tqdm(ex.map(functools.partial(_call, fn), tasks()), desc=desc, unit="shard")
        ):
            if result is not None:
                writer.write(index, result)
            count = index + 1
    if count == 0:  # no input rows: a valid, empty artifact with the right schema
        writer.write(0, schema.empty_table().to_pandas())
        count = 1
    if resumed:
        log.info("resumed: %d of %d shards of %s were already done", resumed, count, out)
    return writer.finalize(count)


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
    `sentences = CountedShards(parquet_shards(...))`; after `map_shards(fn, sentences, …)`
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
