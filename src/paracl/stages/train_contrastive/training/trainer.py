"""The training loop shared by every method: batches, optimiser, GradCache, early stopping.

Written directly on torch rather than on the transformers Trainer so that one loop serves
in-batch losses (with exact GradCache accumulation), mega-batch mining and EBSIM's
cross-encoder heads, with the same seeding, dev evaluation and logging for all of them;
sentence-transformers provides the model, its saving and the InfoNCE (MNRL) loss.

- Adam(W) with the papers' lr and a linear decay, no warmup (SimCSE's schedule).
- A batch is `batch_size` examples = the pool of in-batch negatives. When
  `mini_batch_size` is smaller, bi-encoder losses go through GradCache (same gradients
  as the full batch; see grad_cache.py) — never through plain accumulation, which would
  shrink the negatives. EBSIM's per-example triplet loss accumulates exactly, so it uses
  plain accumulation over mini-batches.
- Model selection as the method's paper does it (`selection`, selection.py): STS dev
  Spearman after each epoch (the default) or every `sts_dev_every` steps (SimCSE), the
  loss on a held-out dev sample after each epoch (PPDB, EBSIM), or the last weights; per
  epoch, training stops after `patience` epochs without a gain, and the best weights are
  restored. `max_grad_norm` clips the gradient norm (SimCSE's HF Trainer: 1.0).
- Mixed precision as `precision` says (paracl.core.device: auto = bf16 on GPUs and CPUs that
  run it natively, fp16 on older GPUs, fp32 on other CPUs); in fp16 the loss is scaled
  (torch.amp.GradScaler) so small gradients do not flush to zero, a no-op otherwise. Seeds
  fix shuffling and dropout.
- Under torchrun (parallel.py) every rank draws the same global batches, embeds its own
  contiguous rows, and the loss sees all ranks' rows (gather.py); gradients are averaged
  and rank 0 alone scores dev. A per-example objective (EBSIM) needs no gather: each
  rank takes its rows' share of the batch mean. One process: all of that is a no-op.
- Lean steps (tokens.py, `_LossLog`): every text is tokenized once, ahead of the first
  epoch, and a step pads its cached rows (the same tensors as tokenizing the batch); the
  step's loss stays on the device and is read back every LOSS_FLUSH_EVERY steps, so a GPU
  step does not wait for the host.
- Resumable (checkpoint.py): with a Checkpoint the whole loop state is saved every N
  steps and on SIGTERM, and a rerun continues from it to the same weights and curves.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import pandas as pd
import torch
from sentence_transformers import SentenceTransformer
from tqdm import tqdm
from transformers import get_linear_schedule_with_warmup

from paracl.core.batching import batch_order
from paracl.core.device import (
    DEFAULT_PRECISION,
    adamw,
    autocast,
    backward,
    grad_scaler,
    optimizer_step,
    seed_everything,
)
from paracl.core.distributed.gather import gather_columns, local_rows, rank, world_size
from paracl.parts.encoder.build import inference_model
from paracl.parts.encoder.forward import embed
from paracl.stages.train_contrastive.training import parallel
from paracl.stages.train_contrastive.training.checkpoint import (
    Checkpoint,
    TrainingInterrupted,
    all_rng_states,
    set_rng_state,
    sigterm_requests,
)
from paracl.stages.train_contrastive.training.grad_cache import cached_step
from paracl.stages.train_contrastive.training.selection import dev_loss, step_eval_due
from paracl.stages.train_contrastive.training.tokens import TokenCache, embed_cached

log = logging.getLogger(__name__)


WEIGHT_DECAY = 0.0  # AdamW's, as the papers' code (not a param)


@dataclass
class TrainConfig:
    """The run's train_contrastive keys (params.yaml says what each is), with its seed, its
    precision and its loss's mega_batch."""

    lr: float
    epochs: int
    batch_size: int
    mini_batch_size: int | None
    patience: int
    seed: int
    mega_batch: int  # mini-batches aggregated for mining (AMS, Algorithm 2)
    length_grouping: bool  # batches of similar length (less padding; paracl.core.batching)
    precision: str  # auto | bf16 | fp16 | fp32 (paracl.core.device)
    selection: str  # sts_dev | dev_loss | none (selection.py)
    sts_dev_every: int | None  # sts_dev: every N steps (SimCSE); None: each epoch
    max_grad_norm: float | None  # clip the gradient norm (SimCSE's HF Trainer: 1.0)


