"""Mega-batch hard-negative mining (cross-lingual paraphrase paper, §III-D, Algorithm 2).

Aggregate M mini-batches into one mega-batch, embed it without gradients, and for each
pair pick the negatives from the *other* pairs' positives that the model currently finds
closest to the anchor: the N closest, or every one above a cosine threshold. The mined
texts are added to the pair's hard negatives and the mega-batch is split back into its
mini-batches (the trainer does the split; this module only chooses).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def mine_hard_negatives(
    anchors: Tensor, candidates: Tensor, k: int = 1, threshold: float | None = None
) -> list[list[int]]:
    """For each anchor i, indices j != i of the hardest candidates (row j is pair j's positive).

    With `threshold` set, every candidate with cosine >= threshold is taken (hardest first,
    at most k); otherwise the k closest. Ties break by the lower index (deterministic).
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
