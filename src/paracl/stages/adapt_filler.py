"""The adapt_filler stage's work: the blank filler adapted to the target corpus (JCSE §4.4).

JCSE fine-tunes its filler on the raw target-domain corpus before it fills any blank, so
that fills use the domain's terms. The path follows the model's config:
- T5 (the paper's filler; a hub id or the tiny-random:t5 test stand-in): span-corruption
  denoising (paracl.parts.filler.adapt), `adapt_filler.t5`;
- a causal LM (the offline default, SmolLM2 / gemma-3): continued next-token training
  (paracl.parts.filler.adapt_causal), `adapt_filler.causal_lm`.

A seeded sample of the corpus is split into train and a held-out dev set; the metrics
give the dev loss and perplexity before and after, and say which path ran
(`filler`, `objective`). The directory gets the adapted model and a paracl_filler.json
naming it. With `adapt_filler.enabled: false`, a T5 base is saved unchanged and a
causal LM is only recorded (paracl_filler.json names it; no copy of its weights), so
the corrupt stage always reads the same directory.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from paracl.core.configs import from_section
from paracl.core.device import seed_everything, select_device
from paracl.core.errors import InputError
from paracl.core.io import atomic_dir, atomic_path, write_json
from paracl.core.key_figures import write_metrics
from paracl.core.models import build_on_texts, describe_model, is_built, resolve_model
from paracl.core.params import Lang, RunSettings, RunWide, Section, param
from paracl.core.plots import png_figure
from paracl.core.sampling import sample_corpus
from paracl.core.stage import args
from paracl.parts.filler import INFO_FILE, PAPER_T5

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class AdaptFiller(Section):
    class T5(Section):  # span-corruption denoising, Adafactor (JCSE §3.2, §4.4)
        noise_density: float = param(min=0.01, max=0.99)
        mean_noise_span_length: float = param(min=1.0, max=20.0)
        lr: float = param(min=0.0, max=1.0)
        max_steps: int = param(min=1)
        batch_size: int = param(min=1)
        eval_every: int = param(min=1)

    class CausalLM(Section):  # continued next-token training, AdamW
        lr: float = param(min=0.0, max=1.0)
        max_steps: int = param(min=1)
        batch_size: int = param(min=1)
        eval_every: int = param(min=1)
        train_layers: int | None = param(min=1, help="top layers trained; null = all")
        freeze_embeddings: bool = param(help="the vocabulary's embeddings fixed")

    class Standin(Section):
        vocab_size: int = param(min=200, max=64000)
        d_model: int = param(min=16, max=1024)
        num_layers: int = param(min=1, max=24)

    # a causal LM (default), a T5 hub id (paper: t5-base / sonoisa/t5-base-japanese-v1.1)
    # or tiny-random:t5 (test stand-in); the config picks the path (t5 / causal_lm)
    model: dict[Lang, str]
    enabled: bool = param(help="false: the filler as it is (T5 saved, causal LM recorded)")
    max_length: int = param(min=4, max=1024, help="tokens per sentence")
    dev_sentences: int = param(min=1, help="held-out sentences for the dev loss")
    max_sentences: int | None = param(min=2, help="corpus sentences; null = all")
    threads: int | None = param(min=1, max=256, help="torch CPU threads")
    t5: T5
    causal_lm: CausalLM
    standin: Standin


class Params(RunWide):
    """What stage adapt_filler reads of params.yaml: the run-wide keys and these."""

    target_corpus: str = param(help="the corpus the filler adapts to and corrupt draws from")
    adapt_filler: AdaptFiller


log = logging.getLogger(__name__)

OBJECTIVES = {"t5": "span-corruption denoising", "causal_lm": "next-token prediction"}
PERPLEXITY_OF = {
    "t5": "the masked spans of held-out sentences (span corruption, fixed dev masks)",
    "causal_lm": "every token of held-out sentences (BOS + sentence + EOS)",
}


def split_dev(texts: Sequence[str], dev_sentences: int, seed: int) -> tuple[list, list]:
    """(train, dev): a seeded shuffle, dev at most `dev_sentences` and a tenth of the
    texts, at least one."""
    order = np.random.default_rng(seed).permutation(len(texts))
    n_dev = min(dev_sentences, max(1, len(texts) // 10))
    return [texts[i] for i in order[n_dev:]], [texts[i] for i in order[:n_dev]]


def filler_kind(model_id: str) -> str:
    """'t5' or 'causal_lm', from the model's config (a stand-in is the T5 one)."""
    from paracl.parts.filler.causal import is_causal_lm  # torch: loaded where a stage runs

    if is_built(model_id) or not is_causal_lm(resolve_model(model_id).path):
        return "t5"
    return "causal_lm"


def adapt_corpus(corpus: str, out: str, cfg: dict, run: RunSettings) -> tuple[dict, list[dict]]:
    """Adapt `adapt_filler.model[lang]` (`cfg`: the adapt_filler section) on a seeded
    sample of `corpus` and save it to `out` (atomically); return (metrics, the loss curve)."""
    import torch

    lang, seed = run.lang, run.seed
    cfg = {**cfg, "precision": run.precision}  # the run's, for the training loops
    seed_everything(seed)
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    device = select_device(run.device)
    model_id = cfg["model"][lang]
    kind = filler_kind(model_id)
    if kind == "causal_lm" and not cfg["enabled"]:
        return record_causal(model_id, out, lang), []
    texts = sample_corpus(corpus, cfg["max_sentences"], seed, lang)["text"].tolist()
    if len(texts) < 2:
        raise InputError(f"{corpus}: {len(texts)} sentence(s) of lang {lang!r}; need 2 or more")
    train, dev = split_dev(texts, cfg["dev_sentences"], seed)
    with atomic_dir(out) as tmp:
        if is_built(model_id):
            described = build_on_texts(model_id, train, tmp, seed, **cfg["standin"])
            path, stand_in = tmp, True
        else:
            resolved = resolve_model(model_id)
            described, path, stand_in = resolved.describe(), resolved.path, False
        log.info("base model: %s (%s)", described, kind)
        adapt_saved = _adapt_causal_saved if kind == "causal_lm" else _adapt_t5_saved
        curve, trains = adapt_saved(path, tmp, train, dev, cfg, seed, device)
        info = _info(kind, described, stand_in, cfg, lang, model_id)
        write_json(info, tmp / INFO_FILE)
    metrics = {
        **info,
        "trains": trains,
        "train_sentences": len(train),
        "dev_sentences": len(dev),
        **_loss_metrics(curve, kind),
    }
    log.info("dev perplexity %s -> %s", metrics["dev_perplexity_before"], metrics["dev_perplexity"])
    return metrics, curve


