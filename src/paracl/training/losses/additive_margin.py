"""Additive Margin Scale loss of the cross-lingual paraphrase paper (§III-C, Eq. 1-4).

    p = e^{s cos(phi(x_i, y_i) + m)}             positive, with an angular (ArcFace) margin
    n = sum_{n != i} e^{s cos(phi(x_i, y_n))}    in-batch negatives
    h = sum_j e^{s cos(phi(x_i, h_j))}           hard negatives (dataset + mega-batch mined)
    L = -1/N sum_i log p / (p + n + g h)

phi is the angle between the embeddings (arccos of their cosine), as in ArcFace, which the
paper says it borrows from; so cos(phi + m) is the positive's cosine after the margin. We
read Eq. 3's "j != i" as inherited from Eq. 2: every hard negative in the batch (the
anchor's own one included) is in h, as LaBSE/MNRL do. Paper values: m=0.5, s=0.5, g=1.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class AdditiveMarginScaleLoss(nn.Module):
    def __init__(self, margin: float = 0.5, scale: float = 0.5, gamma: float = 1.0):
        super().__init__()
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        if gamma < 0:
            raise ValueError(f"gamma must be >= 0, got {gamma}")
        self.margin, self.scale, self.gamma = margin, scale, gamma

    def forward(self, anchor: Tensor, positive: Tensor, hard: Tensor | None = None) -> Tensor:
        """anchor, positive: (N, d); hard: (H, d) hard negatives shared by the batch, or None."""
        x = F.normalize(anchor.float(), dim=-1)
        cos = x @ F.normalize(positive.float(), dim=-1).T  # (N, N)
        eps = 1e-6  # keep acos differentiable at exactly +-1
        phi = torch.acos(cos.diagonal().clamp(-1 + eps, 1 - eps))
        pos_logit = self.scale * torch.cos(phi + self.margin)
        eye = torch.eye(cos.size(0), dtype=torch.bool, device=cos.device)
        parts = [pos_logit[:, None], (self.scale * cos).masked_fill(eye, -math.inf)]
        if hard is not None and hard.numel() and self.gamma > 0:
            h = self.scale * (x @ F.normalize(hard.float(), dim=-1).T)
            parts.append(h + math.log(self.gamma))
        logits = torch.cat(parts, dim=1)
        return (torch.logsumexp(logits, dim=1) - pos_logit).mean()
