"""Unsupervised STS: cosine of the two embeddings against gold, Spearman ×100.

As SimCSE (Gao et al. 2021) reports it, in the "all" setting: for STS12–16 the
subsets of a year are concatenated and one Spearman is computed over all their pairs
(not the mean of per-subset correlations). STS-B and SICK-R use their test splits;
Japanese: JSTS (JGLUE v1.3 test) and JSICK (test). Alignment and uniformity (Wang &
Isola; SimCSE §5) are measured as SimCSE does: alignment on STS-B test pairs with a
gold score above 4, uniformity over all STS-B test sentences (JSTS for Japanese).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from paracl.evaluation import readers
from paracl.evaluation.encoder import EmbeddingCache
from paracl.evaluation.metrics import alignment, pearson, spearman, uniformity

log = logging.getLogger(__name__)

YEARS = ("STS12", "STS13", "STS14", "STS15", "STS16")


def sts_sets(lang: str, raw_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The unsupervised STS sets of a language, name → pairs (sentence1, sentence2, label)."""
    raw = Path(raw_dir)
    if lang == "en":
        sets = {
            y: pd.concat(readers.read_sts_year(raw / "sts12-16" / f"{y}-en-test").values(),
                         ignore_index=True)
            for y in YEARS
        }  # fmt: skip
        sets["STSBenchmark"] = readers.read_stsb(raw / "stsbenchmark" / "sts-test.csv")
        sick = readers.read_sick(raw / "sick" / "SICK.txt")
        sets["SICKRelatedness"] = sick[sick["split"] == "test"][readers.COLUMNS]
        return sets
    if lang == "ja":
        jsick = readers.read_jsick(raw / "jsick" / "jsick.tsv")
        return {
            "JSTS": readers.read_jglue(raw / "jglue" / "jsts-v1.3" / "test-v1.3.json"),
            "JSICK": jsick[jsick["split"] == "test"][readers.COLUMNS],
        }
    raise ValueError(f"no unsupervised STS sets for lang {lang!r}")


def evaluate_unsup_sts(
    cache: EmbeddingCache, sets: dict[str, pd.DataFrame], max_pairs: int | None = None
) -> dict:
    """Spearman/Pearson ×100 of cosine vs gold per set, their average, and align/uniform.

    `max_pairs` caps each set (first rows, for quick tests); metrics say when it did.
    """
    # Encode every unique sentence of every set in one batched pass first.
    frames = {k: (v if max_pairs is None else v.head(max_pairs)) for k, v in sets.items()}
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
        }
    avg = float(np.mean([r["spearman"] for r in results.values()]))
    anchor = "STSBenchmark" if "STSBenchmark" in frames else next(iter(frames))
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
