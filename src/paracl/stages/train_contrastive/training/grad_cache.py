"""Gradient caching: a large contrastive batch computed in small mini-batches, exactly.

Why not plain gradient accumulation: with in-batch negatives, accumulating over k
micro-batches of B/k pairs trains with B/k - 1 negatives per anchor instead of B - 1, a
different objective that silently weakens the contrast. GradCache (Gao et al., 2021; the
method behind sentence-transformers' CachedMultipleNegativesRankingLoss) keeps the full
batch's loss:

1. embed every mini-batch without autograd, remembering each one's RNG state;
2. compute the loss on the detached full-batch embeddings, backward to get d loss / d emb;
3. re-embed each mini-batch with autograd under the same RNG state (same dropout mask)
   and backpropagate its slice of the cached embedding gradient.

The parameter gradients equal those of one full-batch step (tested), at the memory of a
mini-batch plus one extra forward pass. Under fp16 the loss is scaled in step 2 (a
torch.amp.GradScaler), so the cached embedding gradients, and all that step 3
backpropagates from them, carry the scale: the optimiser step unscales them once. This works for every embedding loss here, so the
trainer uses it for all bi-encoder methods when `mini_batch_size < batch_size`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from paracl.core.device import backward

EmbedFn = Callable[[list[str]], Tensor]


class _RandState:
    """Capture and restore torch's CPU (and current CUDA) RNG, so dropout repeats."""

    def __init__(self, device: torch.device):
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        self.device = device

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state(self.cuda, self.device)


def cached_step(
    embed: EmbedFn,
    columns: Sequence[list[str]],
    loss_fn: Callable[[list[Tensor]], Tensor],
    mini_batch_size: int,
    device: torch.device,
    scaler: torch.amp.GradScaler | None = None,
) -> float:
    """One GradCache forward/backward over `columns` (each a list of texts); returns the
    (unscaled) loss.

    `embed(texts)` must run the model (with grad enabled by the caller's context) and
    return (len(texts), d). Gradients are accumulated into the model's .grad fields,
    multiplied by `scaler`'s scale when it is enabled (fp16).
    """
    chunks: list[list[tuple[_RandState, list[str]]]] = []
    reps: list[Tensor] = []
    for texts in columns:
        col_chunks, col_reps = [], []
        for start in range(0, len(texts), mini_batch_size):
            part = texts[start : start + mini_batch_size]
            state = _RandState(device)
            with torch.no_grad():
                col_reps.append(embed(part).float())
            col_chunks.append((state, part))
        chunks.append(col_chunks)
        if not col_reps:  # e.g. no hard negatives in this batch
            col_reps = [torch.zeros(0, reps[0].size(1) if reps else 1, device=device)]
        reps.append(torch.cat(col_reps).requires_grad_(True))
    loss = loss_fn(reps)
    if scaler is None:
        loss.backward()
    else:
        backward(loss, scaler)
    for col, col_chunks in enumerate(chunks):
        start = 0
        for state, part in col_chunks:
            if reps[col].grad is None:
                break
            grad = reps[col].grad[start : start + len(part)]
            state.restore()
            out = embed(part).float()
            out.backward(grad)
            start += len(part)
    return float(loss.detach())
