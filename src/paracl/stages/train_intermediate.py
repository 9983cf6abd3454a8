"""Stage train_intermediate: STILTs' intermediate training (the round-trip paper's §6), one
arm at a time: an encoder trained as a 3-way NLI classifier, saved without its head.

Phang et al.'s STILTs fine-tunes BERT on MNLI, then fine-tunes the result on each target
task; the round-trip paper adds MNLI's pairs paraphrased (the greedy round trip, or its
paraphraser at a SIM × BLEU tag cell) to MNLI before the first step. Each arm of
`train_intermediate.arms` is one such first step on `input`: nli_pairs' SICK pairs (the
plain arm), or a paraphrase_pairs job's output with `with_original` (its pairs, both
sentences paraphrased and the label kept, added to the originals: the corpus doubled).

The classifier is the one evaluate_finetune fine-tunes with (paracl.parts.finetune.tuning:
transformers' head on [CLS] through the pooler, or a causal LM's on its closing <eos>;
AdamW with 10 % linear warm-up and decay, weight decay 0.01 off biases and norms,
gradient clipped at 1.0), trained from the encoder of run `start` (loss none: the base as
saved, the Table 5 fine-tuning row) for `epochs` with no early stopping, as Phang et al.'s
glue/train.py. Their code carries the encoder into the target task and drops the
classifier (`from_state_dict` keeps `bert.*` only, the pooler included): the encoder is
saved at models/encoders/<arm> without the head, so evaluate_finetune fine-tunes it with
a fresh one. A causal LM's pad token, which the head added, is dropped again. Where the
arms' pairs are a target task's data (`same_task`: paper-en's MNLI), the round-trip paper
scores the intermediate classifier on that task instead of fine-tuning it again (§6.1):
the head is then also written beside the encoder (paracl.parts.finetune.saved_head), for
evaluate_finetune to score. The metrics
name the base model (the start's), the data, the steps, the training loss per epoch and
the accuracy on SICK's TRIAL split (its dev set), with no timing: same params and seed,
same bytes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pandas as pd

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_json, read_metadata, read_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import OtherSection, RunSettings, RunWide, Section, param
from paracl.core.stage import args

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class TrainIntermediate(Section):
    """STILTs' intermediate training (round-trip paper §6): one encoder per arm, trained as
    a 3-way NLI classifier from run `start`'s encoder and saved without the classifier."""

    class Arm(Section):
        input: str = param(help="labelled pairs (sentence1, sentence2, label): its DVC dep")
        with_original: bool = param(
            False, help="also the input's original_* columns: a paraphrase job's pairs doubled"
        )

    start: str = param(help="the run of train_contrastive.runs (loss none) the arms start from")
    arms: dict[str, Arm] = param(help="arm name -> its entry; {} = none")
    tasks: list[str] | None = param(
        help="tasks of evaluate.finetune_tasks the start run and arms are fine-tuned on; null = all"
    )
    same_task: str | None = param(
        help="the task of `tasks` the arms' pairs are (mnli): its job scores the arm's "
        "classifier, head kept, not fine-tuned again; null = none"
    )
    finetune_epoch: Literal["best", "last"] = param(
        help="epoch the STILTs rows' fine-tuning keeps: best on dev (evaluate.patience) | last"
    )
    epochs: int = param(min=1, help="epochs over the arm's pairs (Phang et al.: 3)")
    lr: float = param(min=0.0, max=1.0, help="AdamW learning rate (Phang et al.: 2e-5)")
    batch_size: int = param(min=1, help="pairs per step (Phang et al.: 24; the paper: 32)")
    max_seq_length: int = param(min=8, max=4096, help="tokens per pair (Phang et al.: 128)")
    mini_batch_size: int | None = param(min=1, help="rows per forward (the same gradient)")
    dev_max_pairs: int | None = param(min=2, help="seeded sample of SICK TRIAL; null = all")


class Params(RunWide):
    """What stage train_intermediate reads of params.yaml: the run-wide keys and these."""

    train_intermediate: TrainIntermediate
    train_contrastive: OtherSection  # its runs: `start`, and no arm named as a run
    evaluate: OtherSection  # raw_dir (SICK's TRIAL split, the dev set), finetune_tasks

    @classmethod
    def check(cls, values: dict) -> None:
        ev, tc = values["evaluate"], values["train_contrastive"]
        check_arms(values["train_intermediate"], tc["runs"], ev["finetune_tasks"])


