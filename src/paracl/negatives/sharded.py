"""The corrupt stage's per-shard work, for paracl.distributed.sharded.map_shards.

`init_worker` runs once per worker (a Ray actor, or the driver process locally): it
loads the spaCy / GiNZA noun-chunk pipeline and the T5 filler. `corrupt_shard` turns one
shard of anchors into negative rows; the shard's counts (skipped, dropped, …) travel
with the rows as `frame.attrs["paracl_stats"]`, which pyarrow stores in the shard file's
pandas metadata, so a resumed run still has the counts of the shards it did not redo
(`shard_stats` reads them back; `pipeline.merge_stats` sums them).

`corrupt_corpus` is the corrupt stage's work. The seeded anchor sample is drawn on the
driver from the `lang` column alone and (id, text) is streamed: the driver holds
max_sentences sample positions and the shards in flight, never the corpus. The output
bytes depend on shard_size (shard boundaries), not on the engine or the worker count.
The workers read the model from its directory (on a cluster: a path every node can
read, e.g. a shared filesystem or Ray's runtime_env working_dir).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from paracl import schemas
from paracl.device import seed_everything
from paracl.distributed.sharded import CountedShards, Engine, map_shards, stream_shards
from paracl.io import fingerprint, input_checksum, iter_batches, read_json
from paracl.models import check_model_dir
from paracl.negatives.chunks import PIPELINES
from paracl.negatives.pipeline import CorruptConfig, corrupt, merge_stats
from paracl.sampling import iter_sample

log = logging.getLogger(__name__)

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


def model_info(model: str) -> dict:
    """What models/t5_adapted is (its paracl_t5.json, written by adapt_t5); a T5 folder
    from elsewhere is described by its path."""
    info_path = check_model_dir(model) / "paracl_t5.json"
    return read_json(info_path) if info_path.exists() else {"model": model}


def corrupt_corpus(corpus: str, model: str, out: str, params: dict) -> dict:
    """Write hard negatives for a seeded sample of `corpus` (`corrupt.max_sentences`
    anchors of `lang`) to the shard directory `out`, T5 read from `model`; return the
    metrics (summed shard counts, what the model is, a few examples)."""
    cfg, lang, seed = params["corrupt"], params["lang"], params["seed"]
    seed_everything(seed)
    config = CorruptConfig.from_params(cfg)
    info = model_info(model)
    key = fingerprint(cfg, seed, lang, input_checksum(corpus), input_checksum(model))
    anchors = CountedShards(
        stream_shards(iter_sample(corpus, cfg["max_sentences"], seed, lang), cfg["shard_size"])
    )
    meta = {"model": info, "chunker": PIPELINES[lang], "lang": lang, "seed": seed, "params": cfg}
    manifest = map_shards(
        corrupt_shard,
        anchors,
        out=out,
        schema=schemas.NEGATIVES,
        key=key,
        engine=Engine.from_params(params),
        metadata=meta,
        model=True,
        init=init_worker,
        init_args=(str(Path(model).resolve()), lang, params["device"], cfg["threads"], config),
        desc="corrupt shards",
    )
    if anchors.rows == 0:
        log.warning(
            "%s has no sentence of lang %r: wrote an empty negatives artifact", corpus, lang
        )
    stats = merge_stats(shard_stats(out))
    first = next(iter_batches(out, batch_size=5, schema=schemas.NEGATIVES), pd.DataFrame())
    log.info(
        "%d anchors -> %d negatives (%.2f per anchor with any); %d without noun chunk",
        stats["sentences_in"],
        stats["negatives"],
        stats["negatives_per_anchor"],
        stats["skipped_no_chunk"],
    )
    return {
        **stats,
        "model": info.get("model"),
        "stand_in": bool(info.get("stand_in", False)),
        "adapted": bool(info.get("adapted", False)),
        "chunker": PIPELINES[lang],
        "lang": lang,
        "n_shards": len(manifest["shards"]),
        "examples": first.head(5)[["text", "masked", "negative"]].to_dict("records")
        if len(first)
        else [],
    }
