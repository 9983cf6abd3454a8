"""The step loop both filler adaptations share (T5 span corruption, causal next-token).

Why one loop: the two objectives differ in how a batch is built and how the dev loss is
measured, not in the step. Every step runs under the run's `precision` (autocast, and
the GradScaler under fp16, paracl.core.device), stops on a non-finite loss, and the dev loss
is measured before any update (row 0), every `eval_every` steps and after the last.
Examples are drawn without replacement from a seeded permutation, reshuffled when spent.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from paracl.core.device import autocast, backward, grad_scaler, optimizer_step

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Steps:
    """How long and how the loop trains."""

    max_steps: int
    batch_size: int
    eval_every: int
    precision: str
    max_grad_norm: float | None  # None: no clipping (T5's Adafactor setting)


def run_steps(
    model,
    n_examples: int,
    make_batch: Callable[[list[int]], dict[str, torch.Tensor]],
    dev_loss: Callable[[], float],
    optimizer: torch.optim.Optimizer,
    steps: Steps,
    rng: np.random.Generator,
    device: torch.device,
    desc: str,
    on_eval: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Train `model` in place; `make_batch(indices)` gives a batch (on `device`) whose
    model output has `.loss`. Returns the curve [{step, train_loss, dev_loss}]."""
    scaler = grad_scaler(device, precision=steps.precision)
    params = [p for p in model.parameters() if p.requires_grad]
    curve: list[dict] = []

    def evaluate(step: int, train_loss: float | None) -> None:
        row = {"step": step, "train_loss": train_loss, "dev_loss": dev_loss()}
        curve.append(row)
        if on_eval:
            on_eval(row)
        log.info("adapt step %d: train loss %s, dev loss %.4f", step, train_loss, row["dev_loss"])

    evaluate(0, None)
    order: list[int] = []
    running: list[float] = []
    for step in tqdm(range(1, steps.max_steps + 1), desc=desc, mininterval=10):
        model.train()
        if len(order) < steps.batch_size:
            order += list(rng.permutation(n_examples))
        picked, order = order[: steps.batch_size], order[steps.batch_size :]
        batch = make_batch(picked)
        with autocast(device, steps.precision):
            loss = model(**batch).loss
        running.append(loss.item())
        if not math.isfinite(running[-1]):
            raise FloatingPointError(f"adapt: loss is {running[-1]} at step {step}")
        backward(loss, scaler)
        optimizer_step(optimizer, scaler, params, steps.max_grad_norm)
        optimizer.zero_grad(set_to_none=True)
        if step % steps.eval_every == 0 or step == steps.max_steps:
            evaluate(step, float(np.mean(running)))
            running = []
    model.eval()
    return curve