@dataclass
class TrainResult:
    steps: int = 0
    epochs_run: int = 0
    best_epoch: int = 0
    best_dev: float | None = None  # STS dev Spearman of the kept weights (sts_dev)
    best_step: int = 0  # the step whose weights were kept (sts_dev_every); 0: an epoch's end
    dev_losses: list[float] = field(default_factory=list)  # dev_loss: one per epoch
    losses: list[float] = field(default_factory=list)
    dev_history: list[float] = field(default_factory=list)
    examples_seen: int = 0
    skipped_steps: int = 0  # fp16: steps the loss scaler skipped (a gradient overflowed)


Logger = Callable[[str, float, int], None]


def epoch_batches(
    n: int, size: int, seed: int, epoch: int, lengths: list[int] | None = None
) -> list[list[int]]:
    """Seeded shuffle per epoch (grouped by length with `lengths`: paracl.core.batching); the
    last batch is dropped if it could not contrast (<2) or (multi-process) could not give
    every rank a row."""
    gen = torch.Generator().manual_seed(seed * 1000 + epoch)
    out = batch_order(n, size, gen, lengths)
    return [b for b in out if len(b) >= max(2, world_size())]


def token_lengths(model: SentenceTransformer, examples: pd.DataFrame) -> list[int]:
    """Tokens per example as the merged forward pass pads it: its longest text (anchor,
    positive or negative), truncated at the model's max_seq_length."""
    tokenizer, limit = model.tokenizer, model.max_seq_length
    longest = [0] * len(examples)
    for col in ("anchor", "positive", "negative"):
        if col not in examples or examples[col].isna().all():
            continue
        texts = examples[col].fillna("").astype(str).tolist()
        ids = tokenizer(texts, add_special_tokens=True, truncation=True, max_length=limit)
        longest = [max(a, len(b)) for a, b in zip(longest, ids["input_ids"], strict=True)]
    return longest


def _embed_columns(
    model,
    cols: list[list[str]],
    device,
    precision: str = DEFAULT_PRECISION,
    tokens: TokenCache | None = None,
) -> list[torch.Tensor]:
    """All columns in ONE forward pass (SimCSE feeds its 2B views the same way).

    Every column holds sentences of the same kind, so merging them costs little padding
    and saves a forward/backward per column; dropout masks still differ per row, which
    is what unsupervised SimCSE's two views of one sentence need.
    """
    texts = [t for col in cols for t in col]
    with autocast(device, precision):
        merged = _embed(model, texts, tokens).float()
    return list(torch.split(merged, [len(col) for col in cols]))


def _embed(model, texts: list[str], tokens: TokenCache | None) -> torch.Tensor:
    """`embed(model, texts)`, from the token cache when there is one."""
    return embed(model, texts) if tokens is None else embed_cached(tokens, texts)


LOSS_FLUSH_EVERY = 50  # steps between reading the step losses back to the host


class _LossLog:
    """The step losses, kept as device tensors and read back LOSS_FLUSH_EVERY steps at a
    time (one host sync, not one a step); `flush` checks them finite and records them in
    step order. Flushed before anything reads result.losses or the log (dev, checkpoint)."""

    def __init__(self, result: TrainResult, record: Logger):
        self.result, self.record = result, record
        self.pending: list[tuple[torch.Tensor | float, int]] = []

    def add(self, loss: torch.Tensor | float, step: int) -> None:
        self.pending.append((loss, step))
        if len(self.pending) >= LOSS_FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        tensors = [v for v, _ in self.pending if isinstance(v, torch.Tensor)]
        read = iter(torch.stack(tensors).tolist() if tensors else [])  # the one sync
        for value, step in self.pending:
            loss = next(read) if isinstance(value, torch.Tensor) else value
            if not math.isfinite(loss):
                raise FloatingPointError(f"loss became {loss} at step {step}")
            self.result.losses.append(loss)
            self.record("train/loss", loss, step)
        self.pending.clear()


