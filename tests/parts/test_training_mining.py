"""Mega-batch mining (Algorithm 2) picks the hardest negatives, and GradCache is exact."""

from __future__ import annotations

import torch

from paracl.parts.losses import WeightedHardNegativeLoss
from paracl.parts.losses.additive_margin import mine_hard_negatives
from paracl.stages.train_contrastive.training.grad_cache import cached_step


def test_mining_picks_closest_other_positive():
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # candidate 0 is anchor 0's own positive; for anchor 0 the closest *other* is 2
    cands = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    assert mine_hard_negatives(anchors, cands, k=1) == [[2], [2], [0]]
    assert mine_hard_negatives(anchors, cands, k=2)[0] == [2, 1]


def test_mining_threshold():
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    cands = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    picked = mine_hard_negatives(anchors, cands, k=2, threshold=0.5)
    assert picked[0] == [2]  # cos(a0, c1) = 0 < 0.5 is left out
    assert picked[1] == []  # cos(a1, c2) ~ 0.11, cos(a1, c0) = 0


def test_grad_cache_matches_full_batch_gradients():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 4))
    vocab = {f"w{i}": torch.randn(4) for i in range(12)}
    embed = lambda texts: net(torch.stack([vocab[t] for t in texts]))  # noqa: E731
    cols = [
        [f"w{i}" for i in range(4)],
        [f"w{i}" for i in range(4, 8)],
        [f"w{i}" for i in range(8, 12)],
    ]
    loss = WeightedHardNegativeLoss(0.1, 0.0)
    net.eval()  # dropout off for the reference; GradCache replays RNG so train mode also agrees
    full = loss(*[embed(c) for c in cols])
    full.backward()
    ref = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    value = cached_step(embed, cols, lambda r: loss(*r), 1, torch.device("cpu"))
    assert abs(value - full.item()) < 1e-5
    for p, g in zip(net.parameters(), ref, strict=True):
        assert torch.allclose(p.grad, g, atol=1e-5)


def test_grad_cache_replays_dropout():
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 4))
    net.train()
    vocab = {f"w{i}": torch.randn(4) for i in range(6)}
    embed = lambda texts: net(torch.stack([vocab[t] for t in texts]))  # noqa: E731
    cols = [[f"w{i}" for i in range(3)], [f"w{i}" for i in range(3, 6)]]
    loss = WeightedHardNegativeLoss(0.1, 1.0)
    torch.manual_seed(5)
    value = cached_step(embed, cols, lambda r: loss(r[0], r[1], r[1]), 2, torch.device("cpu"))
    grads = [p.grad.clone() for p in net.parameters()]
    # reference: same RNG stream, each chunk run once with grad
    net.zero_grad()
    torch.manual_seed(5)
    reps = [torch.cat([embed(c[i : i + 2]) for i in range(0, 3, 2)]) for c in cols]
    ref = loss(reps[0], reps[1], reps[1])
    ref.backward()
    assert abs(value - ref.item()) < 1e-5
    for p, g in zip(net.parameters(), grads, strict=True):
        assert torch.allclose(p.grad, g, atol=1e-5)
