"""T5's domain adaptation: span-corruption denoising on the corpus (JCSE §3.2, §4.4).

Why: a T5 pre-trained on general text fills blanks with general-domain words; a few
steps of its own pre-training objective on the target corpus teach it the domain's
terms. The paper trains with Adafactor at a constant lr of 1e-3. Dev examples are
corrupted once with a fixed seed so that dev losses at different steps compare the same
task; train examples get a fresh mask at every draw, as in T5. The step loop is the one
both fillers share (paracl.parts.filler.adapt_loop: precision, loss scaling under fp16).
The adapt_filler stage's work (either filler) is paracl.stages.adapt_filler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from paracl.core.device import autocast
from paracl.parts.filler.adapt_loop import Steps, run_steps
from paracl.parts.filler.generate import sentinel_ids
from paracl.parts.filler.noise import random_spans_noise_mask, span_corrupt

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdaptConfig:
    """The `adapt_filler.t5` section, with adapt_filler's max_length and the run's seed and
    precision (params.yaml says what each is)."""

    noise_density: float
    mean_noise_span_length: float
    lr: float
    max_steps: int
    batch_size: int
    max_length: int  # tokens per sentence (before corruption)
    eval_every: int
    seed: int
    precision: str  # params.yaml's top-level precision (paracl.core.device)


Example = tuple[list[int], list[int]]


def tokenize(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids without eos (added back by span_corrupt), truncated to max_length."""
    enc = tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=max_length)
    return [ids for ids in enc["input_ids"] if len(ids) >= 2]


def corrupt_one(ids: list[int], cfg: AdaptConfig, rng, sentinels: list[int], eos: int) -> Example:
    noise = random_spans_noise_mask(len(ids), cfg.noise_density, cfg.mean_noise_span_length, rng)
    return span_corrupt(ids, noise, sentinels, eos)


def collate(examples: Sequence[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad inputs with pad_id and labels with -100 (ignored by the loss)."""
    n_in = max(len(e[0]) for e in examples)
    n_out = max(len(e[1]) for e in examples)
    input_ids = torch.full((len(examples), n_in), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), n_out), -100, dtype=torch.long)
    for row, (inp, tgt) in enumerate(examples):
        input_ids[row, : len(inp)] = torch.tensor(inp)
        labels[row, : len(tgt)] = torch.tensor(tgt)
    return {"input_ids": input_ids, "attention_mask": input_ids.ne(pad_id).long(), "labels": labels}


@torch.inference_mode()
def dev_loss(
    model, examples: Sequence[Example], pad_id: int, device, precision: str = "auto", batch_size=64
) -> float:
    """Token-weighted mean cross-entropy of the targets (nats per target token)."""
    model.eval()
    total, n_tokens = 0.0, 0
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]))  # bucket
    for start in range(0, len(order), batch_size):
        batch = collate([examples[i] for i in order[start : start + batch_size]], pad_id)
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device, precision):
            logits = model(**batch).logits
        labels = batch["labels"]
        loss = torch.nn.functional.cross_entropy(
            logits.float().reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="sum"
        )
        total += loss.item()
        n_tokens += int(labels.ne(-100).sum())
    return total / max(n_tokens, 1)


def adapt(
    model,
    tokenizer,
    train_texts: Sequence[str],
    dev_texts: Sequence[str],
    cfg: AdaptConfig,
    device: torch.device,
    on_eval: Callable[[dict], None] | None = None,
) -> list[dict]:
    """Train `model` in place by denoising; return the curve [{step, train_loss, dev_loss}].

    The first row (step 0) is the dev loss before any update.
    """
    from transformers.optimization import Adafactor

    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    sentinels = sentinel_ids(tokenizer)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    train_ids = tokenize(tokenizer, train_texts, cfg.max_length)
    if not train_ids:
        raise ValueError("no training sentence has 2 or more tokens")
    dev_rng = np.random.default_rng(cfg.seed + 1)
    dev = [
        corrupt_one(ids, cfg, dev_rng, sentinels, eos)
        for ids in tokenize(tokenizer, dev_texts, cfg.max_length)
    ]
    model.to(device)
    # The paper's setting: Adafactor with a constant external lr (no relative step).
    optimizer = Adafactor(
        model.parameters(), lr=cfg.lr, relative_step=False, scale_parameter=False, warmup_init=False
    )

    def make_batch(picked: list[int]) -> dict[str, torch.Tensor]:
        examples = [corrupt_one(train_ids[i], cfg, rng, sentinels, eos) for i in picked]
        return {k: v.to(device) for k, v in collate(examples, pad).items()}

    steps = Steps(cfg.max_steps, cfg.batch_size, cfg.eval_every, cfg.precision, None)
    return run_steps(
        model, len(train_ids), make_batch, lambda: dev_loss(model, dev, pad, device, cfg.precision),
        optimizer, steps, rng, device, "adapt T5", on_eval,
    )  # fmt: skip
