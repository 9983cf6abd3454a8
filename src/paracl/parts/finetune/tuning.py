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
epoch's weights are kept and training stops after `patience` epochs without a dev gain
(`patience` None: every epoch, the last weights kept, as Phang et al.'s STILTs code).
Mixed precision follows `precision` (paracl.core.device; fp16 scales the loss so that
small gradients do not underflow). The step is as lean as a bare loop's: the train split
is tokenized once, ahead of the first epoch (`TrainTokens`), and the step losses stay on
the device until the epoch ends (`epoch_loss`), so no step waits on the host. Each seed is
a separate run from the same encoder; the result reports each seed's scores, their mean /
std / median, and (as the round-trip paper does) the test score of the seed whose dev
score is the median.
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
from paracl.core.token_rows import pad_rows, split_rows, to_device
from paracl.parts.encoder.embed import load_encoder, transformer_dir
from paracl.parts.evaluation.metrics import METRICS, summarize_seeds
from paracl.parts.evaluation.tasks import TaskData
from paracl.parts.finetune.head import PooledHead

log = logging.getLogger(__name__)

HEADS = ("last_token", "pooled")  # evaluate.finetune_head


# Fixed by the papers' recipe, not params: AdamW's warm-up share and weight decay, and the
# rows a dev/test forward pass scores at once.
WARMUP_RATIO = 0.1
WEIGHT_DECAY = 0.01
EVAL_BATCH_SIZE = 64


@dataclass(frozen=True)
class FinetuneConfig:
    """The `evaluate` section's fine-tuning keys (params.yaml says what each is), with the
    task's epochs, lr and batch_size where the section leaves them null, and the run's
    precision."""

    epochs: int
    lr: float
    batch_size: int
    max_seq_length: int
    patience: int | None  # None: no selection, every epoch run and the last kept
    precision: str  # auto | bf16 | fp16 | fp32 (paracl.core.device)
    train_layers: int | None  # top N layers + the task head train; None: every layer
    length_grouping: bool  # batches of similar length (paracl.core.batching); False:
    # random batches, as the papers' code
    mini_batch_size: int | None  # rows per forward/backward (`chunks`); None: the batch
    finetune_head: str  # a causal LM's head: last_token | pooled (`task_model`)

    def record(self) -> dict:
        """The metrics' `config`: the fields and the fixed values above, under the names
        the recorded results use (max_length, head), so that outputs keep their bytes."""
        out = asdict(self)
        out["max_length"] = out.pop("max_seq_length")
        out["head"] = out.pop("finetune_head")
        fixed = {"warmup_ratio": WARMUP_RATIO, "weight_decay": WEIGHT_DECAY}
        return {**out, **fixed, "eval_batch_size": EVAL_BATCH_SIZE}


def task_targets(df: pd.DataFrame, data: TaskData, split: str) -> torch.Tensor:
    """The labels of `df` (a `split` of `data`) as the head trains on them: a regression
    score scaled to [0, 1], or a class index; a label the task does not know names the split."""
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


def encode_rows(tokenizer, df: pd.DataFrame, idx, max_length: int):
    """Rows `idx` of `df` tokenized as the model reads them: one sentence, a pair, or a
    causal LM's pair (causal_pairs), cut at `max_length` and padded to the longest."""
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
        for start in range(0, len(df), EVAL_BATCH_SIZE):
            idx = order[start : start + EVAL_BATCH_SIZE]
            enc = encode_rows(tokenizer, df, idx, cfg.max_seq_length).to(device)
            logits = model(**enc).logits.float()
            out[idx] = (logits[:, 0] if regression else logits.argmax(-1)).cpu().numpy()
    return out


def _score(data: TaskData, df: pd.DataFrame, pred, metrics: list[str]) -> dict[str, float]:
    gold = task_targets(df, data, "eval").numpy()
    return {m: METRICS[m](pred, gold) for m in metrics}


def token_counts(tokenizer, data: TaskData, max_length: int) -> list[int]:
    """Tokens per training row as `encode_rows` feeds it (the pair, cut at `max_length`): what
    length-grouped batches sort by. Random STS-B batches of 32 pad to 2.7x their real
    tokens (SmolLM2, 1,000 pairs), SICK-E's to 1.8x."""
    rows = np.arange(len(data.train))
    return encode_rows(tokenizer, data.train, rows, max_length)["attention_mask"].sum(1).tolist()


class TrainTokens:
    """The train split tokenized once, ahead of the first epoch, not at every step (on a
    small model tokenizing is a large share of the step: bench/bench_finetune.py --tiny).

    Each pair's tokens are kept without their padding (paracl.core.token_rows) and a step
    pads its rows to their longest as `encode_rows` pads them, so the batch is the same tensors
    and the losses the same bits. Checked, not assumed: until a batch that needed padding
    has matched `encode_rows` exactly, each batch is compared; a difference turns the cache off
    and the steps tokenize their batch as before."""

    def __init__(self, tokenizer, df: pd.DataFrame, targets: torch.Tensor, max_length: int):
        self.tokenizer, self.df, self.targets, self.max_length = tokenizer, df, targets, max_length
        enc = encode_rows(tokenizer, df, np.arange(len(df)), max_length)
        self.keys = {k: v.dtype for k, v in enc.items()}
        self.rows = split_rows(enc, list(self.keys), tokenizer.padding_side == "left")
        self.lengths = [row.shape[1] for row in self.rows]  # what grouped batches sort by
        self.enabled, self.checked = True, False

    def batch(self, idx: list[int], device: torch.device) -> dict:
        """Model inputs and `labels` of rows `idx` on `device` (pinned, non-blocking on CUDA)."""
        enc = self._collate(idx) if self.enabled else None
        if enc is None:
            enc = dict(encode_rows(self.tokenizer, self.df, idx, self.max_length))
        return to_device({**enc, "labels": self.targets[idx]}, device)

    def _collate(self, idx: list[int]) -> dict | None:
        enc = pad_rows([self.rows[i] for i in idx], self.keys, self.tokenizer)
        if not self.checked:
            ref = encode_rows(self.tokenizer, self.df, idx, self.max_length)
            if ref.keys() != enc.keys() or not all(torch.equal(ref[k], enc[k]) for k in ref):
                log.info("fine-tuning token cache off (steps tokenize): a batch differs")
                self.enabled = False
                return None
            self.checked = len({self.lengths[i] for i in idx}) > 1
        return enc


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
    tokens: TrainTokens,
    parts: list[list[int]],
    cfg: FinetuneConfig,
    device,
    scaler: torch.amp.GradScaler,
) -> torch.Tensor:
    """Forward and (scaled) backward of one batch, run in `parts` (its `chunks`); returns
    each chunk's weighted loss, still on the device: the step reads nothing back to the
    host (`epoch_loss` does, once an epoch). Each chunk's mean loss is weighted by its
    share of the batch, so the accumulated gradient (and the sum of the returned losses)
    is the whole batch's mean loss's, as one forward would give. The optimiser step
    (unscale, clip at 1.0, step) is the caller's."""
    rows, losses = sum(len(p) for p in parts), []
    for part in parts:
        batch = tokens.batch(part, device)
        with autocast(device, cfg.precision):
            loss = model(**batch).loss * (len(part) / rows)
        backward(loss, scaler)
        losses.append(loss.detach())
    return torch.stack(losses)