@dataclass
class _Progress:
    """The loop's state besides weights and optimiser: what a resumed run continues from."""

    result: TrainResult
    # a copy of the best epoch's weights, taken only while a later epoch may still run;
    # None: the model's own weights are the best (no copy of a 1 GB model per epoch)
    best_state: dict[str, torch.Tensor] | None = None
    bad_epochs: int = 0
    logged: list[tuple[str, float, int]] = field(default_factory=list)
    epoch: int = 0  # the next step is batch `batch` of epoch `epoch`;
    batch: int = 0  # batch == the epoch's batch count: its steps are done, its dev score not


def _step(
    model: SentenceTransformer,
    objective,
    batch: pd.DataFrame,
    mini: int,
    device: torch.device,
    loss_fn: Callable[[list[torch.Tensor]], torch.Tensor],
    scaler: torch.amp.GradScaler,
    precision: str = DEFAULT_PRECISION,
    tokens: TokenCache | None = None,
) -> torch.Tensor | float:
    """Forward and backward of one global batch (this rank's rows), the loss scaled by
    `scaler` (fp16); returns the unscaled loss (a detached tensor where reading it would
    wait for the device). The optimiser step is the caller's."""
    local = batch.iloc[local_rows(len(batch))]
    if objective.per_example:
        # this rank's rows; scaled so that the gradients averaged over ranks are the
        # global batch mean's, and the loss logged is its mean
        scale = world_size() * len(local) / len(batch)
        loss = objective.step(model, local, mini, device, scale, scaler=scaler, precision=precision)
        return parallel.mean_over_ranks(loss, device)
    cols = objective.columns(local)
    if mini >= len(local):
        value = loss_fn(_embed_columns(model, cols, device, precision, tokens))
        backward(value, scaler)
        return value.detach()

    def embed_part(texts: list[str]) -> torch.Tensor:
        with autocast(device, precision):
            return _embed(model, texts, tokens)

    return cached_step(embed_part, cols, loss_fn, mini, device, scaler)


def _token_cache(
    model: SentenceTransformer, objective, examples: pd.DataFrame
) -> TokenCache | None:
    """The training set's texts tokenized once, ahead of the first epoch (a text mined or
    built later is tokenized when first met); None for a per-example objective (EBSIM),
    which tokenizes its own pairs."""
    if objective.per_example:
        return None
    tokens = TokenCache(model)
    for col in ("anchor", "positive", "negative"):
        if col in examples:
            tokens.warm(examples[col].dropna().astype(str))
    return tokens


def train(
    model: SentenceTransformer,
    examples: pd.DataFrame,
    objective,
    config: TrainConfig,
    dev_score: Callable[[SentenceTransformer], float] | None = None,
    logger: Logger | None = None,
    extra_params: list[torch.nn.Parameter] | None = None,
    checkpoint: Checkpoint | None = None,
    dev_examples: pd.DataFrame | None = None,
) -> TrainResult:
    """Train `model` in place on `examples` with `objective`; returns the curves.

    With `checkpoint`, the loop saves its whole state there every `checkpoint.every`
    steps and, on SIGTERM, at the end of the step before raising TrainingInterrupted; a
    state found there is resumed from (logged values are replayed into `logger`), so a
    killed run ends with the weights and curves of an uninterrupted one. `dev_examples`:
    the held-out sample `selection: dev_loss` scores (selection.hold_out)."""
    seed_everything(config.seed + rank())  # ranks draw their own dropout masks
    loop = _Loop(model, examples, objective, config, extra_params, checkpoint, logger)
    loop.select = _Selector(config, model, objective, dev_score, dev_examples, loop.total)
    loop.resume()
    progress = loop.progress
    with sigterm_requests(checkpoint is not None) as requested:
        for epoch in range(loop.start_epoch, config.epochs):
            loop.run_epoch(epoch, requested)
            if loop.end_epoch(epoch):
                break
    if progress.best_state is not None:
        model.load_state_dict(progress.best_state)
    return progress.result


