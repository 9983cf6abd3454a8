"""Paraphrase identification with a bi-encoder and a cosine threshold.

As in the cross-lingual PI paper (§IV-A, "Max accuracy"): a pair is a paraphrase when
the cosine of its two embeddings is at least a threshold; the threshold is the one that
maximises accuracy on the dev set ("the best accuracy on the dev set"), and accuracy
is then reported on test. PAWS (en): PAWS-Wiki's official dev (8,000 pairs) and test
(8,000). A task without an official dev file has nothing trained here, so all its
non-test pairs are held out: MRPC's threshold is chosen on its official train split,
and an offline re-split (PAWS-X ja: its dev file only) on train ∪ dev of the re-split.
A task whose train split trains the encoder (`paws_xling`: its dev is a fixed carve of
train, Task.fixed_carve) chooses on that dev alone, never on train or test. The task's
further sets (Task.eval_sets: zero-shot Japanese, cross-lingual pairs) are scored at the
same threshold: the one chosen on held-out English pairs.
Alignment (paraphrase pairs) and uniformity (all test sentences) describe the embedding
space (§IV-B, SimCSE's definitions).

`max_pairs` scores seeded samples (paracl.parts.evaluation.sample) of the threshold set and of
test, each stratified by label so that both keep their positive rate; the result
records the samples taken.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paracl.parts.encoder.embed import EmbeddingCache
from paracl.parts.evaluation.metrics import (
    accuracy,
    alignment,
    best_threshold,
    binary_f1,
    macro_f1,
    uniformity,
)
from paracl.parts.evaluation.sample import sample_rows
from paracl.parts.evaluation.tasks import TaskData


def evaluate_pi(
    cache: EmbeddingCache, data: TaskData, max_pairs: int | None = None, seed: int = 0
) -> dict:
    """Threshold on dev, then accuracy/F1 ×100 on test (and each eval set), plus
    align/uniform on test."""
    dev_only = data.official_dev or data.task.fixed_carve is not None
    held_out = data.dev if dev_only else pd.concat([data.train, data.dev])
    held_out = held_out.reset_index(drop=True)
    select, select_sample = sample_rows(held_out, max_pairs, seed, "label")
    test, test_sample = sample_rows(data.test, max_pairs, seed, "label")
    y_sel = select["label"].astype(int).to_numpy()
    y_test = test["label"].astype(int).to_numpy()
    cos_sel = cache.cosine(select["sentence1"].tolist(), select["sentence2"].tolist())
    threshold, sel_acc = best_threshold(cos_sel, y_sel)
    scored = at_threshold(cache, test, threshold)
    pos = test[y_test == 1]
    sents = sorted(set(test["sentence1"]) | set(test["sentence2"]))
    eval_sets = {}
    for name, df in data.eval_sets.items():
        sample, record = sample_rows(df, max_pairs, seed, "label")
        eval_sets[name] = {**at_threshold(cache, sample, threshold), "pairs": len(sample),
                           "sample": record}  # fmt: skip
    return {
        "threshold": threshold,
        "selection_accuracy": sel_acc,
        **scored,
        "alignment": alignment(
            cache.embed(pos["sentence1"].tolist()), cache.embed(pos["sentence2"].tolist())
        )
        if len(pos)
        else None,
        "uniformity": uniformity(cache.embed(sents)),
        "selection_pairs": len(select),
        "test_pairs": len(test),
        "test_positive_rate": float(np.mean(y_test) * 100),
        # the threshold set is the official dev or all official non-test data (MRPC's
        # train; PAWS offline: its re-split train ∪ dev is the official dev file), so the
        # split is official exactly when test is the official test.
        "official_split": data.official_test,
        "samples": {"threshold": select_sample, "test": test_sample},
        "provenance": {"threshold": "dev" if dev_only else "train ∪ dev", **data.provenance},
        **({"eval_sets": eval_sets} if eval_sets else {}),
    }


def at_threshold(cache: EmbeddingCache, pairs: pd.DataFrame, threshold: float) -> dict:
    """Accuracy, F1 and macro-F1 ×100 of `cosine >= threshold` on labelled pairs."""
    gold = pairs["label"].astype(int).to_numpy()
    cos = cache.cosine(pairs["sentence1"].tolist(), pairs["sentence2"].tolist())
    pred = (cos >= threshold).astype(int)
    return {"accuracy": accuracy(pred, gold), "f1": binary_f1(pred, gold),
            "macro_f1": macro_f1(pred, gold)}  # fmt: skip
