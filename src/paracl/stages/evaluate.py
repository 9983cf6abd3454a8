"""One embedding job: score one encoder on one task from its embeddings alone, as the
`evaluate` stage runs it.

Jobs are named by task: `unsup_sts_en` / `unsup_sts_ja` (cosine STS, no training),
`pi_en` / `pi_ja` (cosine-threshold paraphrase identification), and JCSE's domain tasks
`jacsts` (clinical STS, cosine) and `qabot` (question retrieval). The fine-tuning tasks
of the registry (`stsb`, `sicke`, `jnli`, …) are the `evaluate_finetune` stage's
(`finetune_job`). The result is one JSON-able dict whose top-level `score` (and
`score_std`) is what the summary table shows.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Literal

import numpy as np

from paracl.core.device import precision_record, select_device
from paracl.core.io import read_json, write_json
from paracl.core.languages import profile
from paracl.core.params import RunSettings, RunWide, Section, param
from paracl.core.stage import args
from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
from paracl.parts.evaluation import tasks
from paracl.parts.evaluation.jcse_readers import read_qabot
from paracl.parts.evaluation.job_result import check_inputs, job_result
from paracl.parts.evaluation.paraphrase_id import evaluate_pi
from paracl.parts.evaluation.pi_classes import paper_mean
from paracl.parts.evaluation.retrieval import MAX_LENGTH, TITLES, evaluate_qabot
from paracl.parts.evaluation.tasks import (  # the job registry lives with the task registry
    EMBEDDING_JOBS,
    EN,
    FINETUNE_JOBS,
    PI,
    PI_XLING,
    UNSUP,
    get_task,
    job_info,
    load_task_for,
)
from paracl.parts.evaluation.unsup_sts import (
    evaluate_unsup_sts,
    jacsts_sets,
    scored_sets,
    sts_sets,
)

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


def job_names() -> tuple[str, ...]:
    """The evaluation jobs (paracl.parts.evaluation.tasks.JOBS): a task's name."""
    return tasks.JOBS


class Evaluate(Section):
    # the encoders evaluated are the keys of train_contrastive.methods
    tasks: list[str] = param(
        help="embedding jobs of every run: unsup_sts_<lang>, pi_<lang>, jacsts, qabot",
        names=job_names,
    )
    finetune_tasks: list[str] = param(
        help="fine-tuning tasks of finetune_methods' runs (stage evaluate_finetune)",
        names=job_names,
    )  # fmt: skip
    finetune_methods: list[str] | None = param(
        help="methods whose runs get finetune_tasks; null = every method"
    )
    finetune_runs: list[str] = param(help="their runs, written by `paracl expand`")
    finetune_task_methods: dict[str, list[str]] = param(
        help="tasks of finetune_tasks fine-tuned for these methods only; {} = for every one"
    )
    raw_dir: str
    seeds: list[int] = param(min=0, help="fine-tuning seeds")
    baseline_seeds: list[int] | None = param(
        min=0, help="fine-tuning seeds of a run that trains nothing (loss none); null = seeds"
    )
    epochs: int | None = param(min=1, help="null: each task's paper value")
    lr: float | None = param(min=0.0, max=1.0, help="null: paper value")
    batch_size: int | None = param(min=1, help="null: paper value")
    patience: int = param(min=1, help="early stop after N epochs without dev gain")
    max_train: int | None = param(min=1, help="seeded train sample; null = all")
    max_dev: int | None = param(min=1, help="seeded dev sample; null = all")
    max_test: int | None = param(min=1, help="fine-tuning: seeded test sample; null = all")
    train_layers: int | None = param(
        min=1, help="fine-tuning: the top N layers (+ head) train; null = every layer"
    )
    length_grouping: bool = param(
        help="fine-tuning: batches of similar token length; false = random (papers)"
    )
    mini_batch_size: int | None = param(
        min=1, help="fine-tuning: rows per forward, length-sorted; same gradient; null = all"
    )
    finetune_head: Literal["pooled", "last_token"] = param(
        help="a causal LM's task head: on the last token, or on its sentence embedding",
    )
    max_eval_pairs: int | None = param(min=1, help="unsup/PI cap; null = all")
    exclude_sts: list[str] = param(
        help="STS sets no run is scored on (rows trained on SICK: SICKRelatedness); [] = none"
    )
    max_seq_length: int = param(min=8, max=4096)
    encode_batch_size: int = param(min=1)
    missing_splits: Literal["resplit", "fail"] = param(
        help="a paper split file absent: re-split what exists, or stop"
    )
    dev_fraction: float = param(min=0.01, max=0.5, help="dev carved from train (and re-splits)")
    test_fraction: float = param(min=0.01, max=0.5, help="re-split of a single split: test share")