def epoch_loss(step_losses: list[torch.Tensor], batches: list[list[int]], rows: int) -> float:
    """The epoch's mean training loss from `train_step`'s losses: one read-back of them all,
    summed on the host in the order (and double precision) the steps ran in."""
    values = torch.cat(step_losses).tolist() if step_losses else []
    sizes = [len(s) for s in step_losses]
    running, at = 0.0, 0
    for idx, n in zip(batches, sizes, strict=True):
        total = 0.0
        for value in values[at : at + n]:
            total += value
        running += total * len(idx)
        at += n
    return running / rows


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


@dataclass
class Fit:
    """One seed's training: the model, its train tokens and what each step updates."""

    model: torch.nn.Module
    tokens: TrainTokens
    cfg: FinetuneConfig
    device: torch.device
    params: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler

    def step(self, idx: list[int]) -> torch.Tensor:
        """One batch: forward/backward (in chunks), clip at 1.0, AdamW, the schedule; its
        losses stay on the device (`train_step`)."""
        parts = chunks(idx, self.tokens.lengths, self.cfg.mini_batch_size)
        loss = train_step(self.model, self.tokens, parts, self.cfg, self.device, self.scaler)
        optimizer_step(self.optimizer, self.scaler, self.params, max_norm=1.0)
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss


