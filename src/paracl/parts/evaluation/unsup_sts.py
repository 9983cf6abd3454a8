"""Unsupervised STS: cosine of the two embeddings against gold, Spearman ×100.

As SimCSE (Gao et al. 2021) reports it, in the "all" setting: for STS12–16 the
subsets of a year are concatenated and one Spearman is computed over all their pairs
(not the mean of per-subset correlations). STS-B and SICK-R use their test splits;
Japanese, JCSE's benchmark (its Table 3): STS12–16-ja (the JCSE authors' machine
translations, SentEval layout, paracl.parts.evaluation.jcse_readers), JSICK (test) and JSTS
(JGLUE v1.3 test); JCSE's STS-B translation is not in the mirror. JACSTS (`jacsts_sets`,
the clinical test and dev pairs, JCSE Table 6) is scored the same way. Alignment and
uniformity (Wang & Isola; SimCSE §5) are measured as SimCSE does: alignment on STS-B
test pairs with a gold score above 4, uniformity over all STS-B test sentences (JSTS
for Japanese).

`max_pairs` scores a seeded sample of each set instead of the whole set (paracl.
evaluation.sample): stratified by STS-B's genre, the subsets of an STS year and JACSTS's
gold score, so the sample has the set's mix; each set's result records the sample it took.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from paracl.core.languages import profile
from paracl.parts.evaluation import readers
from paracl.parts.evaluation.jcse_readers import identical_pairs, read_jacsts, read_sts_ja_year
from paracl.parts.evaluation.sample import sample_rows

if TYPE_CHECKING:  # torch, scipy and sklearn load where scores are computed: nli_triplets
    # and nli_pairs read the sets alone (sts_sets), ~5 s of imports less per process
    from paracl.parts.encoder.embed import EmbeddingCache

log = logging.getLogger(__name__)

YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")
STRATA = ("genre", "subset", "level")  # columns a set is sampled by (level: JACSTS's score)


def strata_column(df: pd.DataFrame) -> str | None:
    return next((c for c in STRATA if c in df.columns), None)


def _year(folder: Path) -> pd.DataFrame:
    """The subsets of one STS year, concatenated (SimCSE's "all"), each row its subset."""
    subsets = readers.read_sts_year(folder)
    return pd.concat([df.assign(subset=k) for k, df in subsets.items()], ignore_index=True)


def _english_sets(raw: Path) -> dict[str, pd.DataFrame]:
    sets = {y: _year(raw / "sts12-16" / f"{y}-en-test") for y in YEARS}
    sets["STSBenchmark"] = readers.read_stsb(raw / "stsbenchmark" / "sts-test.csv")
    sick = readers.read_sick(raw / "sick" / "SICK.txt")
    sets["SICKRelatedness"] = sick[sick["split"] == "test"][readers.COLUMNS]
    return sets


def _japanese_sets(raw: Path) -> dict[str, pd.DataFrame]:
    sets = {y: read_sts_ja_year(raw / "jcse" / f"{y}-ja-test") for y in YEARS}
    jsick = readers.read_jsick(raw / "jsick" / "jsick.tsv")
    sets["JSICK"] = jsick[jsick["split"] == "test"][readers.COLUMNS]
    sets["JSTS"] = readers.read_jglue(raw / "jglue" / "jsts-v1.3" / "test-v1.3.json")
    return sets


# A profile's `unsup_sts_sets` names one of these (data/raw -> name -> pairs).
SETS = {"sts12-16": _english_sets, "jcse": _japanese_sets}


def sts_sets(lang: str, raw_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The unsupervised STS sets of a language, name → pairs (sentence1, sentence2, label)."""
    return SETS[profile(lang).unsup_sts_sets](Path(raw_dir))


def jacsts_sets(raw_dir: str | Path) -> dict[str, pd.DataFrame]:
    """JACSTS test and dev (JCSE Table 6), each pair's gold score as its sampling stratum."""
    folder = Path(raw_dir) / "jcse" / "JAC-STS"
    return {
        split: (df := read_jacsts(folder / f"JAC-sts-{split}.csv")).assign(
            level=df["label"].astype(int).astype(str)
        )
        for split in ("test", "dev")
    }


def evaluate_unsup_sts(
    cache: EmbeddingCache,
    sets: dict[str, pd.DataFrame],
    max_pairs: int | None = None,
    seed: int = 0,
) -> dict:
    """Spearman/Pearson ×100 of cosine vs gold per set, their average, and align/uniform.

    `max_pairs` scores a seeded stratified sample of each set; null = the whole set.
    """
    from paracl.parts.evaluation.metrics import alignment, pearson, spearman, uniformity

    samples = {k: sample_rows(v, max_pairs, seed, strata_column(v)) for k, v in sets.items()}
    frames = {k: df for k, (df, _) in samples.items()}
    # Encode every unique sentence of every set in one batched pass first.
    all_sents = sorted({s for df in frames.values() for c in ("sentence1", "sentence2")
                        for s in df[c]})  # fmt: skip
    cache.embed(all_sents)
    results = {}
    for name, df in frames.items():
        cos = cache.cosine(df["sentence1"].tolist(), df["sentence2"].tolist())
        gold = df["label"].to_numpy(dtype=float)
        results[name] = {
            "spearman": spearman(cos, gold),
            "pearson": pearson(cos, gold),
            "pairs": len(df),
            "identical_pairs": identical_pairs(df),  # cosine 1 whatever the encoder
            "sample": samples[name][1],
        }
    avg = float(np.mean([r["spearman"] for r in results.values()]))
    anchor = next((n for n in ("STSBenchmark", "JSTS") if n in frames), next(iter(frames)))
    df = frames[anchor]
    pos = df[df["label"].astype(float) > 4.0]
    space = {
        "set": anchor,
        "alignment": alignment(cache.embed(pos["sentence1"].tolist()),
                               cache.embed(pos["sentence2"].tolist())) if len(pos) else None,
        "uniformity": uniformity(cache.embed(sorted(set(df["sentence1"]) | set(df["sentence2"])))),
        "positive_pairs": len(pos),
    }  # fmt: skip
    return {
        "sets": results,
        "avg_spearman": avg,
        "embedding_space": space,
        "unique_sentences": len(all_sents),
        "total_sentences": int(sum(2 * len(df) for df in frames.values())),
        "max_pairs": max_pairs,
    }


# -- which STS sets a run is scored on (training data checked against them) ------------
# A training input derived from an NLI set records, in its Parquet metadata, the STS sets
# its rows were checked against (nli_triplets.exclude_sts: no kept triplet shares a
# sentence with one) and its source. evaluate.exclude_sts leaves sets out of every run's
# score alike; a run is never scored on a set its data was not checked against.
SOURCE_NAMES = {"sick": "SICK", "simcse-nli": "MNLI + SNLI"}  # how a reason names a source


def scored_sets(
    names: list[str], exclude: list[str], trained: dict | None, run: str
) -> tuple[list[str], dict[str, str]]:
    """The sets of `names` a run is scored on, and each excluded set with the reason its
    cell shows instead of a number. `trained`: the run's training-data record (source,
    exclude_sts) or None (data never checked: no NLI set behind it). A scored set the
    data was not checked against is refused, naming evaluate.exclude_sts: training on a
    pair whose sentence a scored set holds would leak."""
    from paracl.core.errors import ParamsError

    unknown = [n for n in exclude if n not in names]
    if unknown:
        raise ParamsError(
            f"evaluate.exclude_sts: no STS set {unknown[0]!r} (known: {', '.join(names)})"
        )
    scored = [n for n in names if n not in exclude]
    checked = None if trained is None else set(trained.get("exclude_sts") or ())
    source = SOURCE_NAMES.get((trained or {}).get("source"), (trained or {}).get("source"))
    leaking = [n for n in scored if checked is not None and n not in checked]
    if leaking:
        raise ParamsError(
            f"evaluate.exclude_sts: run {run} trained on {source} data checked against "
            f"{sorted(checked) or 'no STS set'} only, so it cannot be scored on {leaking[0]}: "
            f"list {leaking[0]} in evaluate.exclude_sts (or in nli_triplets.exclude_sts)"
        )
    reasons = {
        n: f"trained on {source}: not scored (evaluate.exclude_sts)"
        if checked is not None and n not in checked
        else "not scored for any row (evaluate.exclude_sts), like for like"
        for n in names
        if n in exclude
    }
    return scored, reasons
