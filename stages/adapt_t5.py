"""Stage adapt_t5: corpus → models/t5_adapted (T5 adapted by span-corruption denoising).

With `adapt_t5.enabled: false` the base model is saved unchanged, so the corrupt stage
always reads models/t5_adapted. models/t5_adapted/paracl_t5.json says what it is.
"""

import csv
import logging

import numpy as np
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl.device import seed_everything, select_device
from paracl.io import atomic_dir, atomic_path, write_json
from paracl.models import resolve_model
from paracl.negatives.adapt import AdaptConfig, adapt
from paracl.negatives.standin import build_standin_t5, is_standin
from paracl.sampling import sample_corpus
from paracl.stage import InputError, run

CORPUS = "data/corpus/sentences.parquet"
OUT = "models/t5_adapted"
METRICS = "metrics/adapt_t5.json"
CURVE = "metrics/adapt_t5/curve.csv"
PLOT = "metrics/adapt_t5/curve.png"

log = logging.getLogger("adapt_t5")


def write_curve(curve: list[dict]) -> None:
    """The dev/train loss curve as CSV (for `dvc plots`) and PNG (to look at)."""
    with atomic_path(CURVE) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "train_loss", "dev_loss"])
        writer.writeheader()
        for row in curve:
            writer.writerow({k: "" if v is None else round(v, 6) for k, v in row.items()})
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    trained = [r for r in curve if r["train_loss"] is not None]
    ax.plot([r["step"] for r in trained], [r["train_loss"] for r in trained], label="train")
    ax.plot([r["step"] for r in curve], [r["dev_loss"] for r in curve], label="dev", marker="o")
    ax.set(xlabel="step", ylabel="loss (nats / target token)", title="T5 denoising adaptation")
    ax.set_yscale("log")
    ax.legend()
    with atomic_path(PLOT) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


def main(params: dict) -> None:
    cfg, lang, seed = params["adapt_t5"], params["lang"], params["seed"]
    seed_everything(seed)
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    device = select_device(params["device"])
    corpus = sample_corpus(CORPUS, cfg["max_sentences"], seed, lang)
    texts = corpus["text"].tolist()
    if len(texts) < 2:
        raise InputError(f"{CORPUS}: {len(texts)} sentence(s) of lang {lang!r}; need 2 or more")
    order = np.random.default_rng(seed).permutation(len(texts))
    n_dev = min(cfg["dev_sentences"], max(1, len(texts) // 10))
    dev = [texts[i] for i in order[:n_dev]]
    train = [texts[i] for i in order[n_dev:]]
    model_id = cfg["model"][lang]
    with atomic_dir(OUT) as tmp:
        if is_standin(model_id):
            described = build_standin_t5(train, tmp, seed=seed, **cfg["standin"])
            path, stand_in = tmp, True
        else:
            resolved = resolve_model(model_id)
            described, path, stand_in = resolved.describe(), resolved.path, False
        log.info("base model: %s", described)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSeq2SeqLM.from_pretrained(path)
        curve: list[dict] = []
        if cfg["enabled"]:
            acfg = AdaptConfig(
                noise_density=cfg["noise_density"],
                mean_noise_span_length=cfg["mean_noise_span_length"],
                lr=cfg["lr"],
                max_steps=cfg["max_steps"],
                batch_size=cfg["batch_size"],
                max_length=cfg["max_length"],
                eval_every=cfg["eval_every"],
                seed=seed,
            )
            curve = adapt(model, tokenizer, train, dev, acfg, device)
        model.to("cpu").save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        info = {
            "model": described,
            "stand_in": stand_in,
            "adapted": bool(cfg["enabled"]),
            "steps": cfg["max_steps"] if cfg["enabled"] else 0,
            "lang": lang,
        }
        write_json(info, tmp / "paracl_t5.json")
    metrics = dict(info)
    metrics.update(
        {
            "train_sentences": len(train),
            "dev_sentences": len(dev),
            "dev_loss_before": round(curve[0]["dev_loss"], 6) if curve else None,
            "dev_loss": round(curve[-1]["dev_loss"], 6) if curve else None,
            "train_loss_last": round(curve[-1]["train_loss"], 6) if len(curve) > 1 else None,
        }
    )
    write_curve(curve)
    write_json(metrics, METRICS)
    log.info("dev loss %s -> %s", metrics["dev_loss_before"], metrics["dev_loss"])


if __name__ == "__main__":
    run(main)
