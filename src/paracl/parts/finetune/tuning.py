"""Fine-tune an encoder on a sentence-pair task and score it, over several seeds.

As the papers do it (PPDB paper §4.2, EBSIM Table 1, round-trip paper §6.1): the
encoder's transformer gets a classification or regression head on [CLS] over the
concatenated pair (`[CLS] s1 [SEP] s2 [SEP]`) via transformers'
AutoModelForSequenceClassification. A causal LM has no [CLS] or [SEP], and its tokenizer
joins a pair with nothing between ("…guitar.A man…"), so it reads the pair as GPT did
(Radford et al. 2018, §3.3): `s1 <eos> s2 <eos>` (`causal_pairs`). Its head (`head`,
evaluate.finetune_head) reads the closing <eos>, the one position that has attended to
both sentences (`last_token`, transformers' head for a causal LM, the default), or the
encoder's own sentence embedding of the pair (`pooled`, paracl.parts.finetune.head:
measured far worse on contrastively trained encoders, docs/models.md).

AdamW with linear warm-up/decay; the dev score is checked after every epoch, the best
epoch's weights are kept and training stops after `patience` epochs without a dev gain.
Mixed precision follows `precision` (paracl.core.device; fp16 scales the loss so that small
gradients do not underflow). Each seed is a separate run from the same encoder; the result
reports each seed's scores, their mean / std / median, and (as the round-trip paper does)
the test score of the seed whose dev score is the median.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    get_linear_schedule_with_warmup,
)

from paracl.core.batching import batch_order
from paracl.core.device import (
    DEFAULT_PRECISION,
    adamw,
    autocast,
    backward,
    grad_scaler,
    optimizer_step,
    precision_record,
    seed_everything,
)
from paracl.core.errors import InputError
from paracl.core.freeze import freeze
from paracl.parts.encoder.embed import load_encoder, transformer_dir
from paracl.parts.evaluation.metrics import METRICS, summarize_seeds
from paracl.parts.evaluation.tasks import TaskData
from paracl.parts.finetune.head import PooledHead

log = logging.getLogger(__name__)

HEADS = ("last_token", "pooled")  # evaluate.finetune_head


@dataclass(frozen=True)
class FinetuneConfig:
    epochs: int
    lr: float
    batch_size: int
    max_length: int = 128
    patience: int = 3
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    eval_batch_size: int = 64
    precision: str = DEFAULT_PRECISION  # auto | bf16 | fp16 | fp32 (paracl.core.device)
    train_layers: int | None = None  # top N layers + the task head train; None: every layer
    length_grouping: bool = False  # batches of similar length (paracl.core.batching); False:
    # random batches, as the papers' code
    mini_batch_size: int | None = None  # rows per forward/backward (`chunks`); None: the batch
    head: str = "last_token"  # a causal LM's head: last_token | pooled (`task_model`)


def _targets(df: pd.DataFrame, data: TaskData, split: str) -> torch.Tensor:
    task = data.task
    if task.kind == "regression":
        lo, hi = task.score_range
        y = (df["label"].astype(float).to_numpy() - lo) / (hi - lo)
        return torch.tensor(y, dtype=torch.float32)
    index = {name: i for i, name in enumerate(task.labels)}
    bad = sorted(set(df["label"]) - index.keys())
    if bad:
        raise InputError(
            f"task {task.name}, {split} split ({data.provenance.get(split, '?')}): "
            f"labels {bad[:5]} are not among {list(task.labels)}"
        )
    return torch.tensor([index[v] for v in df["label"]], dtype=torch.long)


def _encode(tokenizer, df: pd.DataFrame, idx, max_length: int):
    s1 = df["sentence1"].iloc[idx].tolist()
    s2 = df["sentence2"].iloc[idx].tolist()
    if any(v is None for v in s2):  # single-sentence task (SST-2, CoLA)
        return tokenizer(s1, truncation=True, max_length=max_length, padding=True,
                         return_tensors="pt")  # fmt: skip
    if tokenizer.sep_token is None:  # a causal LM
        return causal_pairs(tokenizer, s1, s2, max_length)
    return tokenizer(s1, s2, truncation="longest_first", max_length=max_length,
                     padding=True, return_tensors="pt")  # fmt: skip


def causal_pairs(tokenizer, s1: list[str], s2: list[str], max_length: int):
    """`s1 <eos> s2 <eos>` per pair (a <bos> first where the tokenizer adds one), cut
    longest-first to `max_length` tokens so that both <eos> stay, padded on the right
    with a pad id that is not <eos> (`causal_pad`): the head reads the last non-pad
    token, which is then always the closing <eos>."""
    eos = tokenizer.eos_token_id
    firsts = tokenizer(s1)["input_ids"]
    seconds = tokenizer(s2, add_special_tokens=False)["input_ids"]
    rows = []
    for a, b in zip(firsts, seconds, strict=True):
        a = a[:-1] if a and a[-1] == eos else a  # a tokenizer that closes with <eos> itself
        budget = max_length - 2
        while len(a) + len(b) > budget:  # longest first, as the BERT path truncates
            (a if len(a) > len(b) else b).pop()
        rows.append([*a, eos, *b, eos])
    return tokenizer.pad({"input_ids": rows}, padding=True, return_tensors="pt")


def causal_pad(tokenizer, model) -> None:
    """Give a causal LM a pad token other than <eos> (SmolLM2 pads with <|im_end|>, its
    <eos>): the head finds the last token by `input_ids != pad_token_id`, so padding with
    <eos> would hide the closing <eos> it must read. A new token, as transformers'
    docs add one; its embedding is never read (padding is masked and after the last
    real token). Padding goes on the right (gemma's tokenizer pads on the left), so that
    no pair's positions shift with its batch."""
    tokenizer.padding_side = "right"
    if tokenizer.pad_token_id is None or tokenizer.pad_token_id == tokenizer.eos_token_id:
        tokenizer.add_special_tokens({"pad_token": "<|paracl_pad|>"})
        model.resize_token_embeddings(len(tokenizer))
    model.config.pad_token_id = tokenizer.pad_token_id


def predict(model, tokenizer, df: pd.DataFrame, cfg: FinetuneConfig, device, regression: bool):
    """Predictions for every row of `df`, batched by length (same order as `df`)."""
    lengths = (df["sentence1"].str.len() + df["sentence2"].fillna("").str.len()).to_numpy()
    order = np.argsort(lengths, kind="stable")
    out = np.empty(len(df), dtype=np.float64 if regression else np.int64)
    model.eval()
    with torch.inference_mode(), autocast(device, cfg.precision):
        for start in range(0, len(df), cfg.eval_batch_size):
            idx = order[start : start + cfg.eval_batch_size]
            enc = _encode(tokenizer, df, idx, cfg.max_length).to(device)
            logits = model(**enc).logits.float()
            out[idx] = (logits[:, 0] if regression else logits.argmax(-1)).cpu().numpy()
    return out


def _score(data: TaskData, df: pd.DataFrame, pred, metrics: list[str]) -> dict[str, float]:
    gold = _targets(df, data, "eval").numpy()
    return {m: METRICS[m](pred, gold) for m in metrics}


def token_counts(tokenizer, data: TaskData, max_length: int) -> list[int]:
    """Tokens per training row as `_encode` feeds it (the pair, cut at `max_length`): what
    length-grouped batches sort by. Random STS-B batches of 32 pad to 2.7x their real
    tokens (SmolLM2, 1,000 pairs), SICK-E's to 1.8x."""
    rows = np.arange(len(data.train))
    return _encode(tokenizer, data.train, rows, max_length)["attention_mask"].sum(1).tolist()


def report_metrics(data: TaskData) -> list[str]:
    """The task's primary metric first, then the usual companions."""
    extra = ["spearman", "pearson"] if data.task.kind == "regression" else ["accuracy", "macro_f1"]
    return [data.task.metric] + [m for m in extra if m != data.task.metric]


def chunks(idx: list[int], lengths: list[int] | None, size: int | None) -> list[list[int]]:
    """The batch `idx` sorted by token length and cut into chunks of `size` rows (the
    whole batch when `size` is None). Each chunk pads to its own longest row: a random
    STS-B batch of 32 pads to 2.7x its real tokens on SmolLM2, in chunks of 8 to 1.3x."""
    if size is None or size >= len(idx):
        return [list(idx)]
    ordered = sorted(idx, key=lambda i: lengths[i])
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def train_step(
    model,
    tokenizer,
    data: TaskData,
    parts: list[list[int]],
    targets: torch.Tensor,
    cfg: FinetuneConfig,
    device,
    scaler: torch.amp.GradScaler,
) -> float:
    """Forward and (scaled) backward of one batch, run in `parts` (its `chunks`); returns
    its mean loss. Each chunk's mean loss is weighted by its share of the batch, so the
    accumulated gradient is the whole batch's mean-loss gradient, as one forward would
    give. The optimiser step (unscale, clip at 1.0, step) is the caller's."""
    rows, total = sum(len(p) for p in parts), 0.0
    for part in parts:
        enc = _encode(tokenizer, data.train, part, cfg.max_length).to(device)
        with autocast(device, cfg.precision):
            loss = model(**enc, labels=targets[part].to(device)).loss * (len(part) / rows)
        backward(loss, scaler)
        total += float(loss.detach())
    return total


def trainable(model, train_layers: int | None) -> str:
    """Freeze all but the top `train_layers` layers (paracl.core.freeze), then let the task
    head (every parameter outside the base model, and a BERT pooler) train: it is new.
    Returns what trains ("all" or "4 of 30") for the result."""
    what = freeze(
        model.base_model, train_layers, freeze_embeddings=False, param="evaluate.train_layers"
    )
    inside = {id(p) for p in model.base_model.parameters()}
    for p in model.parameters():
        if id(p) not in inside:
            p.requires_grad = True
    pooler = getattr(model.base_model, "pooler", None)
    if pooler is not None:
        pooler.requires_grad_(True)
    return what


def task_model(encoder_dir: str | Path, tokenizer, task, head: str) -> tuple:
    """The encoder with a new task head, and what the head reads. An encoder with [CLS]:
    transformers' head on it, as the papers. A causal LM: `last_token` = transformers'
    head on the closing <eos>, `pooled` = on its sentence embedding (PooledHead)."""
    if head not in HEADS:
        raise InputError(f"evaluate.finetune_head: {head!r} is not one of {', '.join(HEADS)}")
    regression = task.kind == "regression"
    num_labels = 1 if regression else len(task.labels)
    causal = tokenizer.sep_token is None
    if causal and head == "pooled":
        encoder = load_encoder(encoder_dir, torch.device("cpu"))
        model = PooledHead(encoder, num_labels, regression)
        reads = f"sentence embedding ({encoder[1].pooling_mode} pooling)"
    else:
        model = AutoModelForSequenceClassification.from_pretrained(
            transformer_dir(encoder_dir),
            num_labels=num_labels,
            problem_type="regression" if regression else "single_label_classification",
        )
        reads = "closing <eos>" if causal else "[CLS] (transformers)"
    if causal:
        causal_pad(tokenizer, model.base_model)
    return model, reads


def finetune_once(
    encoder_dir: str | Path, data: TaskData, cfg: FinetuneConfig, seed: int, device
) -> dict:
    """One seed: train with early stopping on dev, return dev/test scores of the best epoch."""
    seed_everything(seed)
    task = data.task
    regression = task.kind == "regression"
    tokenizer = AutoTokenizer.from_pretrained(transformer_dir(encoder_dir))
    model, head = task_model(encoder_dir, tokenizer, task, cfg.head)
    model.to(device)
    trained = trainable(model, cfg.train_layers)
    y_train = _targets(data.train, data, "train")
    metrics = report_metrics(data)
    primary = metrics[0]

    no_decay = ("bias", "LayerNorm.weight", "layer_norm", "norm.weight")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if not any(k in n for k in no_decay)],
         "weight_decay": cfg.weight_decay},
        {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]  # fmt: skip
    optimizer = adamw(groups, lr=cfg.lr)
    scaler = grad_scaler(device, precision=cfg.precision)
    steps_per_epoch = math.ceil(len(data.train) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(cfg.warmup_ratio * total), total)
    gen = torch.Generator().manual_seed(seed)
    sized = cfg.length_grouping or cfg.mini_batch_size is not None
    lengths = token_counts(tokenizer, data, cfg.max_length) if sized else None
    grouped = lengths if cfg.length_grouping else None

    best_dev, best_state, best_epoch, bad, losses = -math.inf, None, 0, 0, []
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        batches = batch_order(len(data.train), cfg.batch_size, gen, grouped)
        running = 0.0
        # shown in a non-TTY log too (a CPU epoch takes minutes), as training's bar is
        bar = tqdm(batches, desc=f"{task.name} s{seed} e{epoch}", leave=False, mininterval=10)
        for idx in bar:
            parts = chunks(idx, lengths, cfg.mini_batch_size)
            loss = train_step(model, tokenizer, data, parts, y_train, cfg, device, scaler)
            optimizer_step(optimizer, scaler, [p for _, p in named], max_norm=1.0)
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            running += loss * len(idx)
        losses.append(running / len(data.train))
        dev_pred = predict(model, tokenizer, data.dev, cfg, device, regression)
        dev = _score(data, data.dev, dev_pred, [primary])[primary]
        log.info("%s seed %d epoch %d: loss %.4f, dev %s %.2f", task.name, seed, epoch,
                 losses[-1], primary, dev)  # fmt: skip
        if best_state is None or dev > best_dev:  # NaN (constant predictions) never wins
            best_dev, best_epoch, bad = dev, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    model.load_state_dict(best_state)
    test_pred = predict(model, tokenizer, data.test, cfg, device, regression)
    # the task's further sets (zero-shot languages, cross-lingual pairs), same model
    sets = {name: _score(data, df, predict(model, tokenizer, df, cfg, device, regression),
                         metrics) for name, df in data.eval_sets.items()}  # fmt: skip
    return {
        "seed": seed,
        "dev": best_dev,
        "test": _score(data, data.test, test_pred, metrics),
        **({"eval_sets": sets} if sets else {}),
        "best_epoch": best_epoch,
        "epochs_run": len(losses),
        "trained_layers": trained,
        "head": head,
        "train_loss": losses,
    }


def finetune_task(
    encoder_dir: str | Path, data: TaskData, cfg: FinetuneConfig, seeds: list[int], device
) -> dict:
    """All seeds, then the spread: mean/std/median of test (primary metric) and dev."""
    runs = [finetune_once(encoder_dir, data, cfg, s, device) for s in seeds]
    primary = data.task.metric
    test = [r["test"][primary] for r in runs]
    dev = [r["dev"] for r in runs]
    median_dev_run = sorted(runs, key=lambda r: (r["dev"], r["seed"]))[(len(runs) - 1) // 2]
    return {
        "metric": primary,
        "test": summarize_seeds(test),
        "dev": summarize_seeds(dev),
        "test_at_median_dev": median_dev_run["test"][primary],
        "test_all_metrics": {
            m: summarize_seeds([r["test"][m] for r in runs])["mean"] for m in runs[0]["test"]
        },
        "runs": runs,
        "config": asdict(cfg),
        **(
            {
                "eval_sets": {
                    name: summarize_seeds([r["eval_sets"][name][primary] for r in runs])
                    for name in data.eval_sets
                }
            }
            if data.eval_sets
            else {}
        ),  # fmt: skip
        "ran_in": precision_record(device, cfg.precision),  # `auto` resolved on this machine
    }
