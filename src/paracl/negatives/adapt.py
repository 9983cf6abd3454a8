"""Domain adaptation of T5 by span-corruption denoising on the corpus (JCSE §3.2, §4.4).

Why: a T5 pre-trained on general text fills blanks with general-domain words; a few
steps of its own pre-training objective on the target corpus teach it the domain's
terms. The paper trains with Adafactor at a constant lr of 1e-3. Dev examples are
corrupted once with a fixed seed so that dev losses at different steps compare the same
task; train examples get a fresh mask at every draw, as in T5.

`adapt_corpus` is the adapt_t5 stage's work: a seeded sample of the corpus split into
train and dev, the base model (or the offline stand-in) adapted and saved with a
paracl_t5.json that says what it is; `write_curve` writes its loss curve (CSV + PNG).
With `adapt_t5.enabled: false` the base model is saved unchanged, so the corrupt stage
always reads the same directory. A causal LM (the offline default) is never adapted:
`record_causal` writes only a paracl_t5.json naming it.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from paracl.device import autocast, seed_everything, select_device
from paracl.errors import InputError
from paracl.io import atomic_dir, atomic_path, write_json
from paracl.models import resolve_model
from paracl.negatives.causal import is_causal_lm
from paracl.negatives.generate import sentinel_ids
from paracl.negatives.noise import random_spans_noise_mask, span_corrupt
from paracl.plots import png_figure
from paracl.sampling import sample_corpus
from paracl.standins import build_standin_t5, describe, is_standin

log = logging.getLogger(__name__)

PAPER_T5 = ("t5-base", "google-t5/t5-base", "sonoisa/t5-base-japanese-v1.1")  # JCSE §4.4


@dataclass(frozen=True)
class AdaptConfig:
    noise_density: float = 0.15
    mean_noise_span_length: float = 3.0
    lr: float = 1e-3
    max_steps: int = 1000
    batch_size: int = 32
    max_length: int = 64  # tokens per sentence (before corruption)
    eval_every: int = 100
    seed: int = 0


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
def dev_loss(model, examples: Sequence[Example], pad_id: int, device, batch_size: int = 64):
    """Token-weighted mean cross-entropy of the targets (nats per target token)."""
    model.eval()
    total, n_tokens = 0.0, 0
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]))  # bucket
    for start in range(0, len(order), batch_size):
        batch = collate([examples[i] for i in order[start : start + batch_size]], pad_id)
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device):
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
    curve: list[dict] = []

    def evaluate(step: int, train_loss: float | None) -> None:
        row = {
            "step": step,
            "train_loss": train_loss,
            "dev_loss": dev_loss(model, dev, pad, device),
        }
        curve.append(row)
        if on_eval:
            on_eval(row)
        log.info("adapt step %d: train loss %s, dev loss %.4f", step, train_loss, row["dev_loss"])

    evaluate(0, None)
    order: list[int] = []
    running: list[float] = []
    for step in tqdm(range(1, cfg.max_steps + 1), desc="adapt T5", mininterval=10):
        model.train()
        if len(order) < cfg.batch_size:
            order += list(rng.permutation(len(train_ids)))
        picked, order = order[: cfg.batch_size], order[cfg.batch_size :]
        batch = collate([corrupt_one(train_ids[i], cfg, rng, sentinels, eos) for i in picked], pad)
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device):
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        running.append(loss.item())
        if not math.isfinite(running[-1]):
            raise FloatingPointError(f"adapt: loss is {running[-1]} at step {step}")
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            evaluate(step, float(np.mean(running)))
            running = []
    model.eval()
    return curve


# ---------------------------------------------------------------- the stage's work


def split_dev(texts: Sequence[str], dev_sentences: int, seed: int) -> tuple[list, list]:
    """(train, dev): a seeded shuffle, dev at most `dev_sentences` and a tenth of the
    texts, at least one."""
    order = np.random.default_rng(seed).permutation(len(texts))
    n_dev = min(dev_sentences, max(1, len(texts) // 10))
    return [texts[i] for i in order[n_dev:]], [texts[i] for i in order[:n_dev]]


def adapt_corpus(corpus: str, out: str, params: dict) -> tuple[dict, list[dict]]:
    """Adapt `adapt_t5.model[lang]` on a seeded sample of `corpus` and save it to `out`
    (atomically); return (metrics, the loss curve)."""
    cfg, lang, seed = params["adapt_t5"], params["lang"], params["seed"]
    seed_everything(seed)
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    device = select_device(params["device"])
    model_id = cfg["model"][lang]
    if not is_standin(model_id) and is_causal_lm(resolve_model(model_id).path):
        return record_causal(model_id, out, lang), []
    texts = sample_corpus(corpus, cfg["max_sentences"], seed, lang)["text"].tolist()
    if len(texts) < 2:
        raise InputError(f"{corpus}: {len(texts)} sentence(s) of lang {lang!r}; need 2 or more")
    train, dev = split_dev(texts, cfg["dev_sentences"], seed)
    with atomic_dir(out) as tmp:
        if is_standin(model_id):
            described = build_standin_t5(train, tmp, seed=seed, **cfg["standin"])
            path, stand_in = tmp, True
        else:
            resolved = resolve_model(model_id)
            described, path, stand_in = resolved.describe(), resolved.path, False
        log.info("base model: %s", described)
        curve = _adapt_saved(path, tmp, train, dev, cfg, seed, device)
        info = {
            "model": described,
            "stand_in": stand_in,
            "adapted": bool(cfg["enabled"]),
            "steps": cfg["max_steps"] if cfg["enabled"] else 0,
            "lang": lang,
            "paper_model": model_id in PAPER_T5,
        }
        write_json(info, tmp / "paracl_t5.json")
    metrics = {
        **info,
        "train_sentences": len(train),
        "dev_sentences": len(dev),
        "dev_loss_before": round(curve[0]["dev_loss"], 6) if curve else None,
        "dev_loss": round(curve[-1]["dev_loss"], 6) if curve else None,
        "train_loss_last": round(curve[-1]["train_loss"], 6) if len(curve) > 1 else None,
    }
    log.info("dev loss %s -> %s", metrics["dev_loss_before"], metrics["dev_loss"])
    return metrics, curve


def record_causal(model_id: str, out: str, lang: str) -> dict:
    """A causal LM is not adapted: span-corruption denoising is T5's objective, and
    retraining a 135M-270M LM is not a 2-core CPU job. `out` gets only paracl_t5.json
    naming the model (no copy of its weights: the corrupt stage resolves the id), so
    the stage is instant and corrupt reruns when the model changes."""
    info = {
        "model": describe(model_id),
        "causal_lm": True,
        "stand_in": False,
        "paper_model": False,  # the paper fills blanks with T5
        "adapted": False,
        "steps": 0,
        "lang": lang,
        "note": "causal LM: used as is (adapt_t5's denoising applies to T5 only)",
    }
    with atomic_dir(out) as tmp:
        write_json(info, tmp / "paracl_t5.json")
    log.info("causal LM %s: recorded, not adapted", model_id)
    return {
        **info,
        "train_sentences": 0,
        "dev_sentences": 0,
        "dev_loss_before": None,
        "dev_loss": None,
        "train_loss_last": None,
    }


def _adapt_saved(
    base: str | Path,
    out: Path,
    train: list[str],
    dev: list[str],
    cfg: dict,
    seed: int,
    device: torch.device,
) -> list[dict]:
    """Load the T5 at `base`, adapt it when `cfg["enabled"]`, save it (and its tokenizer)
    to `out`; return the curve (empty when not adapted)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSeq2SeqLM.from_pretrained(base)
    curve: list[dict] = []
    if cfg["enabled"]:
        settings = AdaptConfig(
            noise_density=cfg["noise_density"],
            mean_noise_span_length=cfg["mean_noise_span_length"],
            lr=cfg["lr"],
            max_steps=cfg["max_steps"],
            batch_size=cfg["batch_size"],
            max_length=cfg["max_length"],
            eval_every=cfg["eval_every"],
            seed=seed,
        )
        curve = adapt(model, tokenizer, train, dev, settings, device)
    model.to("cpu").save_pretrained(out)
    tokenizer.save_pretrained(out)
    return curve


def write_curve(curve: list[dict], csv_path: str | Path, png_path: str | Path) -> None:
    """The dev/train loss curve as CSV (for `dvc plots`) and PNG (to look at)."""
    with atomic_path(csv_path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "train_loss", "dev_loss"])
        writer.writeheader()
        for row in curve:
            writer.writerow({k: "" if v is None else round(v, 6) for k, v in row.items()})
    with png_figure(png_path, dpi=100, tight=False, figsize=(6, 4)) as (fig, ax):
        trained = [r for r in curve if r["train_loss"] is not None]
        ax.plot([r["step"] for r in trained], [r["train_loss"] for r in trained], label="train")
        ax.plot([r["step"] for r in curve], [r["dev_loss"] for r in curve], label="dev", marker="o")
        ax.set(xlabel="step", ylabel="loss (nats / target token)", title="T5 denoising adaptation")
        ax.set_yscale("log")
        ax.legend()
