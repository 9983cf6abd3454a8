"""Metrics of sentence-pair evaluation, as the papers report them.

Correlations are ×100 (SimCSE/SentEval convention); F1, accuracy and MCC are ×100 too,
so that one table mixes them without a second scale. Each function takes plain arrays
and is tested against scipy/sklearn or a value worked out by hand. scipy and sklearn
load in the functions that call them, so a stage that scores no such metric starts
without them (~0.8 CPU-s a process).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def spearman(pred: Sequence[float], gold: Sequence[float]) -> float:
    """Spearman's rank correlation ×100 (ties get average ranks, as scipy does)."""
    from scipy import stats

    return float(stats.spearmanr(pred, gold).statistic * 100)


def pearson(pred: Sequence[float], gold: Sequence[float]) -> float:
    """Pearson's correlation ×100."""
    from scipy import stats

    return float(stats.pearsonr(pred, gold).statistic * 100)


def accuracy(pred: Sequence, gold: Sequence) -> float:
    from sklearn import metrics as skm

    return float(skm.accuracy_score(gold, pred) * 100)


def macro_f1(pred: Sequence, gold: Sequence) -> float:
    """F1 averaged over classes (each class counts the same; SNLI/SICK-E/PAWS)."""
    from sklearn import metrics as skm

    return float(skm.f1_score(gold, pred, average="macro") * 100)


def micro_f1(pred: Sequence, gold: Sequence) -> float:
    """F1 over all decisions pooled (Shopping Queries ESCI, 4 classes)."""
    from sklearn import metrics as skm

    return float(skm.f1_score(gold, pred, average="micro") * 100)


def binary_f1(pred: Sequence, gold: Sequence) -> float:
    """F1 of the positive class 1 (GLUE MRPC/QQP)."""
    from sklearn import metrics as skm

    return float(skm.f1_score(gold, pred, average="binary", pos_label=1) * 100)


def mcc(pred: Sequence, gold: Sequence) -> float:
    """Matthews correlation ×100 (GLUE CoLA)."""
    from sklearn import metrics as skm

    return float(skm.matthews_corrcoef(gold, pred) * 100)


METRICS = {
    "spearman": spearman,
    "pearson": pearson,
    "accuracy": accuracy,
    "macro_f1": macro_f1,
    "micro_f1": micro_f1,
    "f1": binary_f1,
    "mcc": mcc,
}


# -- retrieval: `ranked` is one list of relevance flags per query, best-scored first --


def mrr(ranked: Sequence[Sequence[int]]) -> float:
    """Mean reciprocal rank of the first relevant item (0 for a query with none) ×100."""
    total = 0.0
    for flags in ranked:
        hits = np.flatnonzero(np.asarray(flags) > 0)
        total += 1.0 / (hits[0] + 1) if hits.size else 0.0
    return total / len(ranked) * 100


def mean_average_precision(ranked: Sequence[Sequence[int]]) -> float:
    """MAP ×100: per query, the mean of precision@k at each relevant position k."""
    total = 0.0
    for flags in ranked:
        rel = np.asarray(flags) > 0
        if rel.any():
            prec = np.cumsum(rel) / np.arange(1, rel.size + 1)
            total += float(prec[rel].mean())
    return total / len(ranked) * 100


def precision_at_k(ranked: Sequence[Sequence[int]], k: int) -> float:
    """P@k ×100: the share of relevant items among each query's top k (k in the divisor)."""
    return float(np.mean([np.sum(np.asarray(f[:k]) > 0) / k for f in ranked]) * 100)


def rank_by_score(scores: np.ndarray, relevant: np.ndarray) -> list[list[int]]:
    """Relevance flags of each query's candidates, sorted by descending score.

    `scores` and `relevant` are (queries × candidates); ties keep candidate order
    (stable sort) so that the result does not depend on the platform.
    """
    order = np.argsort(-scores, axis=1, kind="stable")
    return np.take_along_axis(relevant, order, axis=1).tolist()


def retrieval_metrics(scores: np.ndarray, relevant: np.ndarray) -> dict[str, float]:
    ranked = rank_by_score(np.asarray(scores), np.asarray(relevant))
    return {
        "mrr": mrr(ranked),
        "map": mean_average_precision(ranked),
        "p@1": precision_at_k(ranked, 1),
        "p@5": precision_at_k(ranked, 5),
    }


# -- embedding space (Wang & Isola 2020, as SimCSE uses them) --


def _normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True).clip(min=1e-12)


def alignment(a: np.ndarray, b: np.ndarray, alpha: float = 2.0) -> float:
    """E ||f(x) − f(x⁺)||^α over positive pairs (rows of a and b), normalised embeddings."""
    d = np.linalg.norm(_normalize(a) - _normalize(b), axis=1)
    return float(np.mean(d**alpha))


def uniformity(x: np.ndarray, t: float = 2.0, max_points: int = 4000) -> float:
    """log E exp(−t ||f(x) − f(y)||²) over all distinct pairs of rows, normalised.

    The pairwise matrix is quadratic in memory, so above `max_points` rows an evenly
    spaced (deterministic) subset of rows is used.
    """
    z = _normalize(x)
    if len(z) > max_points:
        z = z[np.linspace(0, len(z) - 1, max_points).astype(int)]
    sq = np.clip(2.0 - 2.0 * z @ z.T, 0.0, None)  # ||u − v||² for unit vectors
    iu = np.triu_indices(len(z), k=1)
    return float(np.log(np.mean(np.exp(-t * sq[iu]))))


# -- paraphrase identification by a cosine threshold (cross-lingual PI paper §IV-A) --


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """The threshold on `scores` that maximises accuracy of `score >= t → 1` ("Max accuracy").

    Candidates are midpoints between consecutive distinct sorted scores (plus one below
    all and one above all), so the chosen threshold generalises to unseen scores instead
    of sitting exactly on a dev example. Returns (threshold, dev accuracy ×100); ties go
    to the lowest threshold.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(int)
    uniq = np.unique(s)
    cands = np.concatenate([[uniq[0] - 1.0], (uniq[1:] + uniq[:-1]) / 2, [uniq[-1] + 1.0]])
    order = np.argsort(s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    # For threshold c: predicted 1 iff s >= c. Count correct = negatives below c +
    # positives at or above c, using searchsorted on the sorted scores.
    neg_below = np.concatenate([[0], np.cumsum(y_sorted == 0)])
    pos_total = int(y.sum())
    pos_below = np.concatenate([[0], np.cumsum(y_sorted == 1)])
    idx = np.searchsorted(s_sorted, cands, side="left")
    correct = neg_below[idx] + (pos_total - pos_below[idx])
    best = int(np.argmax(correct))
    return float(cands[best]), float(correct[best] / len(s) * 100)


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """ROC AUC ×100 of `scores` against 0/1 labels: how well the scores rank paraphrases
    above non-paraphrases at every threshold at once, so a threshold that does not transfer
    (one chosen on other pairs) cannot hide a ranking that does. None where the pairs have
    one label only (a sentence and its translation: all paraphrases)."""
    from sklearn import metrics as skm

    y = np.asarray(labels).astype(int)
    if len(np.unique(y)) < 2:
        return None
    return float(skm.roc_auc_score(y, np.asarray(scores, dtype=np.float64)) * 100)


def summarize_seeds(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (0 for one seed), median, min and max."""
    v = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(v.mean()),
        "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
        "median": float(np.median(v)),
        "min": float(v.min()),
        "max": float(v.max()),
        "n": int(v.size),
    }