class Params(RunWide):
    """What stage evaluate reads of params.yaml: the run-wide keys and these."""

    evaluate: Evaluate


log = logging.getLogger(__name__)

__all__ = ["EMBEDDING_JOBS", "PI", "UNSUP", "job_info", "run_job"]


def run_job(
    method: str,
    task: str,
    encoder_dir: str | Path,
    cfg: dict,
    run: RunSettings,
    train_metrics: str | Path | None = None,
) -> dict:
    """Evaluate encoder `encoder_dir` (trained by `method`) on embedding job `task`
    (`cfg`: the evaluate section).

    `run.seed` draws every sample of the job (the same for every method), on
    `run.device` under `run.precision`; `train_metrics` is the training stage's metrics
    file for this method, read only to name the base model that ran.
    """
    if task not in EMBEDDING_JOBS:
        hint = " (a fine-tuning task: stage evaluate_finetune)" if task in FINETUNE_JOBS else ""
        raise KeyError(f"unknown embedding job {task!r}{hint} (known: {', '.join(EMBEDDING_JOBS)})")
    info = job_info(task)
    trained = training_data(train_metrics)
    sts = functools.partial(_unsup_sts, run=method, trained=trained)
    kinds = {"unsup_sts": sts, "pi": _pi, "pi_xling": _pi_xling, "domain_sts": _jacsts,
             "retrieval": _qabot}  # fmt: skip
    job, seed, precision = kinds[info["kind"]], run.seed, run.precision
    device = select_device(run.device)
    ran_in = precision_record(device, precision)  # as _cache encodes
    return job_result(
        method, task, encoder_dir, train_metrics,
        lambda: {**job(task, info["lang"], encoder_dir, cfg, seed, device, precision),
                 "ran_in": ran_in},
    )  # fmt: skip


def training_data(train_metrics: str | Path | None) -> dict | None:
    """What the run's training data records of the STS sets it was checked against
    (train_contrastive's metrics, `training_data`); None where none is recorded."""
    if train_metrics is None or not Path(train_metrics).is_file():
        return None
    return read_json(train_metrics).get("training_data")


def _cache(model, cfg: dict, precision: str) -> EmbeddingCache:
    """The job's embedding cache, encoding under the run's `precision`."""
    return EmbeddingCache(model, cfg["encode_batch_size"], precision)


def _sample_note(cfg: dict, seed: int) -> str:
    cap = cfg["max_eval_pairs"]
    if cap is None:
        return "whole sets"
    return f"a seeded sample of at most {cap} pairs per set (seed {seed}, stratified)"


def _unsup_sts(
    task: str,
    lang: str,
    encoder_dir,
    cfg: dict,
    seed: int,
    device,
    precision: str,
    run: str = "",
    trained: dict | None = None,
) -> dict:
    """Cosine STS on the sets the run may be scored on (unsup_sts.scored_sets): its
    average is over those alone; each other set's cell says why it has no number."""
    sets = sts_sets(lang, cfg["raw_dir"])
    names, excluded = scored_sets(list(sets), list(cfg.get("exclude_sts") or ()), trained, run)
    cache = _cache(load_encoder(encoder_dir, device), cfg, precision)
    out = evaluate_unsup_sts(cache, {n: sets[n] for n in names}, cfg["max_eval_pairs"], seed)
    if excluded:
        out["excluded_sets"] = excluded
    scores = {k: round(v["spearman"], 2) for k, v in out["sets"].items()}
    log.info("unsup STS: %s (%.0f sentences/s)", scores, cache.speed()["sentences_per_second"])
    note = f"official test splits of every set; {_sample_note(cfg, seed)}"
    return {**out, "score": out["avg_spearman"], "score_std": 0.0, "official_split": True,
            "split_note": note}  # fmt: skip


def _jacsts(
    task: str, lang: str, encoder_dir, cfg: dict, seed: int, device, precision: str
) -> dict:
    """JACSTS (JCSE Table 6): cosine STS on the test pairs, as unsup_sts; the dev pairs'
    Spearman (`dev_score`) is the one to select a model or checkpoint by."""
    cache = _cache(load_encoder(encoder_dir, device), cfg, precision)
    out = evaluate_unsup_sts(cache, jacsts_sets(cfg["raw_dir"]), cfg["max_eval_pairs"], seed)
    out.pop("avg_spearman")  # of test and dev: not a number to report
    test, dev = out["sets"]["test"], out["sets"]["dev"]
    log.info("JACSTS: test %.2f, dev %.2f", test["spearman"], dev["spearman"])
    note = f"the JCSE authors' dev/test split; {_sample_note(cfg, seed)}, by gold score"
    return {**out, "score": test["spearman"], "score_std": 0.0, "dev_score": dev["spearman"],
            "official_split": True, "split_note": note}  # fmt: skip


