"""Stage tag: candidates → SIM/BLEU scores → <SIM><BLEU> tags → data/roundtrip/tagged.parquet.

Also writes the SIM×BLEU heatmap of all candidates (paper Figure 1) and the pair counts
of each of the 48 tag cells.

Sharded (issue 9): scoring is per shard. The driver streams the candidates in shards of
about `shard_size` rows of whole sentences (a sentence's candidates are consecutive rows
of the round-trip artifact, so its duplicates are always found within one shard) and
`paracl.roundtrip.tagging.score_shard` scores them (cross-encoder SIM, sentence BLEU,
tags) in this process (local executor) or on `model_workers` Ray actors, each loading the
cross-encoder once. The result is the shard directory data/roundtrip/scored.parquet
(every candidate, with `dropped` = empty/duplicate where it was not scored); an
interrupted run resumes from its finished shards. Then the driver makes the global parts
from scored.parquet, reading only the columns it needs, one shard at a time: counts and
means; the heatmap sample (each scored row gets a seeded random key from its shard
index; the `heatmap_max_pairs` smallest keys are kept, so the driver holds at most that
many (sim, bleu) pairs); and the high-quality pairs (SIM > 70, BLEU <= 45), which the
driver holds whole for the balanced split (they are the stage's output, a small part of
the candidates).
"""

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
    write_parquet,
)
from paracl.models import check_model_dir
from paracl.paraphrase.shards import group_shards
from paracl.roundtrip import heatmap, tagging
from paracl.stage import run

log = logging.getLogger("tag")

CANDIDATES = Path("data/roundtrip/candidates.parquet")
SCORER = Path("models/sts_scorer")
SCORED = Path("data/roundtrip/scored.parquet")
OUT = Path("data/roundtrip/tagged.parquet")
METRICS = Path("metrics/roundtrip/tag.json")
HEATMAP_CSV = Path("metrics/roundtrip/heatmaps/candidates.csv")
HEATMAP_PNG = Path("metrics/roundtrip/candidates_heatmap.png")
GOOD_COLUMNS = [c for c in schemas.ROUNDTRIP_TAGGED.names if c != "split"]


