"""Gathered in-batch negatives across 2 CPU processes (gloo, DDP) give the loss and the
parameter gradients of one process on the same global batch."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from paracl.core.distributed.gather import gather_columns

WORLD = 2
BATCH, DIM, OUT = 8, 16, 8  # global batch of 8 pairs + 8 hard negatives


def global_infonce(
    anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor, temperature: float
) -> torch.Tensor:
    """InfoNCE over the gathered columns, as the trainer wraps every in-batch loss:
    loss(gather_columns(reps)). Written out here so the test does not trust a library loss."""
    reps = gather_columns([anchors, positives, negatives])
    a = F.normalize(reps[0], dim=-1)
    candidates = F.normalize(torch.cat(reps[1:]), dim=-1)
    return F.cross_entropy(a @ candidates.T / temperature, torch.arange(len(a)))


def fixed_batch() -> tuple[torch.nn.Linear, torch.Tensor]:
    """The same encoder weights and the same global batch in every process."""
    gen = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(DIM, OUT)
    with torch.no_grad():
        model.weight.copy_(torch.randn(OUT, DIM, generator=gen))
        model.bias.copy_(torch.randn(OUT, generator=gen))
    return model, torch.randn(3, BATCH, DIM, generator=gen)  # anchors, positives, negatives


def single_process() -> tuple[float, list[torch.Tensor]]:
    model, (a, p, n) = fixed_batch()
    loss = global_infonce(model(a), model(p), model(n), temperature=0.1)
    loss.backward()
    return loss.item(), [model.weight.grad.clone(), model.bias.grad.clone()]


def _worker(rank: int, tmp: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp}/rendezvous", rank=rank, world_size=WORLD
    )
    try:
        model, batch = fixed_batch()
        ddp = DistributedDataParallel(model)
        local = batch[:, rank * BATCH // WORLD : (rank + 1) * BATCH // WORLD]  # this rank's rows
        emb = ddp(local.reshape(-1, DIM)).reshape(3, -1, OUT)  # one forward, as in training
        loss = global_infonce(emb[0], emb[1], emb[2], temperature=0.1)
        with torch.no_grad():  # the same loss on this rank's rows only, for contrast
            na, nc = (F.normalize(x, dim=-1) for x in (emb[0], torch.cat([emb[1], emb[2]])))
            no_gather = F.cross_entropy(na @ nc.T / 0.1, torch.arange(len(na)))
        loss.backward()  # DDP averages the parameter gradients over the 2 ranks
        torch.save(
            {
                "loss": loss.item(),
                "local_only_loss": no_gather.item(),
                "grads": [model.weight.grad, model.bias.grad],
            },
            Path(tmp) / f"rank{rank}.pt",
        )
    finally:
        dist.destroy_process_group()


def test_gathered_loss_and_gradients_equal_single_process(tmp_path):
    loss, grads = single_process()
    # global_infonce outside a process group is the plain loss; reference it by hand too
    model, (a, p, n) = fixed_batch()
    na, cand = (
        torch.nn.functional.normalize(x, dim=-1) for x in (model(a), model(torch.cat([p, n])))
    )
    by_hand = torch.nn.functional.cross_entropy(na @ cand.T / 0.1, torch.arange(BATCH))
    assert abs(by_hand.item() - loss) < 1e-6

    # not fork (a forked child of a process whose torch thread pool already ran, as
    # single_process above, can hang in its first matmul) but a fork server that imports
    # torch and the gather once for both ranks: spawn imported them in each (~3 CPU-s)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["paracl.core.distributed.gather"])
    mp.start_processes(
        _worker, (str(tmp_path),), nprocs=WORLD, join=True, start_method="forkserver"
    )
    for rank in range(WORLD):
        out = torch.load(tmp_path / f"rank{rank}.pt")
        assert abs(out["loss"] - loss) < 1e-5, (rank, out["loss"], loss)
        # without the gather each rank would see only its own 4 pairs: another loss
        assert abs(out["local_only_loss"] - loss) > 1e-3
        for got, want in zip(out["grads"], grads, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
