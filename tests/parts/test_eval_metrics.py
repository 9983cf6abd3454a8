"""Each evaluation metric against scipy/sklearn or a value worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from paracl.parts.evaluation import metrics as M

PRED = [0.1, 0.4, 0.35, 0.8, 0.7]
GOLD = [0.0, 1.0, 2.0, 4.0, 5.0]


def test_correlations_match_scipy_times_100():
    assert M.spearman(PRED, GOLD) == pytest.approx(stats.spearmanr(PRED, GOLD)[0] * 100)
    assert M.pearson(PRED, GOLD) == pytest.approx(stats.pearsonr(PRED, GOLD)[0] * 100)
    # by hand: ranks of PRED are 1,3,2,5,4 vs 1..5 → d² = 0+1+1+1+1 = 4 → 1 − 6·4/120
    assert M.spearman(PRED, GOLD) == pytest.approx((1 - 24 / 120) * 100)


def test_classification_metrics_match_sklearn_and_hand():
    gold = [0, 0, 1, 1, 2, 2]
    pred = [0, 1, 1, 1, 2, 0]
    assert M.accuracy(pred, gold) == pytest.approx(400 / 6)
    assert M.macro_f1(pred, gold) == pytest.approx(skm.f1_score(gold, pred, average="macro") * 100)
    # by hand: per-class F1 = 0.5, 0.8, 2/3 → macro 0.6556
    assert M.macro_f1(pred, gold) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3 * 100)
    # micro-F1 equals accuracy for single-label multi-class decisions
    assert M.micro_f1(pred, gold) == pytest.approx(M.accuracy(pred, gold))


def test_binary_f1_and_mcc():
    gold = [1, 1, 0, 0, 1, 0]
    pred = [1, 0, 0, 1, 1, 0]
    # tp=2 fp=1 fn=1 → F1 = 2/3; MCC = (2·2 − 1·1)/sqrt(3·3·3·3) = 1/3
    assert M.binary_f1(pred, gold) == pytest.approx(200 / 3)
    assert M.mcc(pred, gold) == pytest.approx(100 / 3)
    assert M.mcc(pred, gold) == pytest.approx(skm.matthews_corrcoef(gold, pred) * 100)


def test_retrieval_metrics_by_hand():
    ranked = [[0, 1, 0, 1, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
    assert M.mrr(ranked) == pytest.approx((0.5 + 1 + 0) / 3 * 100)
    # AP: q1 = (1/2 + 2/4)/2 = 0.5; q2 = 1; q3 = 0
    assert M.mean_average_precision(ranked) == pytest.approx(1.5 / 3 * 100)
    assert M.precision_at_k(ranked, 1) == pytest.approx(100 / 3)
    assert M.precision_at_k(ranked, 5) == pytest.approx((2 / 5 + 1 / 5) / 3 * 100)


def test_retrieval_from_scores_matches_sklearn_ap():
    rng = np.random.default_rng(0)
    scores = rng.random((4, 8))
    relevant = (rng.random((4, 8)) > 0.6).astype(int)
    relevant[:, 0] = 1  # every query has a relevant item
    out = M.retrieval_metrics(scores, relevant)
    ap = np.mean([skm.average_precision_score(relevant[i], scores[i]) for i in range(4)])
    assert out["map"] == pytest.approx(ap * 100)
    assert set(out) == {"mrr", "map", "p@1", "p@5"}


def test_alignment_and_uniformity_by_hand():
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    b = np.array([[0.0, 1.0], [0.0, 1.0]])
    # normalised: pair 1 distance² = 2, pair 2 distance² = 0 → mean 1
    assert M.alignment(a, b) == pytest.approx(1.0)
    x = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    # pair distances²: 4, 2, 2 → log mean exp(−2·d²)
    expected = math.log((math.exp(-8) + 2 * math.exp(-4)) / 3)
    assert M.uniformity(x) == pytest.approx(expected)


def test_best_threshold_maximises_dev_accuracy():
    scores = [0.1, 0.2, 0.3, 0.6, 0.7, 0.4]
    labels = [0, 0, 1, 1, 1, 0]
    t, acc = M.best_threshold(scores, labels)
    # sorted: .1(0) .2(0) .3(1) .4(0) .6(1) .7(1): cuts at .25 and at .5 both get 5/6
    # right; ties go to the lowest threshold
    assert t == pytest.approx(0.25)
    assert acc == pytest.approx(500 / 6)
    brute = max(np.mean((np.asarray(scores) >= c) == np.asarray(labels)) for c in scores)
    assert acc == pytest.approx(brute * 100)


def test_best_threshold_all_one_class():
    t, acc = M.best_threshold([0.2, 0.5], [1, 1])
    assert acc == 100.0 and t < 0.2


def test_summarize_seeds():
    s = M.summarize_seeds([1.0, 2.0, 6.0])
    assert s["mean"] == 3.0 and s["median"] == 2.0 and s["n"] == 3
    assert s["std"] == pytest.approx(np.std([1, 2, 6], ddof=1))
    assert M.summarize_seeds([5.0])["std"] == 0.0


def test_uniformity_thins_large_inputs_evenly():
    x = np.random.default_rng(1).normal(size=(5, 3))
    assert M.uniformity(x, max_points=3) == pytest.approx(M.uniformity(x[[0, 2, 4]]))