def _qabot(task: str, lang: str, encoder_dir, cfg: dict, seed: int, device, precision: str) -> dict:
    """QAbot (JCSE Table 6): retrieval in the 20 pools, texts cut to 64 tokens as the
    authors' evaluator cuts them; `score` is MAP, `breakdown` Table 6's four metrics.
    max_eval_pairs caps the shared pool's questions (every relevant one kept)."""
    model = load_encoder(encoder_dir, device)
    model.max_seq_length = MAX_LENGTH
    cache = _cache(model, cfg, precision)
    pools = read_qabot(Path(cfg["raw_dir"]) / "jcse" / "QAbot")
    out = evaluate_qabot(cache, pools, cfg["max_eval_pairs"], seed)
    log.info("QAbot: %s (%.0f sentences/s)", out["metrics"], cache.speed()["sentences_per_second"])
    breakdown = {TITLES[k]: v for k, v in out["metrics"].items()}
    sample = out["sample"]
    note = "the authors' 20 pools, whole" if sample["questions"] == sample["of"] else (
        f"the authors' 20 pools cut to {sample['questions']} of their {sample['of']} questions: "
        f"every relevant one and a seeded sample of the rest (seed {seed})")  # fmt: skip
    return {**out, "score": out["metrics"]["map"], "score_std": 0.0, "breakdown": breakdown,
            "official_split": True, "split_note": note}  # fmt: skip


def _pi(task: str, lang: str, encoder_dir, cfg: dict, seed: int, device, precision: str) -> dict:
    cache = _cache(load_encoder(encoder_dir, device), cfg, precision)
    sets = {
        name: evaluate_pi(cache, load_task_for(name, cfg, seed), cfg["max_eval_pairs"], seed)
        for name in profile(lang).pi_sets
    }
    tests = "; ".join(f"{k}: test = {v['provenance']['test']}" for k, v in sets.items())
    return {
        "sets": sets,
        "score": float(np.mean([s["accuracy"] for s in sets.values()])),
        "score_std": 0.0,
        "official_split": all(s["official_split"] for s in sets.values()),
        "split_note": f"{tests}; {_sample_note(cfg, seed)}",
    }


def _pi_xling(
    task: str, lang: str, encoder_dir, cfg: dict, seed: int, device, precision: str
) -> dict:
    """The cross-lingual PI paper's evaluation (§IV): the cosine threshold that maximises
    accuracy on held-out English PAWS pairs, then accuracy on English PAWS-Wiki test (en),
    Japanese PAWS-X dev (ja, zero-shot) and its cross-lingual pairs (en_ja, ja_en; and the
    translation pairs, all positive); `score` is Table I's mean: the mean of Table II's
    classes (pi_classes.paper_mean), as the summary scores it."""
    model = load_encoder(encoder_dir, device)
    cache = EmbeddingCache(model, cfg["encode_batch_size"])
    out = evaluate_pi(cache, load_task_for(PI_XLING[task], cfg, seed), cfg["max_eval_pairs"], seed)
    out["parameters"] = sum(p.numel() for p in model.parameters())  # Table I's Params
    sets = {EN: out["accuracy"], **{k: v["accuracy"] for k, v in out["eval_sets"].items()}}
    log.info("PI en/ja at threshold %.3f: %s", out["threshold"],
             {k: round(v, 1) for k, v in sets.items()})  # fmt: skip
    note = (f"threshold: {out['provenance']['dev']}; en: {out['provenance']['test']}; ja, en_ja, "
            f"ja_en, translation: {get_task(PI_XLING[task]).source}; {_sample_note(cfg, seed)}")  # fmt: skip
    pairs = {EN: out["test_pairs"], **{k: v["pairs"] for k, v in out["eval_sets"].items()}}
    return {**out, "breakdown": sets, "score": paper_mean(sets, pairs), "score_std": 0.0,
            "split_note": note}  # fmt: skip


def main(params: dict) -> None:
    paths = args("run", "task", "encoder", "train_metrics", "out")
    cfg, run = params["evaluate"], RunSettings.of(params)
    check_inputs("evaluate.tasks", paths.task, paths.encoder, paths.train_metrics, cfg["raw_dir"])
    result = run_job(paths.run, paths.task, paths.encoder, cfg, run, paths.train_metrics)
    write_json(result, paths.out)
