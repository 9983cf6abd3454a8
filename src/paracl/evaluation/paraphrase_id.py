"""Paraphrase identification with a bi-encoder and a cosine threshold.

As in the cross-lingual PI paper (§IV-A, "Max accuracy"): a pair is a paraphrase when
the cosine of its two embeddings is at least a threshold; the threshold is the one that
maximises accuracy on held-out labelled pairs, and accuracy is then reported on test.
No parameter is trained, so the threshold is chosen on train ∪ dev of the task (both
disjoint from test), which for MRPC is its official train split and for PAWS-X the
seeded re-split of its dev set. Alignment (paraphrase pairs) and uniformity (all test
sentences) describe the embedding space (§IV-B, SimCSE's definitions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paracl.evaluation.encoder import EmbeddingCache
from paracl.evaluation.metrics import (
    accuracy,
    alignment,
    best_threshold,
    binary_f1,
    macro_f1,
    uniformity,
)
from paracl.evaluation.tasks import TaskData

PI_SETS = {"en": ("paws", "mrpc"), "ja": ("pawsx_ja",)}


def evaluate_pi(cache: EmbeddingCache, data: TaskData, max_pairs: int | None = None) -> dict:
    """Threshold on train ∪ dev, then accuracy/F1 ×100 on test, plus align/uniform."""
    select = pd.concat([data.train, data.dev], ignore_index=True)
    test = data.test
    if max_pairs is not None:
        select, test = select.head(max_pairs), test.head(max_pairs)
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
        # train ∪ dev is all official non-test data even where dev was carved from train
        # (MRPC), so the split is official exactly when test is the official test.
        "official_split": data.official_test,
        "provenance": {"threshold": "train ∪ dev", **data.provenance},
    }  # fmt: skip
