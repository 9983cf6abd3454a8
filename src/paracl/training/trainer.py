"""The training loop shared by every method: batches, optimiser, GradCache, early stopping.

Written directly on torch rather than on the transformers Trainer so that one loop serves
in-batch losses (with exact GradCache accumulation), mega-batch mining and EBSIM's
cross-encoder heads, with the same seeding, dev evaluation and logging for all of them;
sentence-transformers provides the model, its saving and the InfoNCE (MNRL) loss.

- Adam(W) with the papers' lr and a linear decay, no warmup (SimCSE's schedule).
- A batch is `batch_size` examples = the pool of in-batch negatives. When
  `mini_batch_size` is smaller, bi-encoder losses go through GradCache (same gradients
  as the full batch; see grad_cache.py) — never through plain accumulation, which would
  shrink the negatives. EBSIM's per-example triplet loss accumulates exactly, so it uses
  plain accumulation over mini-batches.
- After each epoch the dev score (STS dev Spearman) is computed; training stops after
  `patience` epochs without a gain and the best epoch's weights are restored.
- Autocast (bf16/fp16) on CUDA, fp32 elsewhere; seeds fix shuffling and dropout.
- Under torchrun (parallel.py) every rank draws the same global batches, embeds its own
  contiguous rows, and the loss sees all ranks' rows (gather.py); gradients are averaged
  and rank 0 alone scores dev. A per-example objective (EBSIM) needs no gather: each
  rank takes its rows' share of the batch mean. One process: all of that is a no-op.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import torch
from sentence_transformers import SentenceTransformer
from tqdm import tqdm
from transformers import get_linear_schedule_with_warmup

from paracl.device import autocast, seed_everything
from paracl.distributed.gather import gather_columns, world_size
from paracl.training import parallel
from paracl.training.encoder import embed, inference_model
from paracl.training.grad_cache import cached_step

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    lr: float = 5e-5
    epochs: int = 1
    batch_size: int = 64
    mini_batch_size: int | None = None
    patience: int = 3
    seed: int = 42
    mega_batch: int = 1  # mini-batches aggregated for mining (AMS, Algorithm 2)
    weight_decay: float = 0.0


@dataclass
class TrainResult:
    steps: int = 0
    epochs_run: int = 0
    best_epoch: int = 0
    best_dev: float | None = None
    losses: list[float] = field(default_factory=list)
    dev_history: list[float] = field(default_factory=list)
    examples_seen: int = 0


Logger = Callable[[str, float, int], None]


def _batches(n: int, size: int, seed: int, epoch: int) -> list[list[int]]:
    """Seeded shuffle per epoch; the last batch is dropped if it could not contrast (<2)
    or (multi-process) could not give every rank a row."""
    gen = torch.Generator().manual_seed(seed * 1000 + epoch)
    order = torch.randperm(n, generator=gen).tolist()
    out = [order[i : i + size] for i in range(0, n, size)]
    return [b for b in out if len(b) >= max(2, world_size())]


def _embed_columns(model, cols: list[list[str]], device) -> list[torch.Tensor]:
    """All columns in ONE forward pass (SimCSE feeds its 2B views the same way).

    Every column holds sentences of the same kind, so merging them costs little padding
    and saves a forward/backward per column; dropout masks still differ per row, which
    is what unsupervised SimCSE's two views of one sentence need.
    """
    texts = [t for col in cols for t in col]
    with autocast(device):
        merged = embed(model, texts).float()
    return list(torch.split(merged, [len(col) for col in cols]))


def train(
    model: SentenceTransformer,
    examples: pd.DataFrame,
    objective,
    config: TrainConfig,
    dev_score: Callable[[SentenceTransformer], float] | None = None,
    logger: Logger | None = None,
    extra_params: list[torch.nn.Parameter] | None = None,
) -> TrainResult:
    """Train `model` in place on `examples` with `objective`; returns the curves."""
    seed_everything(config.seed + parallel.rank())  # ranks draw their own dropout masks
    device = model.device
    params = [p for p in model.parameters() if p.requires_grad] + list(extra_params or [])
    parallel.sync_parameters(params)

    def loss_fn(reps: list[torch.Tensor]) -> torch.Tensor:
        """The loss over the global batch: every rank's rows (identity with one process)."""
        return objective.loss(gather_columns(reps))

    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    per_epoch = len(_batches(len(examples), config.batch_size, config.seed, 0))
    if per_epoch == 0:
        raise ValueError(f"{len(examples)} examples make no batch of >= 2")
    total = per_epoch * config.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, 0, total)
    result = TrainResult()
    mini = config.mini_batch_size or config.batch_size

    best_state = copy.deepcopy(model.state_dict())
    bad_epochs = 0
    for epoch in range(config.epochs):
        model.train()
        batches = _batches(len(examples), config.batch_size, config.seed, epoch)
        mega = max(1, config.mega_batch)
        bar = tqdm(
            total=len(batches),
            desc=f"epoch {epoch + 1}",
            leave=False,
            mininterval=5,
            disable=not parallel.is_main(),
        )
        for m0 in range(0, len(batches), mega):
            group = batches[m0 : m0 + mega]
            flat = [i for b in group for i in b]
            prepared = objective.prepare(examples.iloc[flat].reset_index(drop=True), model)
            offset = 0
            for b in group:
                batch = prepared.iloc[offset : offset + len(b)]
                offset += len(b)
                optimizer.zero_grad(set_to_none=True)
                if objective.per_example:
                    # this rank's rows; scaled so that the gradients averaged over ranks
                    # are the global batch mean's, and the loss logged is its mean
                    local = batch.iloc[parallel.local_rows(len(batch))]
                    scale = world_size() * len(local) / len(batch)
                    loss = objective.step(model, local, mini, device, scale)
                    loss = parallel.mean_over_ranks(loss, device)
                else:
                    local = batch.iloc[parallel.local_rows(len(batch))]
                    cols = objective.columns(local)
                    if mini >= len(local):
                        value = loss_fn(_embed_columns(model, cols, device))
                        value.backward()
                        loss = float(value.detach())
                    else:
                        loss = cached_step(
                            lambda t: _autocast_embed(model, t, device),
                            cols,
                            loss_fn,
                            mini,
                            device,
                        )
                parallel.average_gradients(params)
                if not math.isfinite(loss):
                    raise FloatingPointError(f"loss became {loss} at step {result.steps}")
                optimizer.step()
                scheduler.step()
                result.steps += 1
                result.examples_seen += len(batch)
                result.losses.append(loss)
                if logger:
                    logger("train/loss", loss, result.steps)
                bar.update(1)
        bar.close()
        result.epochs_run = epoch + 1
        if dev_score is None:
            best_state = copy.deepcopy(model.state_dict())
            result.best_epoch = epoch + 1
            continue
        score = parallel.main_value(lambda: dev_score(inference_model(model)), device)
        result.dev_history.append(score)
        if logger:
            logger("dev/spearman", score, result.steps)
        best = -math.inf if result.best_dev is None else result.best_dev
        if parallel.is_main():
            log.info("epoch %d: dev %.2f (best before %.2f)", epoch + 1, score, best)
        if score > best:
            result.best_dev, result.best_epoch, bad_epochs = score, epoch + 1, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= config.patience:
                log.info("early stop: %d epochs without dev gain", bad_epochs)
                break
    model.load_state_dict(best_state)
    return result


def _autocast_embed(model, texts, device):
    with autocast(device):
        return embed(model, texts)
