"""One fine-tuning job: fine-tune an encoder on a task of the registry (`stsb`, `sicke`,
`jnli`, …) over the fine-tuning seeds and score it, as the `evaluate_finetune` stage
runs it (evaluate.finetune_tasks × the runs of evaluate.finetune_methods).

The splits are the paper's where the files exist offline (else a seeded, recorded
re-split); `max_train` / `max_dev` / `max_test` cap them to seeded samples, the same for
every method, so a fine-tuned column compares methods on the same pairs.
"""

from __future__ import annotations

from pathlib import Path

from paracl.core.configs import from_section
from paracl.core.device import precision_record, select_device
from paracl.core.errors import ParamsError
from paracl.core.io import read_json, write_json
from paracl.core.params import OtherSection, RunSettings, RunWide
from paracl.core.stage import args
from paracl.parts.evaluation import tasks
from paracl.parts.evaluation.job_result import check_inputs, job_result
from paracl.parts.evaluation.metrics import summarize_seeds
from paracl.parts.evaluation.sample import sample_rows
from paracl.parts.evaluation.tasks import FINETUNE_JOBS, TaskData, get_task, load_task_for
from paracl.parts.runs import EXPAND, expand_runs
from paracl.stages.evaluate import Evaluate

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class Params(RunWide):
    """What stage evaluate_finetune reads of params.yaml: the run-wide keys and these."""

    evaluate: Evaluate
    train_contrastive: OtherSection  # its methods and seeds, for finetune_runs
    train_intermediate: OtherSection  # its arms (STILTs), fine-tuned beside them

    @classmethod
    def check(cls, values: dict) -> None:
        check_finetune_runs(values)


def finetune_runs(values: dict) -> list[str]:
    """evaluate.finetune_runs as `paracl expand` writes it: the runs of the methods in
    evaluate.finetune_methods (every seed; null: every method), then every arm of
    train_intermediate.arms (STILTs' encoders exist to be fine-tuned), which alone get
    evaluate.finetune_tasks.

    Why a list in params.yaml: DVC's matrix crosses whole lists; it cannot pick the runs
    of some methods, so the evaluate_finetune stage reads this one."""
    ev, tc = values["evaluate"], values["train_contrastive"]
    _check_job_kinds(ev)
    methods = ev["finetune_methods"]
    methods = list(tc["methods"]) if methods is None else methods
    unknown = [m for m in methods if m not in tc["methods"]]
    if unknown:
        raise ParamsError(
            f"'evaluate.finetune_methods': {unknown[0]!r} is not a method of "
            f"train_contrastive.methods (known: {', '.join(tc['methods'])})"
        )
    arms = list((values.get("train_intermediate") or {}).get("arms") or {})
    _check_task_methods(ev, methods + arms)
    return [run for run, r in expand_runs(tc).items() if r["method"] in methods] + arms


def run_method(params: dict, run: str) -> str:
    """The method of a fine-tuned run: its train_contrastive method, or, for an arm of
    train_intermediate.arms, the arm itself (one encoder, one row)."""
    runs = params["train_contrastive"]["runs"]
    return runs[run]["method"] if run in runs else run


def _check_task_methods(ev: dict, methods: list[str]) -> None:
    """evaluate.finetune_task_methods names tasks of finetune_tasks and methods that are
    fine-tuned (finetune_methods): a restriction never names a job that does not exist."""
    for task, only in ev["finetune_task_methods"].items():
        where = f"'evaluate.finetune_task_methods.{task}'"
        if task not in ev["finetune_tasks"]:
            known = ", ".join(ev["finetune_tasks"]) or "none"
            raise ParamsError(f"{where}: not a task of evaluate.finetune_tasks ({known})")
        unknown = [m for m in only if m not in methods]
        if unknown:
            raise ParamsError(
                f"{where}: {unknown[0]!r} is not a fine-tuned method "
                f"(evaluate.finetune_methods: {', '.join(methods)})"
            )


def stilts_skip(section: dict, run: str, task: str) -> str | None:
    """Why STILTs' row `run` (train_intermediate's start run or an arm) is not fine-tuned
    on `task`: not one of train_intermediate.tasks; None where it is, or not a STILTs row.
    An arm follows this list alone (never evaluate.finetune_task_methods)."""
    tasks = section["tasks"]
    if tasks is None or task in tasks or run not in (section["start"], *section["arms"]):
        return None
    return f"not run for STILTs' rows (train_intermediate.tasks: {', '.join(tasks)})"