def _info(kind: str, described: dict, stand_in: bool, cfg: dict, lang: str, model_id: str):
    """paracl_filler.json: the model, which path ran, whether it was adapted."""
    enabled = bool(cfg["enabled"])
    return {
        "model": described,
        "filler": kind,
        "causal_lm": kind == "causal_lm",
        "stand_in": stand_in,
        "adapted": enabled,
        "objective": OBJECTIVES[kind] if enabled else None,
        "steps": cfg[kind]["max_steps"] if enabled else 0,
        "lang": lang,
        "paper_model": model_id in PAPER_T5,
    }


def _loss_metrics(curve: list[dict], kind: str) -> dict:
    """Dev loss (nats per target token) and perplexity before and after adaptation."""

    def ppl(loss: float) -> float:
        return round(math.exp(min(loss, 50.0)), 4)

    return {
        "dev_loss_before": round(curve[0]["dev_loss"], 6) if curve else None,
        "dev_loss": round(curve[-1]["dev_loss"], 6) if curve else None,
        "dev_perplexity_before": ppl(curve[0]["dev_loss"]) if curve else None,
        "dev_perplexity": ppl(curve[-1]["dev_loss"]) if curve else None,
        "perplexity_of": PERPLEXITY_OF[kind] if curve else None,
        "train_loss_last": round(curve[-1]["train_loss"], 6) if len(curve) > 1 else None,
    }


def record_causal(model_id: str, out: str, lang: str) -> dict:
    """The causal LM as it is (enabled: false): `out` gets only paracl_filler.json naming
    the model (no copy of its weights: the corrupt stage resolves the id), so the stage
    is instant and corrupt reruns when the model changes."""
    info = {
        "model": describe_model(model_id),
        "filler": "causal_lm",
        "causal_lm": True,
        "stand_in": False,
        "adapted": False,
        "objective": None,
        "steps": 0,
        "lang": lang,
        "paper_model": False,  # the paper fills blanks with T5
    }
    with atomic_dir(out) as tmp:
        write_json(info, tmp / INFO_FILE)
    log.info("causal LM %s: recorded, not adapted (adapt_filler.enabled: false)", model_id)
    return {**info, "trains": None, "train_sentences": 0, "dev_sentences": 0,
            **_loss_metrics([], "causal_lm")}  # fmt: skip


def _shared(cfg: dict, seed: int) -> dict:
    """What both training paths take besides their own subsection: adapt_filler's
    max_length, the run's seed and precision."""
    return {"max_length": cfg["max_length"], "seed": seed, "precision": cfg["precision"]}


def _adapt_t5_saved(base, out: Path, train, dev, cfg: dict, seed: int, device):
    """Load the T5 at `base`, adapt it when enabled, save it (and its tokenizer) to `out`;
    return (the curve, empty when not adapted; what trained)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from paracl.parts.filler.adapt import AdaptConfig, adapt

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSeq2SeqLM.from_pretrained(base)
    curve: list[dict] = []
    if cfg["enabled"]:
        settings = from_section(AdaptConfig, cfg["t5"], **_shared(cfg, seed))
        curve = adapt(model, tokenizer, train, dev, settings, device)
    model.to("cpu").save_pretrained(out)
    tokenizer.save_pretrained(out)
    return curve, "all" if cfg["enabled"] else None


def _adapt_causal_saved(base, out: Path, train, dev, cfg: dict, seed: int, device):
    """Load the causal LM at `base` (fp32, as the filler loads it), adapt it, save it
    (and its tokenizer) to `out`; return (the curve, what trained)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from paracl.parts.filler.adapt_causal import CausalAdaptConfig, adapt_causal

    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    settings = from_section(CausalAdaptConfig, cfg["causal_lm"], **_shared(cfg, seed))
    curve, trains = adapt_causal(model, tokenizer, train, dev, settings, device)
    model.to("cpu").save_pretrained(out)
    tokenizer.save_pretrained(out)
    return curve, trains


def write_curve(curve: list[dict], csv_path, png_path, title: str = "filler adaptation") -> None:
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
        ax.set(xlabel="step", ylabel="loss (nats / target token)", title=title)
        ax.set_yscale("log")
        ax.legend()


# dvc.yaml's metrics (paracl.core.key_figures): the adapted filler's dev perplexity
KEY_FIGURES = ("dev_perplexity",)


def main(params: dict) -> None:
    paths = args("corpus", "model", "metrics", "curve_csv", "curve_png")
    metrics, curve = adapt_corpus(
        paths.corpus, paths.model, params["adapt_filler"], RunSettings.of(params)
    )
    title = f"{metrics['filler']} filler: {OBJECTIVES[metrics['filler']]} (dev loss)"
    write_curve(curve, paths.curve_csv, paths.curve_png, title)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