log = logging.getLogger("train_intermediate")

KEY_FIGURES = ("dev_accuracy",)  # dvc.yaml's metrics (paracl.core.key_figures)
TEXT = ("sentence1", "sentence2")
ORIGINAL = "original_"  # paraphrase_pairs' prefix of a chosen column's input text
DEV_TASK = "sicke"  # SICK-E: its TRIAL split is the dev set scored after training
LOSS = "nli_3way"  # the metrics' `loss` (evaluate_finetune: not `none`, evaluate.seeds)


def check_arms(section: dict, runs: dict, finetune_tasks: list[str]) -> None:
    """`start` is a run of train_contrastive.runs, `tasks` are fine-tuning tasks, and no
    arm is named as a run (both write models/encoders/<name>): a one-line error naming
    the key. Without arms nothing starts from `start`, so nothing is checked."""
    if not section["arms"]:
        return
    if section["start"] not in runs:
        known = ", ".join(runs) or "none"
        raise ParamsError(
            f"'train_intermediate.start': {section['start']!r} is not a run of "
            f"train_contrastive.runs ({known})"
        )
    tasks = [t for t in section["tasks"] or [] if t not in finetune_tasks]
    if tasks:
        raise ParamsError(
            f"'train_intermediate.tasks': {tasks[0]!r} is not a task of evaluate.finetune_tasks "
            f"({', '.join(finetune_tasks) or 'none'})"
        )
    taken = [arm for arm in section["arms"] if arm in runs]
    if taken:
        raise ParamsError(
            f"'train_intermediate.arms.{taken[0]}': a run of train_contrastive has that name "
            "(both would write models/encoders/<name>): rename the arm"
        )
    check_same_task(section["same_task"], section["tasks"] or finetune_tasks)


def check_same_task(same: str | None, tasks: list[str]) -> None:
    """`same_task` is a task the STILTs rows run and a 3-way NLI task (the arms'
    classifier predicts its classes): a one-line error naming the key otherwise."""
    from paracl.parts.evaluation.tasks import get_task

    if same is None:
        return
    where = "'train_intermediate.same_task'"
    if same not in tasks:
        raise ParamsError(
            f"{where}: {same!r} is not a task the STILTs rows run ({', '.join(tasks)})"
        )
    labels, nli = get_task(same).labels or (), get_task(DEV_TASK).labels
    if sorted(labels) != sorted(nli):
        raise ParamsError(
            f"{where}: {same!r} is not a 3-way NLI task (its classes: {', '.join(labels) or 'none'}"
            f"; the arms' classifier predicts {', '.join(nli)})"
        )


def check_same_data(arm: str, info: dict, same: str) -> None:
    """The arm's pairs come from `same`'s data (the fetch source of its train split, as
    nli_pairs records it): only then is its classifier a `same` model to score."""
    from paracl.parts.evaluation.tasks import get_task

    want = get_task(same).splits["train"].source
    got = info["training_data"].get("source")
    if got != want:
        raise ParamsError(
            f"'train_intermediate.same_task': {same}'s data is fetch source {want!r}, but arm "
            f"{arm!r} trains on {info['input']} (source {got!r}): set same_task: null"
        )


def arm_pairs(arm: str, entry: dict) -> tuple[pd.DataFrame, dict]:
    """The arm's training pairs (sentence1, sentence2, label): the input's, plus, with
    `with_original`, its original_* columns as pairs of their own (originals first); a
    pair with an empty sentence is left out. Returns them and what the metrics say of them."""
    where = f"train_intermediate.arms.{arm}"
    frame = read_parquet(entry["input"])
    missing = [c for c in (*TEXT, "label") if c not in frame.columns]
    if missing:
        raise InputError(f"{entry['input']}: no column {missing[0]!r} ({where}.input)")
    rows = frame[[*TEXT, "label"]]
    if entry["with_original"]:
        absent = [ORIGINAL + c for c in TEXT if ORIGINAL + c not in frame.columns]
        if absent:
            raise ParamsError(
                f"'{where}.with_original': {entry['input']} has no {absent[0]!r} column "
                "(not a paraphrase_pairs output of sentence1 and sentence2)"
            )
        original = frame[[ORIGINAL + c for c in TEXT] + ["label"]]
        rows = pd.concat([original.set_axis([*TEXT, "label"], axis=1), rows])
    filled = rows[TEXT[0]].fillna("").str.len().gt(0) & rows[TEXT[1]].fillna("").str.len().gt(0)
    pairs = rows[filled].reset_index(drop=True)
    by = sorted(set(frame["paraphrased_by"])) if "paraphrased_by" in frame.columns else []
    meta = read_metadata(entry["input"])
    info = {
        "input": entry["input"],
        "with_original": entry["with_original"],
        "augmented_by": by[0] if len(by) == 1 else (by or None),
        "n_input_rows": len(frame),
        "n_pairs": len(pairs),
        "n_empty_dropped": int((~filled).sum()),
        "labels": {k: int(v) for k, v in sorted(pairs["label"].value_counts().items())},
        "training_data": {k: meta[k] for k in ("source", "exclude_sts") if k in meta},
    }
    return pairs, info


