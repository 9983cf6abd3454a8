"""In-batch contrastive loss over the global batch of a multi-process (multi-GPU) run.

Why: InfoNCE gets better with more in-batch negatives (JCSE trains with 512). On N
GPUs each process holds only B/N sentences; the loss must see all B, and the gradient
must flow back into every process's own embeddings, or the negatives from other GPUs
would act as constants and training would differ from one big batch.

`all_gather_with_grad` is an all_gather whose backward sums the incoming gradient over
processes (all_reduce) and keeps this process's slice, so each process gets the
summed gradient of its own embeddings. (A small autograd.Function on public
torch.distributed calls: torch.distributed.nn.functional.all_gather does the same but
is deprecated in torch 2.13, its replacement private.) Every
process computes the same global loss L, so each slice receives N·dL/d(slice); DDP
(or paracl.stages.train_contrastive.training.parallel.average_gradients, which the trainer uses) then averages
parameter gradients over the N processes, which leaves exactly dL/dθ — the
single-process gradient on the same global batch (tests/core/test_distributed_gather,
tests/core/test_distributed_training).
Outside a process group (or with one process) everything reduces to the plain loss.
`local_rows` is the share of a global batch each process embeds before the gather.
"""

from __future__ import annotations

import torch


def world_size() -> int:
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank in the group (0 outside one)."""
    return torch.distributed.get_rank() if world_size() > 1 else 0


def local_rows(n: int) -> slice:
    """This rank's contiguous share of a global batch of n rows, in rank order, so the
    gathered columns are the global batch in its single-process order."""
    world, r = world_size(), rank()
    return slice(r * n // world, (r + 1) * n // world)


class _AllGather(torch.autograd.Function):
    """Forward: every process's tensor, concatenated in rank order. Backward: the sum
    over processes of the gradient of the concatenation, this process's rows.

    Local row counts may differ (a global batch of 5 on 2 processes is 2 + 3 rows): the
    counts are exchanged first and each part is padded to the largest for the
    collective (NCCL's all_gather needs equal shapes), then trimmed again."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        dist = torch.distributed
        n = dist.get_world_size()
        counts = [torch.zeros(1, dtype=torch.long, device=x.device) for _ in range(n)]
        dist.all_gather(counts, torch.tensor([x.shape[0]], device=x.device))
        sizes = [int(c) for c in counts]
        rows, rank = x.shape[0], dist.get_rank()
        if max(sizes) > rows:
            x = torch.cat([x, x.new_zeros((max(sizes) - rows, *x.shape[1:]))])
        parts = [torch.empty_like(x) for _ in range(n)]
        dist.all_gather(parts, x.contiguous())
        ctx.start, ctx.rows = sum(sizes[:rank]), rows
        return torch.cat([part[:size] for part, size in zip(parts, sizes, strict=True)], dim=0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous()
        torch.distributed.all_reduce(grad)
        return grad[ctx.start : ctx.start + ctx.rows]


def all_gather_with_grad(x: torch.Tensor) -> torch.Tensor:
    """Concatenate `x` (batch first) from every process in rank order, keeping the
    autograd graph. Row counts may differ between processes; the other dimensions
    must match."""
    if world_size() == 1:
        return x
    return _AllGather.apply(x)


def gather_columns(reps: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each column's embeddings (anchor, positive, negatives …) over the global batch:
    wrap any in-batch loss on embeddings (MNRL, JCSE, AMS) as loss(gather_columns(reps))
    and under DDP it trains as on one process with the global batch."""
    return [all_gather_with_grad(r) for r in reps]
