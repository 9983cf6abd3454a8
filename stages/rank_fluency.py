"""Stage rank_fluency: keep each sentence's lowest-perplexity candidate as its paraphrase.

Perplexity comes from a causal LM (`rank_fluency.model[lang]`, resolved offline by
paracl.models; the metrics say which weights ran). `max_sentences` caps how many
sentences are scored (the first ones with candidates, in corpus order) so that a CPU
run stays short. Zero candidates give an empty pairs artifact and a note.

Sharded (issue 9): the driver streams the candidates, groups them by sentence (a
sentence's candidates are consecutive rows and always land in one shard), applies the
`max_sentences` cap, and hands shards of about `shard_size` candidates to
`paracl.paraphrase.fluency.rank_shard`: in this process with the local executor, on
`model_workers` Ray actors (each loading the LM once, on a GPU where the cluster has one)
with `executor: ray`. The pairs are a shard directory; an interrupted run resumes. The
driver holds one shard per task in flight, counters and, for the median in the metrics,
one perplexity per pair.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from paracl import schemas
from paracl.distributed.sharded import Engine, map_shards
from paracl.io import (
    fingerprint,
    input_checksum,
    iter_batches,
    iter_parts,
    read_metadata,
    write_json,
)
from paracl.models import resolve_model
from paracl.paraphrase.fluency import init_worker, rank_shard
from paracl.paraphrase.shards import group_shards
from paracl.stage import run

CANDIDATES = "data/ppdb/candidates.parquet"
RULES = "data/ppdb/rules.parquet"  # its metadata holds ppdb_substitute's metrics
PAIRS = "data/ppdb/pairs.parquet"
METRICS = "metrics/ppdb.json"

log = logging.getLogger("rank_fluency")


def _perplexities(path: str) -> np.ndarray:
    """The pairs' perplexity column, read alone (for the mean and median)."""
    parts = [b["perplexity"].to_numpy() for _, b in iter_parts(path, 65536, columns=["perplexity"])]
    return np.concatenate(parts) if parts else np.zeros(0)


def main(params: dict) -> None:
    lang, cfg = params["lang"], params["rank_fluency"]
    upstream = read_metadata(CANDIDATES)
    sub = read_metadata(RULES).get("metrics", {})
    model = resolve_model(cfg["model"][lang])
    key = fingerprint(
        "rank_fluency",
        cfg,
        lang,
        params["seed"],
        params["device"],
        model.describe(),
        input_checksum(CANDIDATES),
    )
    counts: dict = {}
    shards = group_shards(
        iter_batches(CANDIDATES, batch_size=8192, schema=schemas.PPDB_CANDIDATES),
        cfg["shard_size"],
        key="id",
        max_groups=cfg["max_sentences"],
        counts=counts,
    )
    first = next(shards, None)
    notes = []
    if first is None:
        notes.append(f"{CANDIDATES} has no candidates: no pairs (see metrics/ppdb_substitute.json)")
        log.warning(notes[-1])
        init, stream = None, iter(())  # nothing to score: the model is never loaded
    else:
        log.info("ranking candidates with %s", model)
        init = init_worker
        stream = _chain(first, shards)
    manifest = map_shards(
        rank_shard,
        stream,
        out=PAIRS,
        schema=schemas.PPDB_PAIRS,
        key=key,
        engine=Engine.from_params(params),
        metadata={
            "stage": "rank_fluency",
            "model": model.describe(),
            "probability": upstream.get("probability"),
            "stand_in_probability": upstream.get("stand_in_probability"),
            "theta": upstream.get("theta"),
            "lang": lang,
        },
        model=True,
        init=init,
        init_args=(
            str(Path(model.path).resolve()),  # Ray workers run in another cwd
            params["device"],
            cfg["batch_size"],
            cfg["max_batch_tokens"][lang],
            params["seed"],
        ),
        desc="rank_fluency",
    )
    ppl = _perplexities(PAIRS) if manifest["rows"] else np.zeros(0)
    metrics = {
        "lang": lang,
        "theta": upstream.get("theta"),
        "model": model.describe(),
        "probability": upstream.get("probability"),
        "stand_in_probability": upstream.get("stand_in_probability"),
        "dictionary": sub.get("dictionary", {}),
        "rules_kept_theta": sub.get("rules_kept_theta"),
        "sentences": sub.get("sentences"),
        "sentences_matched": sub.get("sentences_matched"),
        "candidates": sub.get("candidates"),
        "sentences_scored": counts.get("groups", 0),
        "candidates_scored": counts.get("rows", 0),
        "pairs": int(manifest["rows"]),
        "perplexity_mean": round(float(ppl.mean()), 4) if len(ppl) else None,
        "perplexity_median": round(float(np.median(ppl)), 4) if len(ppl) else None,
        "max_sentences": cfg["max_sentences"],
        "shards": len(manifest["shards"]),
        "notes": notes,
    }
    write_json(metrics, METRICS)
    log.info("%d pairs → %s", manifest["rows"], PAIRS)


def _chain(first: pd.DataFrame, rest):
    yield first
    yield from rest


if __name__ == "__main__":
    run(main)
