"""JCSE's contrastive loss with a weight alpha on each anchor's own hard negative (Eq. 4).

    -log e^{s(v_i,v_i+)/tau} / sum_j ( e^{s(v_i,v_j+)/tau} + alpha^{1[i=j]} e^{s(v_i,v_j-)/tau} )

The indicator puts alpha only on the anchor's *own* hard negative; the other rows' hard
negatives keep weight alpha^0 = 1. So alpha = 0 (JCSE stage one) drops the generated
contradiction of the anchor itself from its denominator while still using the others as
negatives, and alpha = 1 (stage two) is exactly SimCSE's supervised loss, i.e.
sentence-transformers' MultipleNegativesRankingLoss with a negatives column (tested).

Used by jcse (alpha 0, on generated negatives) and jcse_two_stage (alpha 1, on NLI,
continuing from the jcse encoder).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paracl.training.objectives import BiEncoderObjective


class WeightedHardNegativeLoss(nn.Module):
    def __init__(self, temperature: float = 0.05, alpha: float = 1.0):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.temperature = temperature
        self.alpha = alpha

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """Mean loss over the batch; all three are (N, d) embeddings, row i belongs together."""
        a = F.normalize(anchor.float(), dim=-1)
        pos = a @ F.normalize(positive.float(), dim=-1).T / self.temperature
        neg = a @ F.normalize(negative.float(), dim=-1).T / self.temperature
        # alpha^{1[i=j]} as an additive log-weight on the diagonal; alpha = 0 removes it.
        eye = torch.eye(neg.size(0), dtype=torch.bool, device=neg.device)
        if self.alpha > 0:
            neg = neg + eye.to(neg.dtype) * math.log(self.alpha)
        else:
            neg = neg.masked_fill(eye, -math.inf)
        logits = torch.cat([pos, neg], dim=1)
        return (torch.logsumexp(logits, dim=1) - pos.diagonal()).mean()


@dataclass(frozen=True)
class Params:
    """The method entry's own keys (params.yaml train_contrastive.methods.<name>)."""

    alpha: float = 0.0  # weight of the anchor's own hard negative (Eq. 4)

    def __post_init__(self) -> None:
        if self.alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {self.alpha}")


def objective(model, params: Params, cfg: dict) -> BiEncoderObjective:
    loss = WeightedHardNegativeLoss(cfg["temperature"], params.alpha)
    return BiEncoderObjective(
        ["anchor", "positive", "negative"],
        lambda r: loss(r[0], r[1], r[2]),
        f"JCSE(alpha={params.alpha})",
    )
