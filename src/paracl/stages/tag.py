"""The tag stage at scale: candidates scored shard by shard, then one streaming pass.

Scoring (issue 9) is per shard: the candidates are streamed in shards of about
`shard_size` rows of whole sentences (a sentence's candidates are consecutive rows of the
round-trip artifact, so its duplicates are always found within one shard) and
`ScoreJob` scores them (cross-encoder SIM, sentence BLEU, tags) in the driver process
(local executor) or on `model_workers` Ray actors, each loading the cross-encoder once
(`ScoreJob.setup`). The result is a shard directory holding every candidate, with `dropped`
= empty/duplicate where it was not scored; an interrupted run resumes from its finished
shards.

Then `summarize_scored` makes the global parts from that directory, reading only the
columns it needs, one shard at a time: counts and means; the heatmap sample (each
scored row gets a seeded random key from its shard index; the `heatmap_max_pairs`
smallest keys are kept, so the driver holds at most that many (sim, bleu) pairs); and
the high-quality pairs, which the driver holds whole for the balanced split (they are
the stage's output, a small part of the candidates).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paracl.core import schemas
from paracl.core.distributed.sharded import (
    CountedShards,
    Engine,
    Shard,
    group_shards,
    map_shards,
)
from paracl.core.io import (
    fingerprint,
    input_checksum,
    iter_batches,
    iter_parts,
    read_metadata,
    write_parquet,
)
from paracl.core.key_figures import write_metrics
from paracl.core.models import check_model_dir
from paracl.core.params import RunSettings, RunWide, Section, param
from paracl.core.stage import args
from paracl.parts.tags import heatmap, tagging
from paracl.parts.tags.text import long_enough, strip_symbols
from paracl.stages import tag as scoring

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class Tag(Section):
    dev_per_share: int | None = param(min=0)
    test_per_share: int | None = param(min=0)
    train_per_share: int | None = param(min=0)
    batch_size: int = param(min=1)
    heatmap_min_words: int = param(min=0)
    heatmap_max_pairs: int = param(min=1)
    shard_size: int = param(min=1, help="candidates per shard, whole sentences")


class Params(RunWide):
    """What stage tag reads of params.yaml: the run-wide keys and these."""

    tag: Tag


log = logging.getLogger(__name__)

GOOD_COLUMNS = [c for c in schemas.ROUNDTRIP_TAGGED.names if c != "split"]
SCORING_PARAMS = ("batch_size", "heatmap_min_words", "shard_size")  # what scored rows depend on


def score_candidates(
    candidates: str | Path,
    scorer: str | Path,
    out: str | Path,
    cfg: dict,
    run: RunSettings,
    engine: Engine,
) -> tuple[dict, int]:
    """Score every candidate into the shard directory `out` (resuming a crashed run;
    `cfg`: the tag section); return (its manifest, how many candidates were read)."""
    lang, device = run.lang, run.device
    check_model_dir(scorer)
    scoring = {k: cfg[k] for k in SCORING_PARAMS}
    key = fingerprint(
        "tag", scoring, lang, device, input_checksum(candidates), input_checksum(scorer)
    )
    batches = iter_batches(candidates, batch_size=8192, schema=schemas.ROUNDTRIP_CANDIDATES)
    counted = CountedShards(group_shards(batches, cfg["shard_size"], key="id"))
    job = ScoreJob(
        str(Path(scorer).resolve()), device, cfg["batch_size"], lang, cfg["heatmap_min_words"]
    )
    manifest = map_shards(
        job,
        counted,
        out=out,
        schema=schemas.ROUNDTRIP_SCORED,
        key=key,
        engine=engine,
        metadata={"stage": "tag", "params": scoring},
        model=True,
        desc="tag",
    )
    return manifest, counted.rows


# ---------------------------------------------------------------- the shard worker


@dataclass(frozen=True)
class ScoreJob:
    """The tag stage's shard worker (paracl.core.distributed.executor.ShardJob): the STS
    cross-encoder loaded once per worker, then every candidate of a shard scored."""

    scorer_path: str
    device: str
    batch_size: int
    lang: str
    heatmap_min_words: int

    def setup(self) -> Any:
        """The cross-encoder, on this worker's device."""
        from paracl.core.device import select_device
        from paracl.parts import sts_scorer

        return sts_scorer.load_scorer(self.scorer_path, str(select_device(self.device)))

    def process(self, model: Any, shard: Shard) -> pd.DataFrame:
        """Every candidate of one shard with SIM, BLEU and tags.

        Rows whose paraphrase is empty after symbol removal, or repeat an earlier
        (id, paraphrase) of the shard (all of a sentence's candidates are in one shard),
        are kept with `dropped` = "empty" / "duplicate" and no scores, so the driver can
        count them from the artifact. `heatmap` marks scored pairs long enough for the
        heatmaps.
        """
        from paracl.parts import sts_scorer

        lang = self.lang
        out = shard.rows.reset_index(drop=True).copy()
        empty = np.array([not strip_symbols(p, lang) for p in out["paraphrase"]], dtype=bool)
        dup = out.duplicated(["id", "paraphrase"], keep="first").to_numpy() & ~empty
        keep = ~empty & ~dup
        kept = out[keep]
        sim, bleu = tagging.score_pairs(
            kept["text"].tolist(),
            kept["paraphrase"].tolist(),
            lambda pairs: sts_scorer.predict(model, pairs, self.batch_size),
            lang,
        )
        out["sim"], out["bleu"] = np.nan, np.nan
        out.loc[keep, "sim"], out.loc[keep, "bleu"] = sim, bleu
        out = tagging.add_tags(out)  # NaN (dropped rows) gets no tag
        out["dropped"] = np.where(empty, "empty", np.where(dup, "duplicate", None))
        long = np.zeros(len(out), dtype=bool)
        long[keep] = long_enough(kept["text"], kept["paraphrase"], lang, self.heatmap_min_words)
        out["heatmap"] = long
        return out


