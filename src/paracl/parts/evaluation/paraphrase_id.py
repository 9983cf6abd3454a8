"""Paraphrase identification with a bi-encoder and a cosine threshold.

As in the cross-lingual PI paper (§IV-A, "Max accuracy"): a pair is a paraphrase when
the cosine of its two embeddings is at least a threshold; the threshold is the one that
maximises accuracy on the dev set ("the best accuracy on the dev set"), and accuracy
is then reported on test. PAWS (en): PAWS-Wiki's official dev (8,000 pairs) and test
(8,000). A task without an official dev file has nothing trained here, so all its
non-test pairs are held out: MRPC's threshold is chosen on its official train split,
and an offline re-split (PAWS-X ja: its dev file only) on train ∪ dev of the re-split.
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

PI_SETS = {"en": ("paws", "mrpc"), "ja": ("pawsx_ja",)}


def evaluate_pi(
    cache: EmbeddingCache, data: TaskData, max_pairs: int | None = None, seed: int = 0
) -> dict:
    """Threshold on dev, then accuracy/F1 ×100 on test, plus align/uniform."""
    held_out = data.dev if data.official_dev else pd.concat([data.train, data.dev])
    held_out = held_out.reset_index(drop=True)
    select, select_sample = sample_rows(held_out, max_pairs, seed, "label")
    test, test_sample = sample_rows(data.test, max_pairs, seed, "label")
    y_sel = select["label"].astype(int).to_numpy()
    y_test = test["label"].astype(int).to_numpy()
    cos_sel = cache.cosine(select["sentence1"].tolist(), select["sentence2"].tolist())
    cos_test = cache.cosine(test["sentence1"].tolist(), test["sentence2"].tolist())
    threshold, sel_acc = best_threshold(cos_sel, y_sel)
    pred = (cos_test >= threshold).astype(int)
    pos = test[y_test == 1]
    sents = sorted(set(test["sentence1"]) | set(test["sentence2"]))
    return {
        "threshold": threshold,
        "selection_accuracy": sel_acc,
        "accuracy": accuracy(pred, y_test),
        "f1": binary_f1(pred, y_test),
        "macro_f1": macro_f1(pred, y_test),
        "alignment": alignment(cache.embed(pos["sentence1"].tolist()),
                               cache.embed(pos["sentence2"].tolist())) if len(pos) else None,
        "uniformity": uniformity(cache.embed(sents)),
        "selection_pairs": len(select),
        "test_pairs": len(test),
        "test_positive_rate": float(np.mean(y_test) * 100),
        # the threshold set is the official dev or all official non-test data (MRPC's
        # train; PAWS offline: its re-split train ∪ dev is the official dev file), so the
        # split is official exactly when test is the official test.
        "official_split": data.official_test,
        "samples": {"threshold": select_sample, "test": test_sample},
        "provenance": {"threshold": "dev" if data.official_dev else "train ∪ dev",
                       **data.provenance},
    }  # fmt: skip
