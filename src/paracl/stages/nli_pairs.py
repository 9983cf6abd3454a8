"""Stage nli_pairs: SICK's labelled pairs, all three labels, for intermediate training
(STILTs, the round-trip paper's §6), with no pair that shares a sentence with a scored set.

The round-trip paper trains BERT-large on MNLI as a 3-way classifier before fine-tuning
it on GLUE tasks (Phang et al.'s STILTs). Offline, SICK is the only English NLI set
(issue 72): its TRAIN split has 4,439 pairs labelled entailment / neutral / contradiction.
This stage writes them (or, `source: multinli`, MNLI's train split for paper-en) as
(sentence1, sentence2, label) into data/nli/pairs.parquet, the
input of train_intermediate's plain arm and of the paraphrase_pairs jobs its augmented
arms read. Unlike nli_triplets (supervised SimCSE: entailments only, a contradiction as
hard negative) every pair is kept, whatever its label.

A STILTs arm is scored on fine-tuned GLUE tasks, one of them STS-B, whose test split
holds SICK sentences (folded: 119 SICK TRAIN triplets share one), so every pair one of
whose sentences is in an STS set of `exclude_sts` is dropped, compared as nli_triplets
compares them (paracl.parts.nli.normalise, `match`). CoLA, SST-2, MRPC and RTE share no sentence
with SICK TRAIN (checked on the mirror: docs/stages/train-intermediate.md). `max_pairs`
keeps a seeded sample stratified by label, so that the paraphrase jobs fit a CPU.
"""

from __future__ import annotations

import logging
from typing import Literal

import pandas as pd
import pyarrow as pa

from paracl.core.errors import ParamsError
from paracl.core.io import write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunWide, Section, param
from paracl.core.stage import args
from paracl.parts.nli import (
    SICK_FILE,
    SICK_SPLITS,
    Match,
    SickSplit,
    StsSet,
    check_names,
    drop_leaks,
    sick_split,
    sts_sentences,
)

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class NliPairs(Section):
    """3-way labelled NLI pairs (data/nli/pairs.parquet) for train_intermediate, minus
    every pair sharing a sentence with an `exclude_sts` set."""

    source: Literal["sick", "multinli"] = param(
        help="sick (offline: SICK's `splits`) or multinli (MNLI's train split, fetched)"
    )
    splits: list[SickSplit] = param(help="SICK splits read")
    exclude_sts: list[StsSet] = param(
        help="STS sets whose sentences no kept pair contains; [] = none"
    )
    match: Match = param(
        help="sentence comparison: folded (lower case, no punctuation) or stripped only"
    )
    max_pairs: int | None = param(
        min=3, help="seeded sample of the kept pairs, stratified by label; null = all"
    )


class Params(RunWide):
    """What stage nli_pairs reads of params.yaml: the run-wide keys and these."""

    nli_pairs: NliPairs


log = logging.getLogger("nli_pairs")

KEY_FIGURES = ("n_kept",)  # dvc.yaml's metrics (paracl.core.key_figures)
LABELS = ("entailment", "neutral", "contradiction")  # the label ids of tasks.NLI, in order
TEXT = ("sentence1", "sentence2")
MULTINLI = "multinli/multinli_1.0/multinli_1.0_train.jsonl"  # fetch source multinli
PAIRS = pa.schema(
    [
        ("sentence1", pa.string()),
        ("sentence2", pa.string()),
        ("label", pa.string()),
        ("pair_id", pa.int64()),
        ("split", pa.string()),
    ]
)


def sick_pairs(sick: pd.DataFrame, splits: list[str]) -> pd.DataFrame:
    """SICK's pairs of `splits` (readers.read_sick's frame: labels lower-cased, as the
    evaluation's NLI tasks name them, and checked) as PAIRS rows, by pair id."""
    rows = sick_split(sick, splits)
    return rows.assign(label=rows["entailment"])[PAIRS.names]


def read_pairs(source: str, raw_dir, splits: list[str]) -> pd.DataFrame:
    """PAIRS rows of `source`: SICK's `splits`, or MNLI's train split (paper-en: the
    paper's intermediate task; its dev_matched is the MNLI task's test), pair_id its row."""
    from paracl.parts.evaluation.readers import read_sick, read_snli

    if source == "sick":
        return sick_pairs(read_sick(f"{raw_dir}/{SICK_FILE}"), splits)
    frame = read_snli(f"{raw_dir}/{MULTINLI}")
    frame["pair_id"], frame["split"] = range(len(frame)), "train"
    return frame[PAIRS.names]


def check_cfg(cfg: dict) -> None:
    """The section's values across keys: a one-line error naming the key."""
    if not cfg["splits"]:
        raise ParamsError("params.yaml: 'nli_pairs.splits' lists no split")
    check_names(list(cfg["splits"]), "nli_pairs.splits", SICK_SPLITS)
    check_names(list(cfg["exclude_sts"]), "nli_pairs.exclude_sts")


def build(cfg: dict, raw_dir, out, seed: int) -> dict:
    """SICK's pairs less those leaking into `exclude_sts`, a seeded label-stratified sample
    of `max_pairs`, written to `out` atomically; returns the metrics record."""
    from paracl.parts.evaluation.sample import sample_rows
    from paracl.parts.evaluation.unsup_sts import sts_sets

    check_cfg(cfg)
    splits, exclude, match = list(cfg["splits"]), list(cfg["exclude_sts"]), cfg["match"]
    pairs = read_pairs(cfg["source"], raw_dir, splits)
    sets = sts_sets("en", raw_dir) if exclude else {}
    chosen = sts_sentences({n: sets[n] for n in exclude}, match)
    kept, leaked = drop_leaks(pairs, TEXT, chosen, match)
    n_dropped = len(pairs) - len(kept)
    kept, sample = sample_rows(kept, cfg["max_pairs"], seed, "label")
    record = {
        "source": cfg["source"],
        "splits": splits if cfg["source"] == "sick" else ["train"],
        "exclude_sts": exclude,
        "match": match,
        "n_read": len(pairs),
        "n_leaking": leaked,
        "n_dropped": n_dropped,
        "max_pairs": cfg["max_pairs"],
        "n_kept": len(kept),
        "labels": {label: int((kept["label"] == label).sum()) for label in LABELS},
        "sample": sample,
    }
    write_parquet(kept, out, PAIRS, metadata=record)
    return record


def main(params: dict) -> None:
    """nli_pairs RAW OUT METRICS: the source's labelled pairs into OUT, counts into METRICS."""
    paths = args("raw", "out", "metrics")
    record = build(params["nli_pairs"], paths.raw, paths.out, params["seed"])
    write_metrics(record, paths.metrics, KEY_FIGURES)
    log.info("%d of %d pairs kept %s; dropped %d sharing a sentence with %s",
             record["n_kept"], record["n_read"], record["labels"], record["n_dropped"],
             record["exclude_sts"])  # fmt: skip