def stilts_row(section: dict, run: str) -> bool:
    """`run` is one of STILTs' rows: an arm of train_intermediate.arms, or, where there
    are arms, the start run (Table 5's fine-tuning row)."""
    return run in section["arms"] or (bool(section["arms"]) and run == section["start"])


def job_section(params: dict, run: str) -> dict:
    """The evaluate section a job of `run` fine-tunes with: a STILTs row's keeps the last
    epoch (patience None) where train_intermediate.finetune_epoch is `last`, as Phang et
    al.'s glue/train.py; every other job the best epoch on dev (evaluate.patience)."""
    cfg, section = params["evaluate"], params["train_intermediate"]
    if section["finetune_epoch"] == "last" and stilts_row(section, run):
        return {**cfg, "patience": None}
    return cfg


def scores_head(params: dict, run: str, task: str) -> bool:
    """The job scores the arm's intermediate classifier itself, not fine-tuned again:
    `task` is train_intermediate.same_task (the round-trip paper §6.1: MNLI after STILTs
    on MNLI), `run` an arm."""
    section = params["train_intermediate"]
    return task == section["same_task"] and run in section["arms"]


def skipped(params: dict, run: str, task: str) -> dict | None:
    """The result of a job that is not run, or None: a STILTs row off
    train_intermediate.tasks, or a method that evaluate.finetune_task_methods leaves out
    of `task` (an arm is never: it follows train_intermediate.tasks alone)."""
    stilts = params["train_intermediate"]
    why = stilts_skip(stilts, run, task)
    if why is not None:
        return {**not_run(task, []), "skipped": why}
    only = params["evaluate"]["finetune_task_methods"].get(task)
    if only is not None and run not in stilts["arms"] and run_method(params, run) not in only:
        return not_run(task, only)
    return None


def not_run(task: str, only: list[str]) -> dict:
    """The result of a job that evaluate.finetune_task_methods leaves out: written at once,
    read by the summary as a cell not run for this method."""
    why = f"not run for this method (evaluate.finetune_task_methods: {task} for {', '.join(only)})"
    return {"skipped": why, "not_run": True, "score": None, "score_std": None,
            "official_split": None}  # fmt: skip


def _check_job_kinds(ev: dict) -> None:
    """evaluate.tasks holds embedding jobs, evaluate.finetune_tasks fine-tuning tasks: two
    stages, so that a fine-tuning setting reruns no embedding score."""
    for i, name in enumerate(ev["tasks"]):
        if name in tasks.FINETUNE_JOBS:
            raise ParamsError(
                f"'evaluate.tasks[{i}]': {name!r} is a fine-tuning task: list it in "
                "evaluate.finetune_tasks (finetune_methods: null runs it for every method)"
            )
    for i, name in enumerate(ev["finetune_tasks"]):
        if name in tasks.EMBEDDING_JOBS:
            raise ParamsError(
                f"'evaluate.finetune_tasks[{i}]': {name!r} is an embedding job, not a "
                "fine-tuning task: list it in evaluate.tasks"
            )


def check_finetune_runs(values: dict) -> None:
    """A stale evaluate.finetune_runs would fine-tune other runs than the methods say."""
    if values["evaluate"]["finetune_runs"] != finetune_runs(values):
        raise ParamsError(
            "'evaluate.finetune_runs' is out of date with evaluate.finetune_methods and "
            f"train_contrastive.runs: run `{EXPAND}` to rewrite it"
        )


def run_finetune_job(
    method: str,
    task: str,
    encoder_dir: str | Path,
    cfg: dict,
    run: RunSettings,
    train_metrics: str | Path | None = None,
) -> dict:
    """Fine-tune encoder `encoder_dir` (trained by `method`) on `task` (`cfg`: the
    evaluate section) on `run.device` under `run.precision`; `run.seed` draws the splits'
    samples, `finetune_seeds` the fine-tuning seeds."""
    if task not in FINETUNE_JOBS:
        raise KeyError(f"unknown fine-tuning task {task!r} (known: {', '.join(FINETUNE_JOBS)})")
    seeds = finetune_seeds(cfg, train_metrics)
    seed, precision, device = run.seed, run.precision, select_device(run.device)
    return job_result(
        method,
        task,
        encoder_dir,
        train_metrics,
        lambda: _finetune(task, encoder_dir, cfg, seed, device, precision, seeds),
    )


