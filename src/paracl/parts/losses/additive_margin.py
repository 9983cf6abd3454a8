"""Additive Margin Scale loss of the cross-lingual paraphrase paper (§III-C, Eq. 1-4).

    p = e^{s cos(phi(x_i, y_i) + m)}             positive, with an angular (ArcFace) margin
    n = sum_{n != i} e^{s cos(phi(x_i, y_n))}    in-batch negatives
    h = sum_j e^{s cos(phi(x_i, h_j))}           hard negatives (dataset + mega-batch mined)
    L = -1/N sum_i log p / (p + n + g h)

phi is the angle between the embeddings (arccos of their cosine), as in ArcFace, which the
paper says it borrows from; so cos(phi + m) is the positive's cosine after the margin. We
read Eq. 3's "j != i" as inherited from Eq. 2: every hard negative in the batch (the
anchor's own one included) is in h, as LaBSE/MNRL do. Paper values: m=0.5, s=0.5, g=1.

Hard negatives come from the dataset (if it has a `negative` column) and from mega-batch
mining (§III-D, Algorithm 2): aggregate M mini-batches into one mega-batch, embed it
without gradients, and for each pair pick the negatives among the *other* pairs'
positives that the model currently finds closest to the anchor. Algorithm 2 names two
rules, and `mine_rule` picks one: `closest` = the N (`mine_k`) closest, `threshold` =
every one "closer to anchor than some threshold" (cosine >= `threshold`; at most
`mine_k`, which bounds the batch's hard-negative pool). The paper does not say which it
used, nor N or the threshold. The trainer splits the mega-batch back into its batches.
`hard_negatives: false` leaves the dataset's negatives out (the ablation "AMS on the
positive pairs alone").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paracl.core.distributed.gather import all_gather_with_grad, local_rows
from paracl.parts.encoder.forward import embed
from paracl.parts.losses.objective import BiEncoderObjective

if TYPE_CHECKING:  # annotations only: the loss modules load without sentence_transformers
    from sentence_transformers import SentenceTransformer


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


MINE_RULES = ("closest", "threshold")  # Algorithm 2's two selection rules


def mine_hard_negatives(
    anchors: Tensor, candidates: Tensor, k: int = 1, threshold: float | None = None
) -> list[list[int]]:
    """For each anchor i, indices j != i of the hardest candidates (row j is pair j's positive).

    With `threshold` set (rule `threshold`), every candidate with cosine >= threshold is
    taken (hardest first, at most k); otherwise (rule `closest`) the k closest. Ties break
    by the lower index (deterministic).
    """
    if anchors.size(0) != candidates.size(0):
        raise ValueError("anchors and candidates must have one row per pair")
    n = anchors.size(0)
    k = min(k, n - 1)
    if k <= 0:
        return [[] for _ in range(n)]
    sims = F.normalize(anchors.float(), dim=-1) @ F.normalize(candidates.float(), dim=-1).T
    sims.fill_diagonal_(-torch.inf)  # a pair's own positive is not a negative
    # stable sort: equal similarities keep index order
    order = torch.sort(sims, dim=1, descending=True, stable=True).indices[:, :k]
    picked = []
    for i in range(n):
        row = [int(j) for j in order[i]]
        if threshold is not None:
            row = [j for j in row if sims[i, j] >= threshold]
        picked.append(row)
    return picked


class AdditiveMarginObjective(BiEncoderObjective):
    """AMS loss; hard negatives = the dataset's (if any) + mined from the mega-batch."""

    def __init__(
        self,
        margin: float,
        scale: float,
        gamma: float,
        mine_k: int,
        threshold: float | None,
        batch_texts: Callable[[SentenceTransformer, list[str]], Tensor],
        hard_negatives: bool = True,
    ):
        loss = AdditiveMarginScaleLoss(margin, scale, gamma)
        super().__init__(
            ["anchor", "positive", "hard"],
            lambda r: loss(r[0], r[1], r[2] if r[2].numel() else None),
            f"AMS(m={margin},s={scale},g={gamma})",
        )
        self.mine_k, self.threshold, self._embed = mine_k, threshold, batch_texts
        self.hard_negatives = hard_negatives

    def prepare(self, mega: pd.DataFrame, model: SentenceTransformer) -> pd.DataFrame:
        """Algorithm 2: mine each pair's closest other positives across the mega-batch.

        With several processes each embeds its share of the mega-batch and the shares are
        gathered, so every rank mines on the same matrix and picks the same negatives."""
        mined: list[list[str]] = [[] for _ in range(len(mega))]
        if self.mine_k > 0 and len(mega) > 1:
            was = model.training
            model.eval()
            share = mega.iloc[local_rows(len(mega))]
            with torch.inference_mode():
                a = self._embed(model, share["anchor"].astype(str).tolist())
                p = self._embed(model, share["positive"].astype(str).tolist())
                a, p = all_gather_with_grad(a), all_gather_with_grad(p)
            model.train(was)
            positives = mega["positive"].astype(str).tolist()
            idx = mine_hard_negatives(a, p, self.mine_k, self.threshold)
            mined = [[positives[j] for j in row] for row in idx]
        own = mega["negative"] if "negative" in mega else pd.Series([None] * len(mega))
        if not self.hard_negatives:
            own = pd.Series([None] * len(mega))
        hard = [
            ([str(n)] if isinstance(n, str) and n else []) + m
            for n, m in zip(own, mined, strict=True)
        ]
        return mega.assign(hard=hard)

    def columns(self, batch: pd.DataFrame) -> list[list[str]]:
        flat = [t for row in batch["hard"] for t in row]
        return [batch["anchor"].astype(str).tolist(), batch["positive"].astype(str).tolist(), flat]

    def loss(self, reps: list[Tensor]) -> Tensor:
        return self._loss(reps)


@dataclass(frozen=True)
class Params:
    """The method entry's own keys (params.yaml train_contrastive.methods.<name>)."""

    margin: float = 0.5  # m, radians added to the positive's angle
    scale: float = 0.5  # s
    gamma: float = 1.0  # g, weight of the hard negatives
    mega_batch: int = 20  # M: batches aggregated for mining
    mine_k: int = 1  # mined negatives per pair (0: no mining); rule threshold: at most this
    mine_rule: str = "closest"  # Algorithm 2: closest (the mine_k closest) | threshold
    threshold: float | None = None  # rule threshold: every positive with cosine >= this
    hard_negatives: bool = True  # the dataset's negatives (PAWS label-0 partners) in h

    def __post_init__(self) -> None:
        if self.mine_rule not in MINE_RULES:
            raise ValueError(f"mine_rule must be one of {MINE_RULES}, got {self.mine_rule!r}")
        if (self.mine_rule == "threshold") != (self.threshold is not None):
            raise ValueError("threshold is set exactly when mine_rule is threshold "
                             f"(mine_rule {self.mine_rule}, threshold {self.threshold})")  # fmt: skip
        if not 0 <= self.margin <= math.pi:
            raise ValueError(f"margin must be in [0, pi], got {self.margin}")
        if self.mega_batch < 1 or self.mine_k < 0:
            raise ValueError("mega_batch must be >= 1 and mine_k >= 0")
        if self.threshold is not None and not -1 <= self.threshold <= 1:
            raise ValueError(f"threshold must be in [-1, 1], got {self.threshold}")


def objective(model: SentenceTransformer, params: Params, cfg: dict) -> BiEncoderObjective:
    obj = AdditiveMarginObjective(
        params.margin, params.scale, params.gamma, params.mine_k, params.threshold, embed,
        params.hard_negatives,
    )  # fmt: skip
    obj.mega_batch = params.mega_batch
    return obj
