"""One evaluation job: score one encoder on one task, as the `evaluate` stage runs it.

Jobs are named by task: `unsup_sts_en` / `unsup_sts_ja` (cosine STS, no training),
`pi_en` / `pi_ja` (cosine-threshold paraphrase identification), or any fine-tuning task
of the registry (`stsb`, `sicke`, `jnli`, …). The result is one JSON-able dict whose
top-level `score` (and `score_std`) is what the summary table shows.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from paracl.evaluation.encoder import EmbeddingCache, describe_encoder, load_encoder
from paracl.evaluation.finetune import FinetuneConfig, finetune_task
from paracl.evaluation.paraphrase_id import PI_SETS, evaluate_pi
from paracl.evaluation.tasks import TASKS, TaskData, TaskUnavailable, get_task, load_task
from paracl.evaluation.unsup_sts import evaluate_unsup_sts, sts_sets

log = logging.getLogger(__name__)

UNSUP = {"unsup_sts_en": "en", "unsup_sts_ja": "ja"}
PI = {"pi_en": "en", "pi_ja": "ja"}
JOBS = (*UNSUP, *PI, *TASKS)


def job_info(name: str) -> dict:
    """Kind, language, metric and column title of a job (for the summary table)."""
    if name in UNSUP:
        return {"kind": "unsup_sts", "lang": UNSUP[name], "metric": "spearman",
                "title": "STS avg (unsup.)", "group": "Unsupervised"}  # fmt: skip
    if name in PI:
        return {"kind": "pi", "lang": PI[name], "metric": "accuracy",
                "title": "PI acc (cosine)", "group": "Unsupervised"}  # fmt: skip
    t = get_task(name)
    return {"kind": "finetune", "lang": t.lang, "metric": t.metric, "title": t.title,
            "group": t.group}  # fmt: skip


def _cap(data: TaskData, max_train: int | None, max_dev: int | None, seed: int) -> TaskData:
    """A seeded sample of train/dev (same for every method and fine-tuning seed)."""
    for split, cap in (("train", max_train), ("dev", max_dev)):
        df = getattr(data, split)
        if cap is not None and len(df) > cap:
            setattr(data, split, df.sample(n=cap, random_state=seed).reset_index(drop=True))
            data.provenance[split] += f"; capped to a seeded sample of {cap}"
    return data


def run_job(
    method: str,
    task: str,
    encoder_dir: str | Path,
    cfg: dict,
    seed: int,
    device,
    train_metrics: str | Path | None = None,
):
    """Evaluate encoder `encoder_dir` (trained by `method`) on job `task`.

    `train_metrics` is the training stage's metrics file for this method, read only to
    name the base model that ran.
    """
    if task not in JOBS:
        raise KeyError(f"unknown evaluation task {task!r} (known: {', '.join(JOBS)})")
    info = job_info(task)
    encoder = describe_encoder(encoder_dir, train_metrics)
    result = {"method": method, "task": task, **info, "encoder": encoder}
    raw = cfg["raw_dir"]
    try:
        if info["kind"] == "unsup_sts":
            sets = sts_sets(info["lang"], raw)
            cache = EmbeddingCache(load_encoder(encoder_dir, device), cfg["encode_batch_size"])
            out = evaluate_unsup_sts(cache, sets, cfg["max_eval_pairs"])
            scores = {k: round(v["spearman"], 2) for k, v in out["sets"].items()}
            speed = cache.speed()["sentences_per_second"]
            log.info("unsup STS: %s (%.0f sentences/s)", scores, speed)
            result.update(out, score=out["avg_spearman"], score_std=0.0, official_split=True,
                          split_note="official test splits of every set")  # fmt: skip
        elif info["kind"] == "pi":
            cache = EmbeddingCache(load_encoder(encoder_dir, device), cfg["encode_batch_size"])
            sets = {}
            for name in PI_SETS[info["lang"]]:
                data = load_task(name, raw, seed, cfg["dev_fraction"], cfg["test_fraction"])
                sets[name] = evaluate_pi(cache, data, cfg["max_eval_pairs"])
            result.update(
                sets=sets,
                score=float(np.mean([s["accuracy"] for s in sets.values()])),
                score_std=0.0,
                official_split=all(s["official_split"] for s in sets.values()),
                split_note="; ".join(f"{k}: test = {v['provenance']['test']}"
                                     for k, v in sets.items()),
            )  # fmt: skip
        else:
            t = get_task(task)
            data = load_task(t, raw, seed, cfg["dev_fraction"], cfg["test_fraction"])
            data = _cap(data, cfg["max_train"], cfg["max_dev"], seed)
            ft = FinetuneConfig(
                epochs=cfg["epochs"] or t.epochs,
                lr=cfg["lr"] or t.lr,
                batch_size=cfg["batch_size"] or t.batch_size,
                max_length=cfg["max_seq_length"],  # fine-tuning only; embedding tasks: as saved
                patience=cfg["patience"],
            )
            out = finetune_task(encoder_dir, data, ft, cfg["seeds"], device)
            paper = {"epochs": t.epochs, "lr": t.lr, "batch_size": t.batch_size,
                     "source": t.hp_source}  # fmt: skip
            result.update(
                out,
                score=out["test"]["mean"],
                score_std=out["test"]["std"],
                dev_score=out["dev"]["mean"],
                official_split=data.official_split,
                provenance=data.provenance,
                sizes=data.sizes(),
                paper_hyperparameters=paper,
                split_note="official splits" if data.official_split else "; ".join(
                    f"{k}: {v}" for k, v in data.provenance.items()),
            )  # fmt: skip
    except TaskUnavailable as err:
        log.warning("skipped: %s", err)
        result.update(skipped=str(err), score=None, score_std=None, official_split=None)
    return _finite(result)


def _finite(obj):
    """NaN/inf → None, so the JSON stays valid (a correlation of constant predictions
    is undefined, not a number DVC can diff)."""
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
