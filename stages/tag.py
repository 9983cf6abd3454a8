"""Stage tag: candidates → SIM/BLEU scores → <SIM><BLEU> tags → data/roundtrip/tagged.parquet.

Also writes the SIM×BLEU heatmap of all candidates (paper Figure 1) and the pair counts
of each of the 48 tag cells.
"""

import logging
import time
from pathlib import Path

import numpy as np

from paracl import schemas
from paracl.device import select_device
from paracl.io import ArtifactError, read_metadata, read_parquet, write_json, write_parquet
from paracl.roundtrip import heatmap, sts_scorer, tagging
from paracl.stage import run

log = logging.getLogger("tag")

CANDIDATES = Path("data/roundtrip/candidates.parquet")
SCORER = Path("models/sts_scorer")
OUT = Path("data/roundtrip/tagged.parquet")
METRICS = Path("metrics/roundtrip/tag.json")
HEATMAP_CSV = Path("metrics/roundtrip/heatmaps/candidates.csv")
HEATMAP_PNG = Path("metrics/roundtrip/candidates_heatmap.png")


def main(params: dict) -> None:
    cfg = params["tag"]
    lang, seed = params["lang"], params["seed"]
    cands = read_parquet(CANDIDATES, schemas.ROUNDTRIP_CANDIDATES)
    source_meta = read_metadata(CANDIDATES)
    n_candidates = len(cands)
    stripped = [tagging.strip_symbols(p, lang) for p in cands["paraphrase"]]
    empty = np.array([not s for s in stripped], dtype=bool)
    cands = cands[~empty]
    before = len(cands)
    cands = cands.drop_duplicates(["id", "paraphrase"], keep="first").reset_index(drop=True)
    n_duplicates = before - len(cands)

    if not (SCORER / "config.json").exists():
        raise ArtifactError(f"{SCORER}: no trained scorer (run train_sts_scorer)")
    scorer = sts_scorer.load_scorer(SCORER, str(select_device(params["device"])))
    started = time.perf_counter()
    sim, bleu = tagging.score_pairs(
        cands["text"].tolist(),
        cands["paraphrase"].tolist(),
        lambda pairs: sts_scorer.predict(scorer, pairs, cfg["batch_size"]),
        lang,
    )
    seconds = time.perf_counter() - started
    cands["sim"], cands["bleu"] = sim, bleu
    tagged = tagging.add_tags(cands)
    good = tagging.high_quality(tagged)
    per_share = {s: cfg[f"{s}_per_share"] for s in tagging.SPLITS}
    sampled, counts = tagging.balanced_split(good, per_share, seed)
    summary = tagging.summarize_cells(counts)
    write_parquet(
        sampled,
        OUT,
        schemas.ROUNDTRIP_TAGGED,
        metadata={"params": cfg, "source": {k: v for k, v in source_meta.items() if k != "params"}},
    )

    if len(good) == 0:
        log.warning(
            "tagging kept no pair: %d candidates scored, none with SIM > %g and BLEU <= %g "
            "(max SIM %.1f, min BLEU %.1f); downstream stages get an empty set",
            len(cands),
            tagging.SIM_MIN,
            tagging.BLEU_MAX,
            float(sim.max()) if len(sim) else float("nan"),
            float(bleu.min()) if len(bleu) else float("nan"),
        )
    elif summary["empty_cells"]:
        log.warning(
            "%d of 48 tag cells are empty: %s",
            len(summary["empty_cells"]),
            " ".join(summary["empty_cells"]),
        )

    mask = heatmap.long_enough(cands["text"], cands["paraphrase"], lang, cfg["heatmap_min_words"])
    idx = np.flatnonzero(mask)
    if len(idx) > cfg["heatmap_max_pairs"]:
        idx = np.sort(
            np.random.default_rng(seed).choice(idx, cfg["heatmap_max_pairs"], replace=False)
        )
    heatmap.write_csv(heatmap.plot_rows(sim[idx], bleu[idx]), HEATMAP_CSV)
    heatmap.write_png({"round-trip candidates": (sim[idx], bleu[idx])}, HEATMAP_PNG)

    models = {k: source_meta.get(k) for k in ("forward_model", "backward_model")}
    write_json(
        {
            "translation_models": models,
            "stand_in": any(bool(m and m.get("stand_in")) for m in models.values()),
            "n_candidates": n_candidates,
            "n_empty": int(empty.sum()),
            "n_duplicates": n_duplicates,
            "n_scored": len(cands),
            "n_high_quality": len(good),
            "high_quality_rate": len(good) / len(cands) if len(cands) else 0.0,
            "sim_mean": float(sim.mean()) if len(sim) else None,
            "bleu_mean": float(bleu.mean()) if len(bleu) else None,
            "split_sizes": {s: int((sampled["split"] == s).sum()) for s in tagging.SPLITS},
            "cells": counts,
            **summary,
            "n_empty_cells": len(summary["empty_cells"]),
            "heatmap_pairs": len(idx),
        },
        METRICS,
    )
    log.info(
        "%d candidates scored (%.1f pairs/s); %d high quality; splits %s",
        len(cands),
        len(cands) / max(seconds, 1e-9),
        len(good),
        {s: int((sampled["split"] == s).sum()) for s in tagging.SPLITS},
    )


if __name__ == "__main__":
    run(main)
