"""Each loss against a value computed by hand on small tensors."""

from __future__ import annotations

import math

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from paracl.parts.losses import AdditiveMarginScaleLoss, WeightedHardNegativeLoss
from paracl.parts.losses.ebsim_triplet import EbsimTripletLoss, triplet_margin

# unit vectors in 2-D: cosines are easy to write down
A = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
P = torch.tensor(
    [[0.6, 0.8], [0.8, 0.6]]
)  # cos(a0,p0)=.6 cos(a0,p1)=.8 cos(a1,p0)=.8 cos(a1,p1)=.6
N = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cos(a0,n0)=1 cos(a0,n1)=0 cos(a1,n0)=0 cos(a1,n1)=1


def _nll(pos: float, others: list[float]) -> float:
    return -math.log(math.exp(pos) / (math.exp(pos) + sum(math.exp(o) for o in others)))


def _simcse_loss(a, p, n, t: float, w: float) -> float:
    """SimCSE's cl_forward (simcse/models.py, as JCSE runs it): cosine / temperature, w
    added to each anchor's own hard-negative logit, cross-entropy on the diagonal."""
    cos = torch.nn.functional.cosine_similarity
    logits = torch.cat([cos(a[:, None], p[None], dim=-1), cos(a[:, None], n[None], dim=-1)], 1)
    logits = logits / t
    logits[:, a.size(0) :] += w * torch.eye(a.size(0))
    return torch.nn.functional.cross_entropy(logits, torch.arange(a.size(0))).item()


@pytest.mark.parametrize("w", [0.0, 1.0])
def test_jcse_adds_the_weight_to_the_own_hard_negative_logit(w):
    """By hand: each anchor's own negative is the anchor itself (cosine 1), so the
    weight on its logit decides the loss."""
    t = 0.5
    loss = WeightedHardNegativeLoss(temperature=t, hard_negative_weight=w)(A, P, N)
    # row 0: positives .6 (own), .8; hard negatives: own 1.0 (+ w), other 0.0
    row = _nll(0.6 / t, [0.8 / t, 1.0 / t + w, 0.0 / t])  # row 1 is row 0 mirrored
    assert loss.item() == pytest.approx(row, rel=1e-6)


