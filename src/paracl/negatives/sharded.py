"""The corrupt stage's per-shard work, for paracl.distributed.sharded.map_shards.

`init_worker` runs once per worker (a Ray actor, or the driver process locally): it
loads the spaCy / GiNZA noun-chunk pipeline and the filler: T5 (an encoder-decoder, by
its config) or a causal LM (paracl.negatives.causal). For a causal LM, models/t5_adapted
holds only adapt_t5's paracl_t5.json naming it; the driver resolves it to a directory. `corrupt_shard` turns one
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
from paracl.models import check_model_dir, resolve_model
from paracl.negatives.causal import is_causal_lm
from paracl.negatives.chunks import PIPELINES
from paracl.negatives.pipeline import CorruptConfig, corrupt, merge_stats
from paracl.sampling import iter_sample

log = logging.getLogger(__name__)

STATS_KEY = "paracl_stats"
_STATE: dict = {}  # per worker process: nlp, filler, config
_PIPELINES: dict = {}  # spaCy pipelines by lang (packaged, never change: kept)


def init_worker(
    model: str,
    lang: str,
    device: str,
    threads: int | None,
    cfg: CorruptConfig,
    causal: bool = False,
    seed: int = 0,
) -> None:
    """Load the chunker and the filler (from `model`, a directory the worker can read)."""
    import torch

    from paracl.device import select_device
    from paracl.negatives.causal import CausalFiller
    from paracl.negatives.chunks import load_pipeline
    from paracl.negatives.generate import T5Filler

    if threads:
        torch.set_num_threads(threads)
    if lang not in _PIPELINES:
        _PIPELINES[lang] = load_pipeline(lang)
    dev = select_device(device)
    filler = CausalFiller(model, dev, cfg.sampling(), seed) if causal else T5Filler(model, dev)
    _STATE.clear()
    _STATE.update(nlp=_PIPELINES[lang], filler=filler, cfg=cfg)


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


def model_info(model: str) -> tuple[dict, Path, bool]:
    """(what models/t5_adapted is, the directory to load, is it a causal LM). adapt_t5's
    paracl_t5.json says it; for a causal LM it names the model, resolved here. A model
    folder from elsewhere is described by its path and typed by its config."""
    info_path = Path(model) / "paracl_t5.json"
    info = read_json(info_path) if info_path.exists() else {"model": model}
    if info.get("causal_lm"):
        path = resolve_model(info["model"]["id"]).path
        return info, check_model_dir(path).resolve(), True
    path = check_model_dir(model).resolve()
    return info, path, "causal_lm" not in info and is_causal_lm(path)


def corrupt_corpus(corpus: str, model: str, out: str, params: dict) -> dict:
    """Write hard negatives for a seeded sample of `corpus` (`corrupt.max_sentences`
    anchors of `lang`) to the shard directory `out`, T5 read from `model`; return the
    metrics (summed shard counts, what the model is, a few examples)."""
    cfg, lang, seed = params["corrupt"], params["lang"], params["seed"]
    seed_everything(seed)
    info, path, causal = model_info(model)
    config = CorruptConfig.from_params(cfg, seq2seq=not causal)
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
        init_args=(str(path), lang, params["device"], cfg["threads"], config, causal, seed),
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
        "filler": "causal_lm" if causal else "t5",
        "stand_in": bool(info.get("stand_in", False)),
        "paper_model": False if causal else info.get("paper_model"),
        "adapted": bool(info.get("adapted", False)),
        "chunker": PIPELINES[lang],
        "lang": lang,
        "n_shards": len(manifest["shards"]),
        "examples": first.head(5)[["text", "masked", "negative"]].to_dict("records")
        if len(first)
        else [],
    }
