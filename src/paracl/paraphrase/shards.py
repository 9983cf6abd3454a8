"""Shard helpers for stages whose rows come in groups (a sentence's candidates).

Why not plain fixed-size shards (`paracl.distributed.sharded.parquet_shards`): rank_fluency
keeps the best candidate of each sentence and tag removes a sentence's duplicate
candidates, so all candidates of one sentence must be in the same shard. Upstream stages
write a sentence's candidates as consecutive rows, so grouping while streaming is enough:
the driver holds one shard (plus one read batch) at a time, never the artifact.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pandas as pd


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