def dev_split(raw_dir: str, cap: int | None, seed: int):
    """The TaskData of SICK-E with its TRIAL split (a seeded stratified sample of `cap`)
    as dev: the accuracy the metrics report. Train is replaced by the arm's pairs."""
    from paracl.parts.evaluation.sample import sample_rows
    from paracl.parts.evaluation.tasks import load_task

    data = load_task(DEV_TASK, raw_dir, seed, missing="fail")
    data.dev, sample = sample_rows(data.dev, cap, seed, "label")
    return data, sample


def train_arm(start: Path, data, cfg: dict, run: RunSettings) -> tuple:
    """The 3-way classifier trained on `data.train` from the encoder at `start` for
    cfg's epochs (no early stopping); (model, tokenizer, what the head reads, each
    epoch's loss, steps, the FinetuneConfig, the device)."""
    import torch
    from transformers import AutoTokenizer

    from paracl.core.batching import batch_order
    from paracl.core.device import seed_everything, select_device
    from paracl.parts.encoder.embed import transformer_dir
    from paracl.parts.finetune import tuning

    device = select_device(run.device)
    seed_everything(run.seed)
    tokenizer = AutoTokenizer.from_pretrained(transformer_dir(start))
    model, head = tuning.task_model(start, tokenizer, data.task, "last_token")
    model.to(device)
    tuning.trainable(model, None)
    ft = finetune_config(cfg, run.precision)
    targets = tuning.task_targets(data.train, data, "train")
    tokens = tuning.TrainTokens(tokenizer, data.train, targets, ft.max_seq_length)
    steps = math.ceil(len(data.train) / ft.batch_size) * ft.epochs
    fit = tuning.make_fit(model, tokens, ft, device, steps)
    gen, losses = torch.Generator().manual_seed(run.seed), []
    for epoch in range(1, ft.epochs + 1):
        model.train()
        batches = batch_order(len(data.train), ft.batch_size, gen, None)
        losses.append(tuning.epoch_loss([fit.step(i) for i in batches], batches, len(data.train)))
        log.info("epoch %d: loss %.4f", epoch, losses[-1])
    return model, tokenizer, head, losses, steps, ft, device


def finetune_config(cfg: dict, precision: str):
    """The section as a FinetuneConfig (evaluate_finetune's kind): every layer, random batches, no
    early stopping (patience = epochs), the [CLS] / closing-<eos> head."""
    from paracl.parts.finetune.tuning import FinetuneConfig

    return FinetuneConfig(
        epochs=cfg["epochs"], lr=cfg["lr"], batch_size=cfg["batch_size"],
        max_seq_length=cfg["max_seq_length"], patience=cfg["epochs"], precision=precision,
        train_layers=None, length_grouping=False, mini_batch_size=cfg["mini_batch_size"],
        finetune_head="last_token",
    )  # fmt: skip


def dev_scores(model, tokenizer, data, ft, device) -> dict[str, float]:
    """Accuracy and macro-F1 ×100 of the trained classifier on the dev split."""
    from paracl.parts.evaluation.metrics import METRICS
    from paracl.parts.finetune import tuning

    pred = tuning.predict(model, tokenizer, data.dev, ft, device, regression=False)
    gold = tuning.task_targets(data.dev, data, "dev").numpy()
    return {m: float(METRICS[m](pred, gold)) for m in ("accuracy", "macro_f1")}


