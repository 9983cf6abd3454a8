"""JCSE's contrastive loss as its authors ran it: SimCSE's `hard_negative_weight` (Eq. 4).

    l_i = -log e^{s_ii+} / sum_j ( e^{s_ij+} + e^{s_ij- + w 1[i=j]} ),   s = cos / tau

The paper writes the own hard negative's factor as alpha^{1[i=j]}. Its authors train with
SimCSE's code (mu-kindai/JCSE jcse/models.py, princeton-nlp/SimCSE simcse/models.py),
which *adds* `--hard_negative_weight` w to the temperature-scaled logit of each anchor's
own hard negative ("weights are actually logits of weights"): the factor is e^w, so the
paper's alpha is e^w and the README's runs use w = 0 (stage one, generated
contradictions: every hard negative at weight 1) and w = 1 (stage two, JSNLI: the own
contradiction at weight e). We follow the code. With w = 0 the loss is exactly
sentence-transformers' MultipleNegativesRankingLoss with a negatives column (tested).

Used by jcse (w 0, on generated negatives) and jcse_two_stage (w 1, on NLI, continuing
from the jcse encoder).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paracl.parts.losses.objective import BiEncoderObjective

# Keys this loss once took: method_spec refuses them with what replaced them.
RENAMED = {
    "alpha": "hard_negative_weight (a log-weight added to the own hard negative's logit, "
    "as the JCSE authors' code: 0 for stage one, 1 for stage two)",
}


class WeightedHardNegativeLoss(nn.Module):
    def __init__(self, temperature: float = 0.05, hard_negative_weight: float = 0.0):
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not math.isfinite(hard_negative_weight):
            raise ValueError(f"hard_negative_weight must be finite, got {hard_negative_weight}")
        self.temperature = temperature
        self.hard_negative_weight = hard_negative_weight

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """Mean loss over the batch; all three are (N, d) embeddings, row i belongs together."""
        a = F.normalize(anchor.float(), dim=-1)
        pos = a @ F.normalize(positive.float(), dim=-1).T / self.temperature
        neg = a @ F.normalize(negative.float(), dim=-1).T / self.temperature
        eye = torch.eye(neg.size(0), dtype=neg.dtype, device=neg.device)
        logits = torch.cat([pos, neg + self.hard_negative_weight * eye], dim=1)
        return (torch.logsumexp(logits, dim=1) - pos.diagonal()).mean()


@dataclass(frozen=True)
class Params:
    """The method entry's own keys (params.yaml train_contrastive.methods.<name>)."""

    # w, added to the logit of each anchor's own hard negative (SimCSE/JCSE code)
    hard_negative_weight: float = 0.0

    def __post_init__(self) -> None:
        w = self.hard_negative_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise ValueError(f"hard_negative_weight must be a number (finite), got {w!r}")


def objective(model, params: Params, cfg: dict) -> BiEncoderObjective:
    loss = WeightedHardNegativeLoss(cfg["temperature"], float(params.hard_negative_weight))
    return BiEncoderObjective(
        ["anchor", "positive", "negative"],
        lambda r: loss(r[0], r[1], r[2]),
        f"JCSE(hard_negative_weight={params.hard_negative_weight:g})",
    )