def test_jcse_weight_matters_and_zero_is_mnrl_with_negatives():
    """On random embeddings whose own negatives sit close to their anchors: the loss is
    SimCSE's for every weight, weight 1 (stage two) is well above weight 0 (stage one),
    and weight 0 is sentence-transformers' MNRL with a negatives column."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(8, 16, generator=gen)
    p = a + 0.8 * torch.randn(8, 16, generator=gen)
    n = a + 0.3 * torch.randn(8, 16, generator=gen)  # closer to the anchor than p
    t = 0.05
    losses = {}
    for w in (0.0, 1.0, -0.5):
        losses[w] = WeightedHardNegativeLoss(t, hard_negative_weight=w)(a, p, n).item()
        assert losses[w] == pytest.approx(_simcse_loss(a, p, n, t, w), rel=1e-5)
    assert losses[1.0] > losses[0.0] + 0.5 and losses[0.0] > losses[-0.5] + 0.2
    mnrl = MultipleNegativesRankingLoss(model=None, scale=1 / t)
    assert losses[0.0] == pytest.approx(
        mnrl.compute_loss_from_embeddings([a, p, n], None).item(), rel=1e-5
    )


def test_jcse_old_alpha_key_names_its_replacement():
    from paracl.core.params import ParamsError
    from paracl.stages.train_contrastive.training.methods import method_spec

    entry = {"loss": "jcse", "input": "x.parquet", "alpha": 0.0}
    with pytest.raises(ParamsError, match=r"jcse\.alpha' was replaced by hard_negative_weight"):
        method_spec("jcse", entry)
    spec = method_spec("jcse", {"loss": "jcse", "input": "x", "hard_negative_weight": 1})
    assert spec.params.hard_negative_weight == 1


def test_additive_margin_by_hand():
    m, s, g = 0.5, 2.0, 0.5
    hard = torch.tensor([[1.0, 0.0]])  # cos(a0,h)=1, cos(a1,h)=0
    loss = AdditiveMarginScaleLoss(margin=m, scale=s, gamma=g)(A, P, hard)
    phi = math.acos(0.6)
    pos = s * math.cos(phi + m)
    row0 = -math.log(math.exp(pos) / (math.exp(pos) + math.exp(s * 0.8) + g * math.exp(s * 1.0)))
    row1 = -math.log(math.exp(pos) / (math.exp(pos) + math.exp(s * 0.8) + g * math.exp(0.0)))
    assert loss.item() == pytest.approx((row0 + row1) / 2, rel=1e-5)


def test_additive_margin_zero_margin_no_hard_is_infonce():
    loss = AdditiveMarginScaleLoss(margin=0.0, scale=3.0, gamma=1.0)(A, P, None)
    mnrl = MultipleNegativesRankingLoss(model=None, scale=3.0)
    assert loss.item() == pytest.approx(
        mnrl.compute_loss_from_embeddings([A, P], None).item(), rel=1e-5
    )


def test_margin_makes_loss_larger():
    small = AdditiveMarginScaleLoss(margin=0.0, scale=5.0)(A, P)
    big = AdditiveMarginScaleLoss(margin=0.5, scale=5.0)(A, P)
    assert big.item() > small.item()


def test_ebsim_triplet_margin_by_hand():
    xi_pos = torch.tensor([-0.2, -0.9])
    xi_neg = torch.tensor([-0.7, -0.1])
    # max(-0.7 + 0.2 + 1, 0) = 0.5 ; max(-0.1 + 0.9 + 1, 0) = 1.8
    assert triplet_margin(xi_pos, xi_neg, 1.0).item() == pytest.approx((0.5 + 1.8) / 2)
    assert triplet_margin(xi_pos, xi_neg, 0.0).item() == pytest.approx((0.0 + 0.8) / 2)


def test_ebsim_heads_and_ablation():
    torch.manual_seed(0)
    hidden = torch.randn(3, 6, 8)
    mask_a = torch.tensor([[0, 1, 1, 0, 0, 0]] * 3, dtype=torch.bool)
    mask_b = torch.tensor([[0, 0, 0, 1, 1, 0]] * 3, dtype=torch.bool)
    first = torch.zeros(3, dtype=torch.long)
    full = EbsimTripletLoss(8, ("ra", "aa"))
    scores = full.scores(hidden, mask_a, mask_b, first)
    assert set(scores) == {"ra", "aa"}
    assert ((scores["ra"] <= 0) & (scores["ra"] >= -1)).all()  # xi_RA = -sigmoid
    assert ((scores["aa"] >= 0) & (scores["aa"] <= 1)).all()
    only_ra = EbsimTripletLoss(8, ("ra",))
    assert set(only_ra.scores(hidden, mask_a, mask_b, first)) == {"ra"}
    with pytest.raises(ValueError):
        EbsimTripletLoss(8, ())


def test_ebsim_heads_train_on_states_of_any_scale():
    """gemma's final states are ~100x BERT's; on raw states AA's sigmoid sat at 0 and
    gave no gradient (ebsim == ebsim_no_aa). Standardised, both aspects stay in range and
    pass a gradient to the encoder's states whatever their scale."""
    torch.manual_seed(0)
    mask_a = torch.tensor([[0, 1, 1, 0, 0, 0]] * 4, dtype=torch.bool)
    mask_b = torch.tensor([[0, 0, 0, 1, 1, 1]] * 4, dtype=torch.bool)
    last = torch.full((4,), 5)
    loss_fn = EbsimTripletLoss(64, ("ra", "aa"))
    for scale in (1.0, 300.0):
        pos = (torch.randn(4, 6, 64) * scale).requires_grad_()
        neg = (torch.randn(4, 6, 64) * scale).requires_grad_()
        xi_pos = loss_fn.scores(pos, mask_a, mask_b, last)
        xi_neg = loss_fn.scores(neg, mask_a, mask_b, last)
        assert ((xi_pos["aa"] > 0.01) & (xi_pos["aa"] < 0.99)).all(), (scale, xi_pos["aa"])
        for aspect in ("ra", "aa"):
            (grad,) = torch.autograd.grad(
                triplet_margin(xi_pos[aspect], xi_neg[aspect], 1.0), pos, retain_graph=True
            )
            assert grad.abs().sum() > 0, (scale, aspect)


def test_ebsim_summary_token_is_cls_or_a_causal_lms_last_real_token():
    """A causal LM's first position has read nothing of the pair: RA reads its last real
    token instead, on either padding side."""
    from paracl.parts.losses.ebsim_triplet import summary_positions

    right = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 1, 1, 1], [0, 0, 1, 1]])
    assert summary_positions(right, causal=False).tolist() == [0, 0]
    assert summary_positions(left, causal=False).tolist() == [1, 2]
    assert summary_positions(right, causal=True).tolist() == [2, 3]
    assert summary_positions(left, causal=True).tolist() == [3, 3]


def test_supervised_simcse_takes_hard_negatives_where_rows_have_them():
    """SICK: a contradiction for ~1 premise in 10; the present ones are extra candidates for
    every anchor (as SimCSE's), a row without one contrasts with the batch alone."""
    import pandas as pd

    from paracl.parts.losses import infonce

    objective = infonce.objective(None, infonce.Params(hard_negatives=True), {"temperature": 0.05})
    batch = pd.DataFrame({"anchor": ["a", "b", "c"], "positive": ["x", "y", "z"],
                          "negative": ["n", None, ""]})  # fmt: skip
    assert objective.columns(batch) == [["a", "b", "c"], ["x", "y", "z"], ["n"]]
    assert objective.partial_negatives
    torch.manual_seed(0)
    a, p, n = torch.randn(3, 8), torch.randn(3, 8), torch.randn(1, 8)
    logits = torch.nn.functional.cosine_similarity(
        a[:, None], torch.cat([p, n])[None], dim=-1) / 0.05  # fmt: skip
    expected = torch.nn.functional.cross_entropy(logits, torch.arange(3))
    assert objective.loss([a, p, n]).item() == pytest.approx(expected.item(), rel=1e-5)
    plain = infonce.objective(None, infonce.Params(), {"temperature": 0.05})
    assert plain.columns(batch) == [["a", "b", "c"], ["x", "y", "z"]]
    assert not getattr(plain, "partial_negatives", False)
