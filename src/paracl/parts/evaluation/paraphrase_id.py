"""Paraphrase identification with a bi-encoder and a cosine threshold.

As in the cross-lingual PI paper (§IV-A, "Max accuracy"): a pair is a paraphrase when
the cosine of its two embeddings is at least a threshold; the threshold is the one that
maximises accuracy on the dev set ("the best accuracy on the dev set"), and accuracy
is then reported on test. PAWS (en): PAWS-Wiki's official dev (8,000 pairs) and test
(8,000). A task without an official dev file has nothing trained here, so all its
non-test pairs are held out: MRPC's threshold is chosen on its official train split,
and an offline re-split (PAWS-X ja: its dev file only) on train ∪ dev of the re-split.
A task whose train split trains the encoder (`paws_xling`: its dev is a fixed carve of
train, Task.fixed_carve) chooses on that dev alone, never on train or test.

A task with further sets (Task.eval_sets: Japanese, cross-lingual and translation pairs)
chooses its one threshold on dev pooled with each set's held-out counterpart
(Task.threshold_sets: the other half of PAWS-X dev, or PAWS-X's dev files where test is
scored), each sampled as its scored set is: the threshold is chosen on the mix of pairs
it is applied to, as the paper's dev set is drawn like its test set. Each set, and each
of Table II's classes (pi_classes.PI_CLASSES), gets its accuracy at that threshold and its ROC AUC,
which needs no threshold. Alignment (paraphrase pairs) and uniformity (all test
sentences) describe the embedding space (§IV-B, SimCSE's definitions).

`max_pairs` scores seeded samples (paracl.parts.evaluation.sample) of every set, each
stratified by label so that it keeps its positive rate; the result records the samples.
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
    roc_auc,
    uniformity,
)
from paracl.parts.evaluation.pi_classes import PI_CLASSES
from paracl.parts.evaluation.sample import sample_rows
from paracl.parts.evaluation.tasks import EN, TaskData


def evaluate_pi(
    cache: EmbeddingCache, data: TaskData, max_pairs: int | None = None, seed: int = 0
) -> dict:
    """Threshold on held-out pairs, then accuracy/F1/AUC ×100 on test (and each further
    set and class), plus align/uniform on test."""
    dev_only = data.official_dev or data.task.fixed_carve is not None
    held_out = data.dev if dev_only else pd.concat([data.train, data.dev])
    pools = {EN: held_out.reset_index(drop=True), **data.threshold_sets}
    chosen = {name: sample_rows(df, max_pairs, seed, "label") for name, df in pools.items()}
    scored = {EN: data.test, **data.eval_sets}
    drawn = {name: sample_rows(df, max_pairs, seed, "label") for name, df in scored.items()}
    cos_sel = {name: _cosine(cache, df) for name, (df, _) in chosen.items()}
    y_sel = np.concatenate([_gold(df) for df, _ in chosen.values()])
    threshold, sel_acc = best_threshold(np.concatenate(list(cos_sel.values())), y_sel)
    cos = {name: _cosine(cache, df) for name, (df, _) in drawn.items()}
    sets = {name: at_threshold(cos[name], _gold(df), threshold) for name, (df, _) in drawn.items()}
    test = drawn[EN][0]
    pos = test[_gold(test) == 1]
    sents = sorted(set(test["sentence1"]) | set(test["sentence2"]))
    further = {name: {**sets[name], "pairs": len(df), "sample": record,
                      **({"threshold_sample": chosen[name][1]} if name in chosen else {})}
               for name, (df, record) in drawn.items() if name != EN}  # fmt: skip
    return {
        "threshold": threshold,
        "selection_accuracy": sel_acc,
        **sets[EN],
        "alignment": alignment(
            cache.embed(pos["sentence1"].tolist()), cache.embed(pos["sentence2"].tolist())
        )
        if len(pos)
        else None,
        "uniformity": uniformity(cache.embed(sents)),
        "selection_pairs": len(y_sel),
        "test_pairs": len(test),
        "test_positive_rate": float(np.mean(_gold(test)) * 100),
        # the threshold set is the official dev or all official non-test data (MRPC's
        # train; PAWS offline: its re-split train ∪ dev is the official dev file), so the
        # split is official exactly when test is the official test.
        "official_split": data.official_test,
        "samples": {"threshold": chosen[EN][1], "test": drawn[EN][1]},
        "provenance": {"threshold": "dev" if dev_only else "train ∪ dev", **data.provenance},
        **_further(further, drawn, cos, threshold, list(chosen)),
    }


def _further(further: dict, drawn: dict, cos: dict, threshold: float, on: list[str]) -> dict:
    """The further sets' and classes' part of the result, where the task has further sets;
    `threshold_on` names the sets whose held-out pairs chose the threshold."""
    if not further:
        return {}
    return {"eval_sets": further, "classes": _classes(drawn, cos, threshold), "threshold_on": on}


def _cosine(cache: EmbeddingCache, pairs: pd.DataFrame) -> np.ndarray:
    return cache.cosine(pairs["sentence1"].tolist(), pairs["sentence2"].tolist())


def _gold(pairs: pd.DataFrame) -> np.ndarray:
    return pairs["label"].astype(int).to_numpy()


def at_threshold(cos: np.ndarray, gold: np.ndarray, threshold: float) -> dict:
    """Accuracy, F1 and macro-F1 ×100 of `cosine >= threshold` on labelled pairs, and the
    ROC AUC ×100 of the cosines (None where the pairs have one label)."""
    pred = (cos >= threshold).astype(int)
    return {"accuracy": accuracy(pred, gold), "f1": binary_f1(pred, gold),
            "macro_f1": macro_f1(pred, gold), "auc": roc_auc(cos, gold)}  # fmt: skip


def _classes(drawn: dict, cos: dict[str, np.ndarray], threshold: float) -> dict:
    """Table II's classes, each over its sets' scored pairs pooled: accuracy at the
    threshold, ROC AUC (None for inter-same: translations are all paraphrases), pairs."""
    out = {}
    for name, members in PI_CLASSES.items():
        if not all(k in drawn for k in members):
            continue
        gold = np.concatenate([_gold(drawn[k][0]) for k in members])
        scores = np.concatenate([cos[k] for k in members])
        pooled = at_threshold(scores, gold, threshold)
        out[name] = {"accuracy": pooled["accuracy"], "auc": pooled["auc"], "pairs": len(gold)}
    return out