def make_fit(model, tokens: TrainTokens, cfg: FinetuneConfig, device, steps: int) -> Fit:
    """AdamW (no weight decay on biases and norms) with linear warm-up and decay over `steps`."""
    no_decay = ("bias", "LayerNorm.weight", "layer_norm", "norm.weight")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if not any(k in n for k in no_decay)],
         "weight_decay": WEIGHT_DECAY},
        {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]  # fmt: skip
    optimizer = adamw(groups, lr=cfg.lr)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(WARMUP_RATIO * steps), steps)
    scaler = grad_scaler(device, precision=cfg.precision)
    params = [p for _, p in named]
    return Fit(model, tokens, cfg, device, params, optimizer, scheduler, scaler)


def _train(fit: Fit, data: TaskData, seed: int) -> tuple[float, int, list[float]]:
    """Epochs with a dev score after each; the best epoch's weights are loaded back and
    training stops after `patience` epochs without a dev gain. With `patience` None
    every epoch runs and the last is kept, scored on dev once at the end (Phang et al.'s
    glue/train.py: no selection). Returns the kept epoch's dev score, the epoch and each
    epoch's mean training loss."""
    cfg, model, primary = fit.cfg, fit.model, data.task.metric
    regression = data.task.kind == "regression"
    gen = torch.Generator().manual_seed(seed)
    grouped = fit.tokens.lengths if cfg.length_grouping else None
    best_dev, best_state, best_epoch, bad, losses = -math.inf, None, 0, 0, []
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        batches = batch_order(len(data.train), cfg.batch_size, gen, grouped)
        # shown in a non-TTY log too (a CPU epoch takes minutes), as training's bar is
        bar = tqdm(batches, desc=f"{data.task.name} s{seed} e{epoch}", leave=False, mininterval=10)
        losses.append(epoch_loss([fit.step(idx) for idx in bar], batches, len(data.train)))
        if cfg.patience is None and epoch < cfg.epochs:  # the last epoch kept: no dev yet
            log.info("%s seed %d epoch %d: loss %.4f", data.task.name, seed, epoch, losses[-1])
            continue
        dev_pred = predict(model, fit.tokens.tokenizer, data.dev, cfg, fit.device, regression)
        dev = _score(data, data.dev, dev_pred, [primary])[primary]
        log.info("%s seed %d epoch %d: loss %.4f, dev %s %.2f", data.task.name, seed, epoch,
                 losses[-1], primary, dev)  # fmt: skip
        if cfg.patience is None:
            best_dev, best_epoch = dev, epoch
        elif best_state is None or dev > best_dev:  # NaN (constant predictions) never wins
            best_dev, best_epoch, bad = dev, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            if bad >= cfg.patience:
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    return best_dev, best_epoch, losses


def finetune_once(
    encoder_dir: str | Path, data: TaskData, cfg: FinetuneConfig, seed: int, device
) -> dict:
    """One seed: train (early stopping on dev, or every epoch), return the dev/test scores
    of the epoch kept (`best_epoch`)."""
    seed_everything(seed)
    regression = data.task.kind == "regression"
    tokenizer = AutoTokenizer.from_pretrained(transformer_dir(encoder_dir))
    model, head = task_model(encoder_dir, tokenizer, data.task, cfg.finetune_head)
    model.to(device)
    trained = trainable(model, cfg.train_layers)
    tokens = TrainTokens(
        tokenizer, data.train, task_targets(data.train, data, "train"), cfg.max_seq_length
    )
    steps = math.ceil(len(data.train) / cfg.batch_size) * cfg.epochs
    best_dev, best_epoch, losses = _train(make_fit(model, tokens, cfg, device, steps), data, seed)
    metrics = report_metrics(data)

    def scores(df: pd.DataFrame) -> dict[str, float]:
        return _score(data, df, predict(model, tokenizer, df, cfg, device, regression), metrics)

    test = scores(data.test)
    # the task's further sets (zero-shot languages, cross-lingual pairs), same model
    sets = {name: scores(df) for name, df in data.eval_sets.items()}
    return {
        "seed": seed,
        "dev": best_dev,
        "test": test,
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
        "config": cfg.record(),
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
