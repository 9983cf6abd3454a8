"""Seeded training batches, uniformly random or grouped by length: one order for both
contrastive training (paracl.stages.train_contrastive.training.trainer) and fine-tuning (evaluation.finetune).

Grouped as transformers' LengthGroupedSampler (Trainer's `group_by_length`) groups: the
shuffled rows are cut into windows of GROUP_WINDOW batches, each window is sorted by
length and cut into batches, and the batches are shuffled. A batch pads to its longest
row, so a batch of similar lengths does less work; its rows are still a random draw from
a window of 50 batches. Random batches are the papers' (their code's samplers).
"""

from __future__ import annotations

import torch

GROUP_WINDOW = 50  # batches per length-sorted window (transformers' LengthGroupedSampler)


def batch_order(
    n: int, size: int, gen: torch.Generator, lengths: list[int] | None = None
) -> list[list[int]]:
    """Batches of `size` row indices of `n` rows (the last one may be short), drawn from
    `gen`; with `lengths` (tokens per row), grouped by length."""
    order = torch.randperm(n, generator=gen).tolist()
    if lengths is not None:
        window = size * GROUP_WINDOW
        order = [
            i
            for w in range(0, n, window)
            for i in sorted(order[w : w + window], key=lambda i: -lengths[i])
        ]
    out = [order[i : i + size] for i in range(0, n, size)]
    if lengths is not None:
        out = [out[i] for i in torch.randperm(len(out), generator=gen).tolist()]
    return out
