"""Stage rank_fluency: keep each sentence's lowest-perplexity candidate as its paraphrase.

Perplexity comes from a causal LM (`rank_fluency.model[lang]`, resolved offline by
paracl.models; the metrics say which weights ran). `max_sentences` caps how many
sentences are scored (the first ones with candidates, in corpus order) so that a CPU
run stays short. Zero candidates give an empty pairs artifact and a note.
"""

from __future__ import annotations

import logging

import pandas as pd

from paracl import schemas
from paracl.device import seed_everything, select_device
from paracl.io import read_metadata, read_parquet, write_json, write_parquet
from paracl.models import resolve_model
from paracl.paraphrase.fluency import PerplexityScorer
from paracl.stage import run

CANDIDATES = "data/ppdb/candidates.parquet"
PAIRS = "data/ppdb/pairs.parquet"
METRICS = "metrics/ppdb.json"

log = logging.getLogger("rank_fluency")


def choose(cands: pd.DataFrame, perplexity: list[float] | pd.Series) -> pd.DataFrame:
    """The lowest-perplexity candidate of each sentence (first one on ties), corpus order."""
    scored = cands.assign(perplexity=list(perplexity), _order=range(len(cands)))
    scored = scored.dropna(subset=["perplexity"])
    best = scored.sort_values(["perplexity", "_order"]).drop_duplicates("id", keep="first")
    best = best.sort_values("_order").rename(columns={"candidate": "paraphrase"})
    return best.drop(columns="_order").reset_index(drop=True)


def main(params: dict) -> None:
    lang, cfg = params["lang"], params["rank_fluency"]
    seed_everything(params["seed"])
    cands = read_parquet(CANDIDATES, schemas.PPDB_CANDIDATES)
    upstream = read_metadata(CANDIDATES)
    ids = list(dict.fromkeys(cands["id"]))
    if cfg["max_sentences"] is not None:
        ids = ids[: cfg["max_sentences"]]
        cands = cands[cands["id"].isin(set(ids))].reset_index(drop=True)
    notes = []
    model = resolve_model(cfg["model"][lang])
    if len(cands):
        device = select_device(params["device"])
        scorer = PerplexityScorer(
            model.path, device, cfg["batch_size"], cfg["max_batch_tokens"][lang]
        )
        log.info("scoring %d candidates of %d sentences with %s", len(cands), len(ids), model)
        ppl = scorer.score(cands["candidate"].tolist(), progress=True)
        pairs = choose(cands, ppl)
    else:
        notes.append(f"{CANDIDATES} has no candidates: no pairs (see metrics/ppdb_substitute.json)")
        log.warning(notes[-1])
        pairs = pd.DataFrame(columns=schemas.PPDB_PAIRS.names)
    sub = upstream.get("metrics", {})
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
        "sentences_scored": len(ids),
        "candidates_scored": int(len(cands)),
        "pairs": int(len(pairs)),
        "perplexity_mean": round(float(pairs["perplexity"].mean()), 4) if len(pairs) else None,
        "perplexity_median": round(float(pairs["perplexity"].median()), 4) if len(pairs) else None,
        "max_sentences": cfg["max_sentences"],
        "notes": notes,
    }
    meta = {
        "stage": "rank_fluency",
        "model": model.describe(),
        "probability": upstream.get("probability"),
        "stand_in_probability": upstream.get("stand_in_probability"),
        "theta": upstream.get("theta"),
        "lang": lang,
    }
    write_parquet(pairs, PAIRS, schemas.PPDB_PAIRS, metadata=meta)
    write_json(metrics, METRICS)
    log.info("%d pairs → %s", len(pairs), PAIRS)


if __name__ == "__main__":
    run(main)
