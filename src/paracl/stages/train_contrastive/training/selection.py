"""Which weights a run keeps: each paper's model selection, a setting of its method entry
(train_contrastive.selection), and the dev-loss split the PPDB paper and EBSIM select on.

- `sts_dev`: STS dev Spearman (dev.py). With `sts_dev_every: null` once per epoch, the best
  epoch kept and `patience` epochs without a gain stopping the run (the default and effect
  presets); with `sts_dev_every: N` every N steps and the best of those kept, never
  stopping early (SimCSE's run_*_example.sh: `--evaluation_strategy steps --eval_steps 125
  --load_best_model_at_end`, which the round-trip paper's rows inherit).
- `dev_loss`: the training loss on a held-out, seeded sample of the training examples
  (`dev_loss_examples`), once per epoch, lowest kept, `patience` epochs without a gain
  stopping the run (the PPDB paper §4.3: "terminated when the loss on the Dev set did not
  improve for 3 consecutive epochs"; EBSIM §4.1: "according to the dev set, including
  20,000 samples").
- `none`: the last weights (the cross-lingual PI paper's 50 epochs, no selection stated).
"""

from __future__ import annotations

import pandas as pd
import torch
from sentence_transformers import SentenceTransformer

from paracl.core.device import DEFAULT_PRECISION, autocast
from paracl.parts.encoder.forward import embed

SELECTIONS = ("sts_dev", "dev_loss", "none")


def hold_out(examples: pd.DataFrame, n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, dev): a seeded sample of `n` examples held out of training for `dev_loss`.
    At most a tenth of the examples (and at least 2), so a small run still trains."""
    n = min(n, max(2, len(examples) // 10))
    if len(examples) - n < 2:
        raise ValueError(
            f"{len(examples)} examples leave no dev sample of >= 2 for selection: dev_loss"
        )
    dev = examples.sample(n=n, random_state=seed)
    return examples.drop(dev.index).reset_index(drop=True), dev.reset_index(drop=True)


def dev_loss(
    model: SentenceTransformer,
    objective,
    dev: pd.DataFrame,
    batch_size: int,
    seed: int,
    precision: str = DEFAULT_PRECISION,
) -> float:
    """The objective's mean loss over `dev` in batches of `batch_size` (the same in-batch
    negatives pool as training), no gradients. Dropout stays on under a fixed seed:
    unsupervised SimCSE's positive is a second dropout view, which eval mode would make
    identical. The training RNG is left as it was. Every process computes it whole."""
    device = model.device
    total, weight = 0.0, 0
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices), torch.no_grad():
        torch.manual_seed(seed)
        model.train()
        for start in range(0, len(dev) - 1, batch_size):
            batch = objective.prepare(dev.iloc[start : start + batch_size], model)
            if len(batch) < 2:
                continue
            total += _batch_loss(model, objective, batch, precision) * len(batch)
            weight += len(batch)
    return total / weight


def _batch_loss(model: SentenceTransformer, objective, batch: pd.DataFrame, precision) -> float:
    """One dev batch's loss: a per-example objective's own (EBSIM), else the bi-encoder loss
    on the batch's columns embedded in one pass (as the training step embeds them)."""
    if objective.per_example:
        return objective.loss_of(model, batch, precision)
    cols = objective.columns(batch)
    texts = [t for col in cols for t in col]
    with autocast(model.device, precision):
        merged = embed(model, texts).float()
    return float(objective.loss(list(torch.split(merged, [len(c) for c in cols]))))


def step_eval_due(every: int | None, steps: int) -> bool:
    """SimCSE's cadence: an STS dev evaluation after every `every` steps."""
    return every is not None and steps % every == 0