class Summary:
    """One streaming pass over scored.parquet: counts, sums, heatmap sample, good pairs."""

    def __init__(self, seed: int, heatmap_max: int):
        self.seed, self.heatmap_max = seed, heatmap_max
        self.dropped = {"empty": 0, "duplicate": 0}
        self.n_scored = 0
        self.sim_sum = self.bleu_sum = 0.0
        self.sim_max, self.bleu_min = -np.inf, np.inf
        self.good: list[pd.DataFrame] = []
        self.sample = pd.DataFrame({"key": [], "part": [], "row": [], "sim": [], "bleu": []})
        self.rows_in_part: dict[int, int] = {}

    def add(self, part: int, batch: pd.DataFrame) -> None:
        start = self.rows_in_part.get(part, 0)
        self.rows_in_part[part] = start + len(batch)
        for reason in self.dropped:
            self.dropped[reason] += int((batch["dropped"] == reason).sum())
        scored = batch[batch["dropped"].isna()]
        self.n_scored += len(scored)
        if len(scored):
            self.sim_sum += float(scored["sim"].sum())
            self.bleu_sum += float(scored["bleu"].sum())
            self.sim_max = max(self.sim_max, float(scored["sim"].max()))
            self.bleu_min = min(self.bleu_min, float(scored["bleu"].min()))
        good = scored[scored["sim_tag"].notna() & scored["bleu_tag"].notna()]
        if len(good):
            self.good.append(good[GOOD_COLUMNS])
        # seeded key of every row of this shard (batch sizes never change which rows win)
        rng = np.random.default_rng([self.seed, part])
        keys = rng.random(start + len(batch))[start:]
        mask = batch["heatmap"].to_numpy(dtype=bool)
        rows = np.arange(start, start + len(batch))[mask]
        new = pd.DataFrame(
            {
                "key": keys[mask],
                "part": part,
                "row": rows,
                "sim": batch["sim"].to_numpy()[mask],
                "bleu": batch["bleu"].to_numpy()[mask],
            }
        )
        both = pd.concat([self.sample, new], ignore_index=True) if len(new) else self.sample
        self.sample = both.nsmallest(self.heatmap_max, "key", keep="first")

    def heatmap_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The sampled (sim, bleu) in artifact order."""
        s = self.sample.sort_values(["part", "row"])
        return s["sim"].to_numpy(dtype=np.float64), s["bleu"].to_numpy(dtype=np.float64)


def main(params: dict) -> None:
    cfg = params["tag"]
    lang, seed = params["lang"], params["seed"]
    source_meta = read_metadata(CANDIDATES)
    check_model_dir(SCORER)
    scoring = {k: cfg[k] for k in ("batch_size", "heatmap_min_words", "shard_size")}
    key = fingerprint(
        "tag",
        scoring,
        lang,
        params["device"],
        input_checksum(CANDIDATES),
        input_checksum(SCORER),
    )
    counts: dict = {}
    shards = group_shards(
        iter_batches(CANDIDATES, batch_size=8192, schema=schemas.ROUNDTRIP_CANDIDATES),
        cfg["shard_size"],
        key="id",
        counts=counts,
    )
    first = next(shards, None)
    manifest = map_shards(
        tagging.score_shard,
        iter(()) if first is None else _chain(first, shards),
        out=SCORED,
        schema=schemas.ROUNDTRIP_SCORED,
        key=key,
        engine=Engine.from_params(params),
        metadata={"stage": "tag", "params": scoring},
        model=True,
        init=None if first is None else tagging.init_worker,
        init_args=(
            str(SCORER.resolve()),
            params["device"],
            cfg["batch_size"],
            lang,
            cfg["heatmap_min_words"],
        ),
        desc="tag",
    )
    n_candidates = counts.get("rows", 0)

    summary = Summary(seed, cfg["heatmap_max_pairs"])
    needed = sorted(set(GOOD_COLUMNS) | {"dropped", "heatmap"})
    if manifest["rows"]:
        for part, batch in iter_parts(SCORED, 65536, columns=needed):
            summary.add(part, batch)
    empty_good = pd.DataFrame({c: pd.Series(dtype=object) for c in GOOD_COLUMNS})
    good = pd.concat(summary.good, ignore_index=True) if summary.good else empty_good
    per_share = {s: cfg[f"{s}_per_share"] for s in tagging.SPLITS}
    sampled, cells = tagging.balanced_split(good, per_share, seed)
    cell_summary = tagging.summarize_cells(cells)
    write_parquet(
        sampled,
        OUT,
        schemas.ROUNDTRIP_TAGGED,
        metadata={"params": cfg, "source": {k: v for k, v in source_meta.items() if k != "params"}},
    )
    n_scored = summary.n_scored
    if len(good) == 0:
        log.warning(
            "tagging kept no pair: %d candidates scored, none with SIM > %g and BLEU <= %g "
            "(max SIM %.1f, min BLEU %.1f); downstream stages get an empty set",
            n_scored,
            tagging.SIM_MIN,
            tagging.BLEU_MAX,
            summary.sim_max if n_scored else float("nan"),
            summary.bleu_min if n_scored else float("nan"),
        )
    elif cell_summary["empty_cells"]:
        log.warning(
            "%d of 48 tag cells are empty: %s",
            len(cell_summary["empty_cells"]),
            " ".join(cell_summary["empty_cells"]),
        )

    sim, bleu = summary.heatmap_pairs()
    heatmap.write_csv(heatmap.plot_rows(sim, bleu), HEATMAP_CSV)
    heatmap.write_png({"round-trip candidates": (sim, bleu)}, HEATMAP_PNG)

    models = {k: source_meta.get(k) for k in ("forward_model", "backward_model")}
    splits = {s: int((sampled["split"] == s).sum()) for s in tagging.SPLITS}
    write_json(
        {
            "translation_models": models,
            "stand_in": any(bool(m and m.get("stand_in")) for m in models.values()),
            "n_candidates": n_candidates,
            "n_empty": summary.dropped["empty"],
            "n_duplicates": summary.dropped["duplicate"],
            "n_scored": n_scored,
            "n_high_quality": len(good),
            "high_quality_rate": len(good) / n_scored if n_scored else 0.0,
            "sim_mean": summary.sim_sum / n_scored if n_scored else None,
            "bleu_mean": summary.bleu_sum / n_scored if n_scored else None,
            "split_sizes": splits,
            "cells": cells,
            **cell_summary,
            "n_empty_cells": len(cell_summary["empty_cells"]),
            "heatmap_pairs": len(sim),
            "shards": len(manifest["shards"]),
        },
        METRICS,
    )
    log.info("%d candidates scored; %d high quality; splits %s", n_scored, len(good), splits)


def _chain(first: pd.DataFrame, rest):
    yield first
    yield from rest


if __name__ == "__main__":
    run(main)