def finetune_seeds(cfg: dict, train_metrics: str | Path | None) -> list[int]:
    """evaluate.seeds, or evaluate.baseline_seeds for a run that trained nothing (its
    training metrics say loss none). A trained method's spread comes from its training
    seeds; the base's fine-tuned score has no other spread than its fine-tuning seeds."""
    baseline = cfg["baseline_seeds"]
    if baseline and train_metrics and Path(train_metrics).exists():
        if read_json(train_metrics).get("loss") == "none":
            return list(baseline)
    return list(cfg["seeds"])


def cap_splits(data: TaskData, caps: dict[str, int | None], seed: int) -> dict:
    """A seeded sample of each split in `caps` (same for every method and fine-tuning
    seed), stratified by label for classes and by genre where a set has one; the records.
    A capped test split is a sample of the whole set, never its first rows; further eval
    sets (zero-shot, cross-lingual) take test's cap."""
    records = {}
    by = "label" if data.task.kind == "classification" else None
    for split, cap in caps.items():
        df = getattr(data, split)
        strata = by or ("genre" if "genre" in df.columns else None)
        sample, records[split] = sample_rows(df, cap, seed, strata)
        if len(sample) < len(df):
            setattr(data, split, sample)
            data.provenance[split] += f"; capped to a seeded sample of {cap}"
    for name, df in data.eval_sets.items():  # zero-shot / cross-lingual sets: test's cap
        data.eval_sets[name], records[name] = sample_rows(df, caps["test"], seed, "label")
    return records


def recipe(task: str, cfg: dict) -> dict:
    """The epochs, lr and batch_size a job fine-tunes `task` with: the registry's (the
    task's paper: one entry per recipe, e.g. `mrpc_stilts`) where the evaluate section
    (`cfg`) leaves them null."""
    return {k: cfg[k] or v for k, v in paper_recipe(get_task(task)).items()}


def paper_recipe(t: tasks.Task) -> dict:
    """The registry's epochs, lr and batch_size of task `t` (its paper's)."""
    return {"epochs": t.epochs, "lr": t.lr, "batch_size": t.batch_size}


def _finetune(
    task: str, encoder_dir, cfg: dict, seed: int, device, precision: str, seeds: list[int]
) -> dict:
    from paracl.parts.finetune.tuning import FinetuneConfig, finetune_task  # torch: here

    t = get_task(task)
    data = load_task_for(task, cfg, seed)
    # a few-shot variant (tasks.FEW_SHOT) samples its own train size, not max_train
    caps = {
        "train": t.train_cap or cfg["max_train"],
        "dev": cfg["max_dev"],
        "test": cfg["max_test"],
    }
    samples = cap_splits(data, caps, seed)
    paper = paper_recipe(t)
    section = {**cfg, **recipe(task, cfg)}
    ft = from_section(FinetuneConfig, section, precision=precision)
    out = finetune_task(encoder_dir, data, ft, seeds, device)
    note = "the paper's splits" if data.official_split else "; ".join(
        f"{k}: {v}" for k, v in data.provenance.items())  # fmt: skip
    if out.get("eval_sets"):  # each set's mean over seeds, as the embedding jobs break down
        out["breakdown"] = {data.task.lang: out["test"]["mean"],
                            **{k: v["mean"] for k, v in out["eval_sets"].items()}}  # fmt: skip
    return {
        **out,
        "score": out["test"]["mean"],
        "score_std": out["test"]["std"],
        "dev_score": out["dev"]["mean"],
        "official_split": data.official_split,
        "provenance": data.provenance,
        "sizes": data.sizes(),
        "paper_sizes": dict(zip(("train", "dev", "test"), t.paper_sizes or (), strict=False)),
        "samples": samples,
        "paper_hyperparameters": {**paper, "source": t.hp_source},
        "split_note": note,
    }