# ---------------------------------------------------------------- the driver's pass


class ScoredSummary:
    """One streaming pass over the scored shards: counts, sums, heatmap sample, good pairs."""

    def __init__(self, seed: int, heatmap_max: int):
        self.seed, self.heatmap_max = seed, heatmap_max
        self.dropped = {"empty": 0, "duplicate": 0}
        self.n_scored = self.n_good = 0
        self.sim_sum = self.bleu_sum = 0.0
        self.sim_max, self.bleu_min = -np.inf, np.inf
        self._good: list[pd.DataFrame] = []
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
        good = tagging.high_quality(scored)
        if len(good):
            self._good.append(good[GOOD_COLUMNS])
            self.n_good += len(good)
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

    @property
    def good(self) -> pd.DataFrame:
        """The high-quality pairs (SIM > 70, BLEU <= 45) in artifact order."""
        if not self._good:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in GOOD_COLUMNS})
        return pd.concat(self._good, ignore_index=True)

    def heatmap_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The sampled (sim, bleu) in artifact order."""
        s = self.sample.sort_values(["part", "row"])
        return s["sim"].to_numpy(dtype=np.float64), s["bleu"].to_numpy(dtype=np.float64)


def summarize_scored(scored: str | Path, seed: int, heatmap_max_pairs: int) -> ScoredSummary:
    """The driver's pass over the shard directory `scored`, one batch at a time."""
    summary = ScoredSummary(seed, heatmap_max_pairs)
    needed = sorted(set(GOOD_COLUMNS) | {"dropped", "heatmap"})
    for part, batch in iter_parts(scored, 65536, columns=needed):
        summary.add(part, batch)
    return summary


def tag_metrics(
    summary: ScoredSummary,
    tagged: pd.DataFrame,
    cells: list[dict],
    source_meta: dict,
    n_candidates: int,
    n_shards: int,
) -> dict:
    """The tag stage's metrics; logs a warning when the split is empty or thin, which
    downstream stages would otherwise inherit silently."""
    n_scored, n_good = summary.n_scored, summary.n_good
    cell_summary = tagging.summarize_cells(cells)
    if n_good == 0:
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
    models = {k: source_meta.get(k) for k in ("forward_model", "backward_model")}
    source_params = source_meta.get("params") or {}
    per_sentence = (
        len(source_params.get("top_k") or [1]) ** 2 if source_params.get("mode") == "sample" else 1
    )
    n_sentences = n_candidates // per_sentence
    return {
        "paper_model": source_meta.get("paper_model"),
        "n_source_sentences": n_sentences,
        # the paper's yield measure: pairs with SIM > 70 and BLEU <= 45 per 1,000 inputs
        "high_quality_per_1000_sentences": 1000 * n_good / n_sentences if n_sentences else 0.0,
        "translation_models": models,
        "stand_in": any(bool(m and m.get("stand_in")) for m in models.values()),
        "n_candidates": n_candidates,
        "n_empty": summary.dropped["empty"],
        "n_duplicates": summary.dropped["duplicate"],
        "n_scored": n_scored,
        "n_high_quality": n_good,
        "high_quality_rate": n_good / n_scored if n_scored else 0.0,
        "sim_mean": summary.sim_sum / n_scored if n_scored else None,
        "bleu_mean": summary.bleu_sum / n_scored if n_scored else None,
        "split_sizes": {s: int((tagged["split"] == s).sum()) for s in tagging.SPLITS},
        "cells": cells,
        **cell_summary,
        "n_empty_cells": len(cell_summary["empty_cells"]),
        "heatmap_pairs": len(summary.sample),
        "shards": n_shards,
    }


log = logging.getLogger("tag")


# dvc.yaml's metrics (paracl.core.key_figures): high-quality candidates, training pairs
KEY_FIGURES = ("n_high_quality", "split_sizes.train")


def main(params: dict) -> None:
    paths = args(
        "candidates", "scorer", "scored", "tagged", "metrics", "heatmap_csv", "heatmap_png"
    )
    cfg, seed = params["tag"], params["seed"]
    source_meta = read_metadata(paths.candidates)
    manifest, n_candidates = scoring.score_candidates(
        paths.candidates, paths.scorer, paths.scored, cfg, RunSettings.of(params),
        Engine.from_params(params),
    )  # fmt: skip
    summary = scoring.summarize_scored(paths.scored, seed, cfg["heatmap_max_pairs"])
    per_share = {s: cfg[f"{s}_per_share"] for s in tagging.SPLITS}
    tagged, cells = tagging.balanced_split(summary.good, per_share, seed)
    source = {k: v for k, v in source_meta.items() if k != "params"}
    write_parquet(
        tagged, paths.tagged, schemas.ROUNDTRIP_TAGGED, metadata={"params": cfg, "source": source}
    )
    sim, bleu = summary.heatmap_pairs()
    heatmap.write_csv(heatmap.plot_rows(sim, bleu), paths.heatmap_csv)
    heatmap.write_png({"round-trip candidates": (sim, bleu)}, paths.heatmap_png)
    metrics = scoring.tag_metrics(
        summary, tagged, cells, source_meta, n_candidates, len(manifest["shards"])
    )
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    log.info(
        "%d candidates scored; %d high quality; splits %s",
        metrics["n_scored"],
        metrics["n_high_quality"],
        metrics["split_sizes"],
    )
