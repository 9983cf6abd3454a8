"""Multi-process training (torchrun / accelerate launch): what each process does differently.

Why explicit collectives instead of DDP: a step may run several forwards and backwards
(GradCache re-embeds every mini-batch) and a rank may hold a different number of rows
than another (the global batch need not divide by N), both of which DDP's hooks make
awkward. Instead every rank computes the same global-batch loss through
paracl.core.distributed.gather, and `average_gradients` all-reduces the parameter gradients
once per step — exactly DDP's averaging (see gather.py for why that equals the
single-process gradient). With one process every function here is a no-op, so the
single-process run is the same code and the same bytes as before.

Process group from the environment that torchrun (and `accelerate launch`, which runs
torchrun's launcher) sets: WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT. NCCL
on CUDA (rank on cuda:LOCAL_RANK), gloo on CPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator

import torch
import torch.distributed as dist

from paracl.core.device import select_device
from paracl.core.distributed.gather import rank, world_size
from paracl.core.errors import ParamsError

log = logging.getLogger(__name__)


def is_main() -> bool:
    """Rank 0 (or the only process): the one that evaluates, logs and writes outputs."""
    return rank() == 0


def under_launcher() -> bool:
    """True when torchrun (or accelerate launch) started this process."""
    return "LOCAL_RANK" in os.environ or "WORLD_SIZE" in os.environ


def env_world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def relaunch_command(processes: int, argv: list[str]) -> list[str]:
    """This script again, under torch's own launcher, on `processes` local processes."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={processes}",
        *argv,
    ]


@contextlib.contextmanager
def process_group(preference: str) -> Iterator[torch.device]:
    """Yield this process's device; inside torchrun with WORLD_SIZE > 1, join the group
    first (and leave it at the end, after a barrier so no rank exits before rank 0 has
    written its outputs)."""
    device = select_device(preference)
    if env_world_size() <= 1:
        yield device
        return
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    elif device.type == "cpu":
        dist.init_process_group("gloo")
    else:
        raise ParamsError(f"device: multi-process training runs on cuda or cpu, not {device}")
    log.info("rank %d of %d on %s", dist.get_rank(), dist.get_world_size(), device)
    try:
        yield device
        dist.barrier()
    finally:
        dist.destroy_process_group()


def sync_parameters(params: list[torch.nn.Parameter]) -> None:
    """Start every rank from rank 0's weights (they load the same files; this makes sure)."""
    if world_size() > 1:
        for p in params:
            dist.broadcast(p.data, 0)


def average_gradients(params: list[torch.nn.Parameter]) -> None:
    """Mean of each parameter's gradient over the ranks, in one all_reduce.

    A parameter without a gradient on every rank keeps None (AdamW then skips it, as in
    the single-process run); missing gradients count as zeros otherwise."""
    world = world_size()
    if world == 1:
        return
    flat = torch.cat(
        [
            torch.cat([p.grad.reshape(-1), p.grad.new_ones(1)])
            if p.grad is not None
            else p.new_zeros(p.numel() + 1)
            for p in params
        ]
    )
    dist.all_reduce(flat)
    start = 0
    for p in params:
        n = p.numel()
        if flat[start + n] > 0:
            p.grad = flat[start : start + n].view_as(p) / world
        start += n + 1


def mean_over_ranks(value: float, device: torch.device) -> float:
    """The mean of a float over the ranks (the value itself with one process)."""
    if world_size() == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item()) / world_size()


def main_value(fn: Callable[[], float], device: torch.device) -> float:
    """fn() on rank 0, the same float on every rank (dev score -> one early-stop decision)."""
    if world_size() == 1:
        return fn()
    value = torch.tensor([fn() if is_main() else 0.0], dtype=torch.float64, device=device)
    dist.broadcast(value, 0)
    return float(value.item())