def run_head_job(
    method: str, task: str, encoder_dir: str | Path, cfg: dict, run: RunSettings,
    train_metrics: str | Path,
) -> dict:  # fmt: skip
    """Score arm `method`'s intermediate classifier (its saved head) on `task`'s test
    split and further sets, as a fine-tuning job's result: one run, no training."""
    device = select_device(run.device)
    return job_result(
        method,
        task,
        encoder_dir,
        train_metrics,
        lambda: _score_head(task, encoder_dir, cfg, run.seed, device, run.precision, train_metrics),
    )


HEAD_NOTE = (
    "the intermediate classifier itself, not fine-tuned again (round-trip paper §6.1; "
    "train_intermediate.same_task): one run, the seed that trained it, every epoch and the "
    "last kept; no dev score, for it was not selected and the task's dev is carved from the "
    "train split it trained on"
)


def _score_head(
    task: str, encoder_dir, cfg: dict, seed: int, device, precision: str, train_metrics
) -> dict:
    from paracl.parts.finetune.saved_head import score_with_head  # torch: here
    from paracl.parts.finetune.tuning import FinetuneConfig

    data = load_task_for(task, cfg, seed)
    samples = cap_splits(data, {"test": cfg["max_test"]}, seed)
    trained = read_json(train_metrics)
    length = trained["config"]["max_length"]  # the classifier's own (train_intermediate)
    section = {**cfg, **recipe(task, cfg), "max_seq_length": length}
    ft = from_section(FinetuneConfig, section, precision=precision)
    got = score_with_head(encoder_dir, data, ft, device)
    return {
        **_one_run(data.task, got, trained),
        "ran_in": precision_record(device, precision),
        "scored": HEAD_NOTE,
        "official_split": data.official_split,
        "provenance": {"test": data.provenance["test"]},
        "sizes": {"test": len(data.test), **{k: len(v) for k, v in data.eval_sets.items()}},
        "samples": samples,
    }


def _one_run(task, got: dict, trained: dict) -> dict:
    """A fine-tuning job's keys for the classifier's scores `got`: one run (the seed
    that trained it, its epochs and losses), no dev score, test and further sets."""
    primary, test, losses = task.metric, got["test"], trained["train_loss"]
    run = {"seed": trained["seed"], "dev": None, "test": test, "eval_sets": got["eval_sets"],
           "best_epoch": len(losses), "epochs_run": len(losses), "trained_layers": "all",
           "head": got["head"], "train_loss": losses}  # fmt: skip
    sets = {name: summarize_seeds([v[primary]]) for name, v in got["eval_sets"].items()}
    breakdown = {task.lang: test[primary], **{k: v["mean"] for k, v in sets.items()}}
    return {
        "metric": primary,
        "test": summarize_seeds([test[primary]]),
        "dev": None,
        "test_at_median_dev": test[primary],
        "test_all_metrics": dict(test),
        "runs": [run],
        "config": trained["config"],
        **({"eval_sets": sets, "breakdown": breakdown} if sets else {}),
        "score": test[primary],
        "score_std": None,
        "dev_score": None,
    }


def main(params: dict) -> None:
    paths = args("run", "task", "encoder", "train_metrics", "out")
    cfg, run = params["evaluate"], RunSettings.of(params)
    check_inputs(
        "evaluate.finetune_tasks", paths.task, paths.encoder, paths.train_metrics, cfg["raw_dir"]
    )
    skip = skipped(params, paths.run, paths.task)
    if skip is not None:  # recorded at once: the summary reads it as a cell not run
        result = job_result(paths.run, paths.task, paths.encoder, paths.train_metrics, lambda: skip)
    elif scores_head(params, paths.run, paths.task):
        result = run_head_job(paths.run, paths.task, paths.encoder, cfg, run, paths.train_metrics)
    else:
        section = job_section(params, paths.run)
        result = run_finetune_job(
            paths.run, paths.task, paths.encoder, section, run, paths.train_metrics
        )
    intermediate = read_json(paths.train_metrics).get("intermediate")
    if intermediate:  # a STILTs arm: what it trained on, for Table 5 (paracl.parts.stilts_tables)
        result["intermediate"] = intermediate
    write_json(result, paths.out)