class _Loop:
    """One run's training objects and the parts of its loop: `run_epoch` runs an epoch's
    steps, `step` one optimiser step, `checkpoint` saves after a step (and stops on
    SIGTERM), `end_epoch` flushes the losses and applies the epoch's model selection."""

    select: _Selector  # set by train once the step count (`total`) is known, before resume

    def __init__(
        self,
        model: SentenceTransformer,
        examples: pd.DataFrame,
        objective,
        config: TrainConfig,
        extra_params: list[torch.nn.Parameter] | None,
        checkpoint: Checkpoint | None,
        logger: Logger | None,
    ):
        self.model, self.examples, self.objective, self.config = model, examples, objective, config
        self.checkpoint_to, self.logger, self.device = checkpoint, logger, model.device
        self.extra = list(extra_params or [])
        self.params = [p for p in model.parameters() if p.requires_grad] + self.extra
        parallel.sync_parameters(self.params)
        self.optimizer = adamw(self.params, lr=config.lr, weight_decay=WEIGHT_DECAY)
        self.scaler = grad_scaler(self.device, precision=config.precision)
        self.lengths = token_lengths(model, examples) if config.length_grouping else None
        per_epoch = len(self.batches(0))
        if per_epoch == 0:
            raise ValueError(f"{len(examples)} examples make no batch of >= 2")
        self.total = per_epoch * config.epochs
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, 0, self.total)
        self.mini = config.mini_batch_size or config.batch_size
        self.mega = max(1, config.mega_batch)
        self.progress = _Progress(TrainResult())

    def resume(self) -> None:
        """Load the checkpoint's state, if any; then the loss log and the token cache."""
        self.resumed_group = _restore(
            self.checkpoint_to, self.model, self.extra, self.optimizer, self.scheduler,
            self.scaler, self.progress, self.record,
        )  # fmt: skip
        self.result = self.progress.result
        self.losses = _LossLog(self.result, self.record)
        self.tokens = _token_cache(self.model, self.objective, self.examples)
        self.start_epoch, self.start_batch = self.progress.epoch, self.progress.batch

    def batches(self, epoch: int) -> list[list[int]]:
        config = self.config
        return epoch_batches(
            len(self.examples), config.batch_size, config.seed, epoch, self.lengths
        )

    def record(self, key: str, value: float, step: int) -> None:
        self.progress.logged.append((key, value, step))
        if self.logger:
            self.logger(key, value, step)

    def loss(self, reps: list[torch.Tensor]) -> torch.Tensor:
        """The loss over the global batch: every rank's rows (identity with one process)."""
        return self.objective.loss(gather_columns(reps))

    def run_epoch(self, epoch: int, requested: Callable[[], bool]) -> None:
        """The epoch's steps, a mega-batch at a time (prepared, i.e. mined, at its start);
        after a resume, the steps done before it are skipped."""
        self.model.train()
        batches = self.batches(epoch)
        first = self.start_batch if epoch == self.start_epoch else 0  # steps done before a resume
        bar = tqdm(
            total=len(batches),
            initial=first,
            desc=f"epoch {epoch + 1}",
            leave=False,
            mininterval=5,
            disable=not parallel.is_main(),
        )
        for m0 in range(0, len(batches), self.mega):
            group = batches[m0 : m0 + self.mega]
            if m0 + len(group) <= first:
                continue
            prepared = self.prepare(group)
            offset = 0
            for j, b in enumerate(group):
                batch = prepared.iloc[offset : offset + len(b)]
                offset += len(b)
                if m0 + j < first:
                    continue
                self.step(batch)
                bar.update(1)
                self.progress.epoch, self.progress.batch = epoch, m0 + j + 1
                self.select.after_step(self.progress, self.record, epoch)
                self.checkpoint(prepared, len(batches), requested, bar)
        bar.close()

    def prepare(self, group: list[list[int]]) -> pd.DataFrame:
        """The mega-batch's rows as the objective prepares them (mining)."""
        if self.resumed_group is not None:  # stopped inside this mega-batch: as mined then
            prepared, self.resumed_group = self.resumed_group, None
            return prepared
        flat = [i for b in group for i in b]
        return self.objective.prepare(self.examples.iloc[flat].reset_index(drop=True), self.model)

    def step(self, batch: pd.DataFrame) -> None:
        """One optimiser step on a global batch: forward and backward (`_step`), gradients
        averaged over ranks, the update (fp16's scaler skips one that overflowed)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = _step(
            self.model, self.objective, batch, self.mini, self.device, self.loss, self.scaler,
            self.config.precision, self.tokens,
        )  # fmt: skip
        parallel.average_gradients(self.params)
        if not optimizer_step(self.optimizer, self.scaler, self.params, self.config.max_grad_norm):
            self.result.skipped_steps += 1
        self.scheduler.step()
        self.result.steps += 1
        self.result.examples_seen += len(batch)
        self.losses.add(loss, self.result.steps)

    def checkpoint(
        self, prepared: pd.DataFrame, n_batches: int, requested: Callable[[], bool], bar
    ) -> None:
        """After a step, with a Checkpoint: save every `checkpoint.every` steps, and on
        SIGTERM (any rank's) save and raise TrainingInterrupted."""
        checkpoint, progress, result = self.checkpoint_to, self.progress, self.result
        if checkpoint is None:
            return
        # every rank stops at the same step when any of them got SIGTERM
        stop = parallel.mean_over_ranks(float(requested()), self.device) > 0
        if stop or checkpoint.due(result.steps):
            inside = progress.batch % self.mega != 0 and progress.batch < n_batches
            self.save(prepared if inside else None)
        if stop:
            bar.close()
            if world_size() > 1:  # rank 0 has written it before any rank exits
                torch.distributed.barrier()
            raise TrainingInterrupted(
                f"SIGTERM: stopped after step {result.steps}; checkpoint saved in "
                f"{checkpoint.dir}; run the stage again to resume"
            )

    def save(self, prepared: pd.DataFrame | None) -> None:
        """All ranks (their RNG states are gathered); rank 0 writes."""
        self.losses.flush()
        state = _capture(
            self.model, self.extra, self.optimizer, self.scheduler, self.scaler, self.progress,
            prepared,
        )  # fmt: skip
        if parallel.is_main():
            self.checkpoint_to.save(state)

    def end_epoch(self, epoch: int) -> bool:
        """The epoch's losses recorded and its model selection; True: stop early."""
        self.losses.flush()
        self.result.epochs_run = epoch + 1
        self.progress.epoch, self.progress.batch = epoch + 1, 0
        return self.select.after_epoch(self.progress, self.record, epoch)


class _Selector:
    """Which weights the run keeps (config.selection; selection.py): it scores the model
    when the rule says so and keeps a copy of the best weights while later steps may run."""

    def __init__(self, config: TrainConfig, model, objective, dev_score, dev_examples, total):
        self.config, self.model, self.objective, self.total = config, model, objective, total
        self.dev_score, self.dev_examples = dev_score, dev_examples
        if config.selection == "dev_loss" and dev_examples is None:
            raise ValueError("selection dev_loss needs dev_examples (selection.hold_out)")

    def _sts(self) -> float:
        """STS dev Spearman (rank 0's); the model back in the mode it was in (encode sets
        eval mode, and a step evaluation falls inside an epoch)."""
        model, was = self.model, self.model.training
        score = parallel.main_value(lambda: self.dev_score(inference_model(model)), model.device)
        model.train(was)
        return score

    def _keep(self, progress: _Progress, epoch: int, at_end_of_run: bool) -> None:
        progress.result.best_epoch = epoch + 1
        progress.best_state = None if at_end_of_run else copy.deepcopy(self.model.state_dict())

    def after_step(self, progress: _Progress, record: Logger, epoch: int) -> None:
        """SimCSE's cadence: STS dev every sts_dev_every steps, the best kept; a run shorter
        than that scores its last step, so it has a dev score."""
        result, every = progress.result, self.config.sts_dev_every
        if self.config.selection != "sts_dev" or self.dev_score is None or every is None:
            return
        last = result.steps == self.total
        if not (step_eval_due(every, result.steps) or (last and result.best_dev is None)):
            return
        score = self._sts()
        result.dev_history.append(score)
        record("dev/spearman", score, result.steps)
        if result.best_dev is None or score > result.best_dev:
            result.best_dev, result.best_step = score, result.steps
            self._keep(progress, epoch, last)

    def after_epoch(self, progress: _Progress, record: Logger, epoch: int) -> bool:
        """The epoch's selection; True: `patience` epochs without a gain, stop."""
        result, config = progress.result, self.config
        last = epoch + 1 == config.epochs
        if config.selection == "none" or (config.selection == "sts_dev" and self.dev_score is None):
            progress.best_state, result.best_epoch = None, epoch + 1  # the last is kept
            return False
        if config.selection == "sts_dev" and config.sts_dev_every is not None:
            return False  # scored by steps (after_step), never stopped early
        if config.selection == "sts_dev":
            score = self._sts()
            result.dev_history.append(score)
            record("dev/spearman", score, result.steps)
            best = -math.inf if result.best_dev is None else result.best_dev
        else:
            loss = dev_loss(self.model, self.objective, self.dev_examples, config.batch_size,
                            config.seed, config.precision)  # fmt: skip
            result.dev_losses.append(loss)
            record("dev/loss", loss, result.steps)
            score = -loss
            best = -result.dev_losses[result.best_epoch - 1] if result.best_epoch else -math.inf
        if parallel.is_main():
            log.info("epoch %d: dev %.4g (best before %.4g)", epoch + 1, abs(score), abs(best))
        if score > best:
            if config.selection == "sts_dev":
                result.best_dev = score
            progress.bad_epochs = 0
            self._keep(progress, epoch, last)
            return False
        progress.bad_epochs += 1
        if progress.bad_epochs >= config.patience:
            log.info("early stop: %d epochs without dev gain", progress.bad_epochs)
            return True
        return False


def _capture(
    model: SentenceTransformer,
    extra: list[torch.nn.Parameter],
    optimizer: torch.optim.Optimizer,
    scheduler,
    scaler: torch.amp.GradScaler,
    progress: _Progress,
    prepared: pd.DataFrame | None,
) -> dict:
    """The state to save (collective: gathers every rank's RNG state)."""
    return {
        "model": model.state_dict(),
        "extra": [p.detach() for p in extra],
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),  # fp16's loss scale ({} when disabled)
        "best": progress.best_state,  # None: the weights above are the best so far
        "bad_epochs": progress.bad_epochs,
        "result": asdict(progress.result),
        "logged": list(progress.logged),
        "epoch": progress.epoch,
        "batch": progress.batch,
        # the mega-batch as mined at its start (mining used the weights of then)
        "prepared": None if prepared is None else prepared.to_dict("list"),
        "rng": all_rng_states(model.device),
    }