def save_without_head(
    model, start: Path, out: Path, card: str, also: Callable[[Path], None] | None = None
) -> None:
    """The trained transformer (pooler included, the classifier not: Phang et al.'s
    `from_state_dict`) written into a copy of the start encoder's module stack, so the
    folder loads as the start's does; a pad token the head added is dropped first.
    `also(folder)` adds files (the kept head) before the folder is published."""
    import torch

    from paracl.parts.encoder.build import save_encoder
    from paracl.parts.encoder.embed import load_encoder

    encoder = load_encoder(start, torch.device("cpu"))
    target = encoder[0].auto_model
    trained = model.base_model
    vocab = target.get_input_embeddings().weight.shape[0]
    if trained.get_input_embeddings().weight.shape[0] != vocab:
        trained.resize_token_embeddings(vocab)
    state = {k: v.detach().to("cpu", target.dtype) for k, v in trained.state_dict().items()}
    target.load_state_dict(state, strict=True)
    save_encoder(encoder, out, card=card, also=also)


def card_text(arm: str, info: dict, base: dict, same_task: str | None = None) -> str:
    """The saved encoder's README: what trained it, in a few lines."""
    by = info["augmented_by"] or "no paraphrases"
    head = "the classifier head is not saved"
    if same_task:
        from paracl.parts.finetune.saved_head import HEAD_WEIGHTS

        head = f"the classifier head is kept apart ({HEAD_WEIGHTS}), scored as {same_task}"
    return (
        f"# {arm}\n\nSTILTs intermediate training (Phang et al. 2018; round-trip paper §6): "
        f"a 3-way NLI classifier on {info['n_pairs']} pairs of {info['input']} ({by}), from "
        f"{base.get('id', 'unknown')}; {head}.\n"
    )


def main(params: dict) -> None:
    """train_intermediate ARM START START_METRICS ENCODER METRICS: one arm's encoder into
    ENCODER, its record into METRICS."""
    from paracl.core.device import precision_record

    paths = args("arm", "start", "start_metrics", "encoder", "metrics")
    cfg, run = params["train_intermediate"], RunSettings.of(params)
    if paths.arm not in cfg["arms"]:
        known = ", ".join(cfg["arms"]) or "none"
        raise ParamsError(f"'train_intermediate.arms' has no {paths.arm!r} ({known})")
    start = Path(paths.start)
    if not start.is_dir():
        raise InputError(
            f"{start}: the start encoder is missing (train_contrastive@{cfg['start']})"
        )
    base = read_json(paths.start_metrics).get("model") or {"id": "unknown"}
    pairs, info = arm_pairs(paths.arm, cfg["arms"][paths.arm])
    if cfg["same_task"] is not None:
        check_same_data(paths.arm, info, cfg["same_task"])
    data, sample = dev_split(params["evaluate"]["raw_dir"], cfg["dev_max_pairs"], run.seed)
    data.train, data.provenance["train"] = pairs, info["input"]
    model, tokenizer, head, losses, steps, ft, device = train_arm(start, data, cfg, run)
    dev = dev_scores(model, tokenizer, data, ft, device)
    card = card_text(paths.arm, info, base, cfg["same_task"])
    kept = {}
    write_head = None
    if cfg["same_task"] is not None:  # scored as that task's classifier (evaluate_finetune)
        from paracl.parts.finetune.saved_head import save_head

        def write_head(folder: Path) -> None:  # inside the encoder folder's atomic write
            saved = save_head(model, folder, data.task.labels, head)
            kept["intermediate_head"] = {**saved, "scored_as": cfg["same_task"]}

    save_without_head(model, start, Path(paths.encoder), card, also=write_head)
    record = {
        "method": paths.arm,
        "loss": LOSS,
        "model": base,
        "seed": run.seed,
        "intermediate": {"arm": paths.arm, "start_run": cfg["start"], **info},
        "training_data": info["training_data"],
        "head": head,
        "steps": steps,
        "train_loss": losses,
        "dev_accuracy": dev["accuracy"],
        "dev": {**dev, "split": "SICK TRIAL (sicke's dev)", "sample": sample},
        "config": ft.record(),
        "ran_in": precision_record(device, ft.precision),
        **kept,
    }
    write_metrics(record, paths.metrics, KEY_FIGURES)
    log.info("%s: %d pairs, %d steps, dev accuracy %.1f", paths.arm, len(pairs), steps,
             dev["accuracy"])  # fmt: skip
