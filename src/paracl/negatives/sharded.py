"""The corrupt stage's per-shard work, for paracl.distributed.sharded.map_shards.

`init_worker` runs once per worker (a Ray actor, or the driver process locally): it
loads the spaCy / GiNZA noun-chunk pipeline and the T5 filler. `corrupt_shard` turns one
shard of anchors into negative rows; the shard's counts (skipped, dropped, …) travel
with the rows as `frame.attrs["paracl_stats"]`, which pyarrow stores in the shard file's
pandas metadata, so a resumed run still has the counts of the shards it did not redo
(`shard_stats` reads them back; `pipeline.merge_stats` sums them).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from paracl.negatives.pipeline import CorruptConfig, corrupt

STATS_KEY = "paracl_stats"
_STATE: dict = {}  # per worker process: nlp, filler, config
_PIPELINES: dict = {}  # spaCy pipelines by lang (packaged, never change: kept)


def init_worker(
    model: str, lang: str, device: str, threads: int | None, cfg: CorruptConfig
) -> None:
    """Load the chunker and T5 (from `model`, a directory the worker can read)."""
    import torch

    from paracl.device import select_device
    from paracl.negatives.chunks import load_pipeline
    from paracl.negatives.generate import T5Filler

    if threads:
        torch.set_num_threads(threads)
    if lang not in _PIPELINES:
        _PIPELINES[lang] = load_pipeline(lang)
    _STATE.clear()
    _STATE.update(nlp=_PIPELINES[lang], filler=T5Filler(model, select_device(device)), cfg=cfg)


def corrupt_shard(frame: pd.DataFrame, index: int) -> pd.DataFrame:
    """map_shards fn: hard-negative rows of one shard of (id, text) anchors."""
    rows, stats = corrupt(frame, _STATE["nlp"], _STATE["filler"], _STATE["cfg"])
    rows.attrs[STATS_KEY] = stats
    return rows


def shard_stats(out: str | Path) -> list[dict]:
    """The per-shard counts stored in a finished shard directory (empty shards: none)."""
    stats = []
    for part in sorted(Path(out).glob("part-*.parquet")):
        meta = pq.read_schema(part).pandas_metadata or {}
        found = (meta.get("attributes") or {}).get(STATS_KEY)
        if found is not None:
            stats.append(found)
    return stats