def _restore(
    checkpoint: Checkpoint | None,
    model: SentenceTransformer,
    extra: list[torch.nn.Parameter],
    optimizer: torch.optim.Optimizer,
    scheduler,
    scaler: torch.amp.GradScaler,
    progress: _Progress,
    record: Logger,
) -> pd.DataFrame | None:
    """Load `checkpoint`'s state, if any, into the loop's objects; returns the mega-batch
    the run stopped inside, if it did. The RNG states are set last."""
    if checkpoint is None:
        return None
    state = checkpoint.load()
    found = -1 if state is None else state["result"]["steps"]
    if parallel.main_value(lambda: float(found), model.device) != found:
        raise RuntimeError(f"{checkpoint.file}: ranks see different checkpoints (shared disk?)")
    if state is None:
        return None
    rngs = state["rng"]
    if len(rngs) != world_size():
        raise RuntimeError(f"{checkpoint.file}: saved by {len(rngs)} processes, not {world_size()}")
    model.load_state_dict(state["model"])
    with torch.no_grad():
        for p, saved in zip(extra, state["extra"], strict=True):
            p.copy_(saved)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if state.get("scaler"):
        scaler.load_state_dict(state["scaler"])
    progress.best_state = state["best"]
    progress.bad_epochs = state["bad_epochs"]
    progress.result = TrainResult(**state["result"])
    progress.epoch, progress.batch = state["epoch"], state["batch"]
    for key, value, step in state["logged"]:  # the curves so far, as first logged
        record(key, value, step)
    if parallel.is_main():
        log.info(
            "resuming from %s: step %d (epoch %d, batch %d)",
            checkpoint.file,
            progress.result.steps,
            progress.epoch + 1,
            progress.batch,
        )
    set_rng_state(rngs[rank()], model.device)
    return None if state["prepared"] is None else pd.DataFrame(state["prepared"])
