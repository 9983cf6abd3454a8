"""Domain adaptation of a causal-LM filler by continued next-token training on the corpus.

Why next-token training and not an infilling objective: the causal filler
(paracl.parts.filler.causal) uses its LM twice, and both are next-token predictions over
target-domain text. It samples each fill token given everything to its left (the masked
sentence as the prompt, then the sentence so far), and it reranks whole hypotheses by
their mean token log-likelihood. Lowering the LM's perplexity on the domain's sentences
serves both; the prompt-then-sentence format it fills in is one the base LM already
follows without training (it copies the text around the blanks). Training on that format
instead would double every example's length (prompt + sentence) on the CPU, and a random
span mask would teach blanks shaped unlike noun chunks. This is domain-adaptive
pre-training (Gururangan et al. 2020) in miniature, the causal counterpart of T5's own
pre-training objective that JCSE adapts T5 with (paracl.parts.filler.adapt).

Every sequence is BOS + the sentence + EOS (BOS as the filler starts its rows); the loss
is the mean cross-entropy of every token after BOS. Dev sentences are the same for every
evaluation, so the curve's dev loss (nats per token; perplexity = exp) compares one task.
What trains follows the decoder-only paraphraser (paracl.core.freeze):
the top `train_layers` blocks, with the vocabulary's embeddings frozen (gemma-3's are
262k x 640, tied to its output head). The step loop is the one both fillers share
(paracl.parts.filler.adapt_loop: precision, loss scaling so fp16 on an older GPU cannot
underflow).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from paracl.core.device import adamw, autocast
from paracl.core.freeze import freeze
from paracl.parts.filler.adapt_loop import Steps, run_steps
from paracl.parts.filler.causal import bos_id

log = logging.getLogger(__name__)


MAX_GRAD_NORM = 1.0  # the gradient norm each step is clipped to


@dataclass(frozen=True)
class CausalAdaptConfig:
    """The `adapt_filler.causal_lm` section, with adapt_filler's max_length and the run's
    seed and precision (params.yaml says what each is)."""

    lr: float
    max_steps: int
    batch_size: int
    max_length: int  # tokens per sentence, BOS and EOS included
    eval_every: int
    train_layers: int | None  # top blocks trained; None = all
    freeze_embeddings: bool
    seed: int
    precision: str  # params.yaml's top-level precision (paracl.core.device)


def sequences(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """BOS + tokens + EOS per text, cut to max_length (a cut sentence loses its EOS);
    texts with no token are left out."""
    bos, eos = bos_id(tokenizer), tokenizer.eos_token_id
    enc = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [
        ([bos, *ids, eos] if eos is not None else [bos, *ids])[:max_length] for ids in enc if ids
    ]


def collate(seqs: Sequence[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded ids, their mask, and labels with -100 on padding (and on BOS: the
    model's shift makes label i the target of position i-1, so BOS is never a target)."""
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq)
        mask[row, : len(seq)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, 0] = -100
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def _pad_id(tokenizer) -> int:
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id, bos_id(tokenizer)):
        if tid is not None:
            return tid
    return 0


@torch.inference_mode()
def mean_nll(
    model, seqs: Sequence[list[int]], pad_id: int, device, precision: str = "auto", batch_size=16
) -> float:
    """Token-weighted mean negative log-likelihood of every token after BOS (nats)."""
    model.eval()
    total, n_tokens = 0.0, 0
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # length buckets
    for start in range(0, len(order), batch_size):
        batch = collate([seqs[i] for i in order[start : start + batch_size]], pad_id)
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device, precision):
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        logits = logits.logits[:, :-1].float()
        labels = batch["labels"][:, 1:]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), labels.reshape(-1), reduction="sum"
        )
        total += loss.item()
        n_tokens += int(labels.ne(-100).sum())
    return total / max(n_tokens, 1)


def adapt_causal(
    model,
    tokenizer,
    train_texts: Sequence[str],
    dev_texts: Sequence[str],
    cfg: CausalAdaptConfig,
    device: torch.device,
    on_eval: Callable[[dict], None] | None = None,
) -> tuple[list[dict], str]:
    """Train `model` in place on next-token prediction; return (the curve
    [{step, train_loss, dev_loss}], what trained). Row 0 is the dev loss before any update."""
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    train = sequences(tokenizer, train_texts, cfg.max_length)
    train = [s for s in train if len(s) >= 2]
    if not train:
        raise ValueError("no training sentence has a token")
    dev = sequences(tokenizer, dev_texts, cfg.max_length)
    pad = _pad_id(tokenizer)
    model.to(device)
    trains = freeze(
        model, cfg.train_layers, cfg.freeze_embeddings, "adapt_filler.causal_lm.train_layers"
    )
    optimizer = adamw([p for p in model.parameters() if p.requires_grad], lr=cfg.lr)

    def make_batch(picked: list[int]) -> dict[str, torch.Tensor]:
        return {k: v.to(device) for k, v in collate([train[i] for i in picked], pad).items()}

    steps = Steps(cfg.max_steps, cfg.batch_size, cfg.eval_every, cfg.precision, MAX_GRAD_NORM)
    curve = run_steps(
        model, len(train), make_batch, lambda: mean_nll(model, dev, pad, device, cfg.precision),
        optimizer, steps, rng, device, "adapt causal LM", on_eval,
    )  # fmt: skip
    for p in model.parameters():
        p.requires_grad = True
    return curve, trains
