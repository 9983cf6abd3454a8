"""The tag-controlled paraphraser (paper §3.3, §4.2): fine-tuned on tagged pairs, then
asked for paraphrases at a chosen similarity (e.g. `<SIM95><BLEU20>`).

The two tags are new special tokens put at the start of the input, so one model learns
every similarity level and the user picks one at generation time. Two architectures,
chosen by the base model's config (`is_encoder_decoder`):

- encoder-decoder (the paper's BART, `facebook/bart-base` in the paper preset):
  paracl.parts.paraphraser.seq2seq, every weight trained as in the paper;
- decoder-only (the offline default: SmolLM2-135M for English, gemma-3-270m for
  Japanese, real weights where no BART exists): paracl.parts.paraphraser.causal,
  with optionally only the top `train_layers` layers trained and the vocabulary's
  embeddings frozen, which a 2-core CPU can afford (paracl.core.freeze, `new_tokens` here).

Training: AdamW, the loss on dev after every epoch, stop after `patience` epochs without
improvement and keep the best epoch; mixed precision as `precision` says (paracl.core.device),
the loss scaled in fp16 so that small gradients do not underflow. Generation: beam search
with the output held to 0.75–1.5× the input's token count
(paracl.parts.paraphraser.window).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from paracl.core.device import DEFAULT_PRECISION, adamw, backward, grad_scaler, optimizer_step
from paracl.core.errors import ParamsError
from paracl.core.freeze import freeze
from paracl.core.languages import DEFAULT
from paracl.core.models import model_dir
from paracl.parts.paraphraser import causal, seq2seq
from paracl.parts.paraphraser.new_tokens import NewTokens, init_from_names
from paracl.parts.paraphraser.window import LengthWindow, length_window
from paracl.parts.tags.tagging import ALL_TAGS

__all__ = ["LengthWindow", "length_window"]  # re-exported: tests and the CLI use them here

log = logging.getLogger(__name__)

INFO_FILE = "paracl_paraphraser.json"  # in the model directory: what it was trained on
SPLITS = ("train", "dev", "test")
PAPER_MODEL = "facebook/bart-base"  # paper §4.2


def is_causal(model) -> bool:
    """Decoder-only (prompt + continuation) rather than the paper's encoder-decoder."""
    return not getattr(model.config, "is_encoder_decoder", False)


def _impl(model):
    return causal if is_causal(model) else seq2seq


def load(model_dir: str | Path, device: torch.device | str = "cpu") -> tuple[Any, Any]:
    """(model in eval mode, tokenizer) of a saved paraphraser or base model, either kind."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    config = AutoConfig.from_pretrained(str(model_dir))
    cls = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    model = cls.from_pretrained(str(model_dir)).to(device).eval()
    return model, AutoTokenizer.from_pretrained(str(model_dir))


def add_tag_tokens(tokenizer, model) -> int:
    """Add the 14 tags (and, decoder-only, the separator) as special tokens and grow the
    embeddings; return how many were new. Decoder-only: new rows start from their names."""
    tokens = list(ALL_TAGS) + ([causal.SEP] if is_causal(model) else [])
    before = len(tokenizer)
    added = tokenizer.add_tokens(tokens, special_tokens=True)
    if added:
        if is_causal(model):  # rows set from their names below: no mean resizing needed
            model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
            init_from_names(model, tokenizer, range(before, len(tokenizer)))
        else:
            model.resize_token_embeddings(len(tokenizer))
    return added


def tagged_input(tags: str, text: str) -> str:
    """The model input: the tags first, then the sentence."""
    return f"{tags} {text}"


def _batches(n: int, size: int, generator: torch.Generator | None) -> list[list[int]]:
    order = torch.randperm(n, generator=generator).tolist() if generator else list(range(n))
    return [order[i : i + size] for i in range(0, n, size)]


def pairs_to_rows(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(tags, source, target) of each row of a tagged-pairs frame."""
    return list(
        zip(
            (s + b for s, b in zip(df["sim_tag"], df["bleu_tag"], strict=True)),
            df["text"],
            df["paraphrase"],
            strict=True,
        )
    )


@torch.no_grad()
def evaluate_loss(
    model, tokenizer, df, batch_size, max_length, device, precision: str = DEFAULT_PRECISION
) -> float:
    """Mean token loss over a frame of tagged pairs (batch-size weighted)."""
    model.eval()
    rows = pairs_to_rows(df)
    total = 0.0
    impl = _impl(model)
    for idx in _batches(len(rows), batch_size, None):
        batch = [rows[i] for i in idx]
        loss = impl.batch_loss(model, tokenizer, batch, max_length, device, precision)
        total += float(loss) * len(idx)
    return total / max(len(rows), 1)


def train_step(
    model,
    tokenizer,
    rows: list[tuple[str, str, str]],
    max_length: int,
    device: torch.device,
    scaler: torch.amp.GradScaler,
    precision: str = DEFAULT_PRECISION,
) -> float:
    """Forward and (scaled) backward of (tags, source, target) rows; returns the batch's
    loss times its size. The optimiser step is the caller's (paracl.core.device.optimizer_step)."""
    loss = _impl(model).batch_loss(model, tokenizer, rows, max_length, device, precision)
    backward(loss, scaler)
    return float(loss.detach()) * len(rows)


def _trainable_state(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def train(
    model,
    tokenizer,
    train_df: pd.DataFrame,
    dev_df: pd.DataFrame,
    *,
    lr: float,
    batch_size: int,
    max_epochs: int,
    patience: int,
    max_length: int,
    seed: int,
    device: torch.device,
    precision: str = DEFAULT_PRECISION,
) -> list[dict]:
    """Fine-tune the parameters that require grad in place, with early stopping on dev
    loss; the best epoch's weights are kept (only the trained ones are copied)."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = adamw(params, lr=lr)
    scaler = grad_scaler(device, precision=precision)
    generator = torch.Generator().manual_seed(seed)
    rows = pairs_to_rows(train_df)
    history: list[dict] = []
    best_loss, best_state, stale = math.inf, None, 0
    for epoch in range(1, max_epochs + 1):
        train_loss, step_seconds = _train_epoch(
            model, tokenizer, rows, batch_size, generator, optimizer, scaler, max_length, device,
            precision,
        )  # fmt: skip
        dev_loss = (
            evaluate_loss(model, tokenizer, dev_df, batch_size, max_length, device, precision)
            if len(dev_df)
            else train_loss
        )
        # no timing in the history: same params and seed give the same metrics bytes
        history.append({"epoch": epoch, "train_loss": train_loss, "dev_loss": dev_loss})
        log.info(
            "epoch %d: train loss %.4f, dev loss %.4f (%.2f s/step)",
            epoch,
            train_loss,
            dev_loss,
            step_seconds,
        )
        if dev_loss < best_loss:
            best_loss, best_state, stale = dev_loss, _trainable_state(model), 0
        else:
            stale += 1
            if stale >= patience:
                log.info("early stop: %d epochs without dev-loss gain", patience)
                break
    if best_state is not None:
        model.load_state_dict(best_state, strict=False)
    model.eval()
    return history


def _train_epoch(
    model,
    tokenizer,
    rows: list[tuple[str, str, str]],
    batch_size: int,
    generator: torch.Generator,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    max_length: int,
    device: torch.device,
    precision: str,
) -> tuple[float, float]:
    """One epoch's steps over `rows` in the generator's order; returns the mean training
    loss (batch-size weighted) and the seconds a step took."""
    model.train()
    total, steps, started = 0.0, 0, time.perf_counter()
    for idx in _batches(len(rows), batch_size, generator):
        batch = [rows[i] for i in idx]
        total += train_step(model, tokenizer, batch, max_length, device, scaler, precision)
        optimizer_step(optimizer, scaler)
        optimizer.zero_grad()
        steps += 1
    seconds = time.perf_counter() - started
    return total / max(len(rows), 1), seconds / max(steps, 1)


@dataclass
class Trained:
    """A paraphraser fine-tuned on tagged pairs, with what its metrics report."""

    model: Any
    tokenizer: Any
    info: dict  # base model, whether it trained, split sizes: saved as INFO_FILE
    history: list[dict]  # per epoch: train and dev loss
    test_loss: float | None
    dev_loss_before: float | None = None  # the dev loss of the untrained model

    def save(self, directory: str | Path) -> None:
        """Model, tokenizer and INFO_FILE into `directory` (generate_paraphrases reads
        INFO_FILE to know when there was nothing to train on)."""
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        text = json.dumps(self.info, indent=2, sort_keys=True) + "\n"
        (Path(directory) / INFO_FILE).write_text(text)

    def metrics(self) -> dict:
        best = min(self.history, key=lambda h: h["dev_loss"]) if self.history else None
        return {
            **self.info,
            "epochs_run": len(self.history),
            "best_epoch": best["epoch"] if best else None,
            "dev_loss_before": self.dev_loss_before,
            "best_dev_loss": best["dev_loss"] if best else None,
            "test_loss": self.test_loss,
            "history": self.history,
        }

    def loss_curve(self) -> pd.DataFrame:
        return pd.DataFrame(self.history, columns=["epoch", "train_loss", "dev_loss"])


def base_model_id(cfg: dict, lang: str) -> str:
    """The train_paraphraser base model for `lang` (a {en, ja} map, as rank_fluency's)."""
    return cfg["base_model"][lang]


def deviations(model_id: str, model, cfg: dict, n_layers_trained: str) -> list[str]:
    """How this run differs from the paper's paraphraser (empty: the paper's setup)."""
    out = []
    if model_id != PAPER_MODEL:
        out.append(f"{model_id} instead of {PAPER_MODEL}")
    if is_causal(model):
        out.append("decoder-only: tags + source + <sep> as the prompt, loss on the target")
    if n_layers_trained != "all":
        out.append(f"top {n_layers_trained} layers trained, not all")
    if is_causal(model) and cfg["freeze_embeddings"]:
        rows = "train" if cfg["train_new_tokens"] else "stay at their initial values"
        out.append(f"vocabulary embeddings frozen (the new tokens' rows {rows})")
    if cfg["max_train_pairs"] is not None:
        out.append(f"at most {cfg['max_train_pairs']} training pairs (a seeded sample)")
    return out


def fine_tune(
    pairs: pd.DataFrame,
    cfg: dict,
    seed: int,
    device: torch.device,
    source: str = "tagged pairs",
    lang: str = DEFAULT,
    precision: str = DEFAULT_PRECISION,
) -> Trained:
    """The base model (`cfg`: the train_paraphraser params) with the tag tokens added,
    fine-tuned on the train split of `pairs` (the tag stage's output; a seeded sample of
    `max_train_pairs` of it, to bound a CPU run's time). With fewer than
    `min_train_pairs` training pairs the model is returned untrained (info says so)
    rather than failing: an empty tagged set is a valid outcome of a small or noisy run."""
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    splits = {s: pairs[pairs["split"] == s].reset_index(drop=True) for s in SPLITS}
    n_train_all = len(splits["train"])
    if cfg["max_train_pairs"] is not None and n_train_all > cfg["max_train_pairs"]:
        splits["train"] = splits["train"].sample(n=cfg["max_train_pairs"], random_state=seed)
    model_id = base_model_id(cfg, lang)
    with model_dir(model_id, seed=seed) as (path, desc):
        model, tokenizer = load(path, device)
    added = add_tag_tokens(tokenizer, model)
    layers, new_tokens = _trainable(model, tokenizer, cfg)
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    history: list[dict] = []
    test_loss = dev_before = None
    if len(splits["train"]) < cfg["min_train_pairs"]:
        log.warning(
            "%d training pairs in %s (%d rows in all; at least %d wanted): the paraphraser "
            "is saved untrained and generate_paraphrases will produce nothing",
            len(splits["train"]),
            source,
            len(pairs),
            cfg["min_train_pairs"],
        )
    else:
        history, test_loss, dev_before = _fit(
            model, tokenizer, splits, cfg, seed, device, precision
        )
    if new_tokens is not None:
        new_tokens.merge()
    deviation = deviations(model_id, model, cfg, layers)
    info = {
        "base_model": desc,
        "stand_in": desc["stand_in"],
        "architecture": "decoder-only" if is_causal(model) else "encoder-decoder",
        "paper_model": not deviation and not desc["stand_in"],
        "deviations": deviation,
        "layers_trained": layers,
        "trainable_parameters": n_trainable,
        "trained": bool(history),
        **{f"n_{s}": len(splits[s]) for s in SPLITS},
        "n_train_available": n_train_all,
        "tags_added": added,
    }
    return Trained(model, tokenizer, info, history, test_loss, dev_before)


def _trainable(model, tokenizer, cfg: dict) -> tuple[str, NewTokens | None]:
    """Decoder-only: all but the top `train_layers` layers frozen (and, with
    `freeze_embeddings`, the vocabulary, whose tag rows still train with `train_new_tokens`);
    the paper's encoder-decoder trains every weight. Returns the layers trained and the new
    tokens' trained rows (None: no such rows). `cfg`: the train_paraphraser section."""
    if not is_causal(model):
        return "all", None
    layers = freeze(
        model, cfg["train_layers"], cfg["freeze_embeddings"], "train_paraphraser.train_layers"
    )
    new_tokens = None
    if cfg["freeze_embeddings"] and cfg["train_new_tokens"]:
        new_tokens = NewTokens(model, tokenizer.convert_tokens_to_ids([*ALL_TAGS, causal.SEP]))
    return layers, new_tokens


def _fit(
    model,
    tokenizer,
    splits: dict[str, pd.DataFrame],
    cfg: dict,
    seed: int,
    device: torch.device,
    precision: str,
) -> tuple[list[dict], float | None, float | None]:
    """Train on the train split, early-stopped on dev (on the training loss without dev
    pairs); returns the history, the test loss and the dev loss before training."""
    test_loss = dev_before = None
    kwargs = dict(
        batch_size=cfg["batch_size"],
        max_length=cfg["max_length"],
        device=device,
        precision=precision,
    )
    if len(splits["dev"]) == 0:
        log.warning("no dev pairs: early stopping watches the training loss instead")
    else:
        dev_before = evaluate_loss(model, tokenizer, splits["dev"], **kwargs)
    history = train(
        model,
        tokenizer,
        splits["train"],
        splits["dev"],
        lr=cfg["lr"],
        max_epochs=cfg["max_epochs"],
        patience=cfg["patience"],
        seed=seed,
        **kwargs,
    )
    if len(splits["test"]):
        test_loss = evaluate_loss(model, tokenizer, splits["test"], **kwargs)
    return history, test_loss, dev_before


# generate()'s decoding keys: generate_paraphrases' params of the same names (each caller
# passes all five: params.yaml holds their one value)
DECODING = ("num_beams", "min_ratio", "max_ratio", "batch_size", "max_length")


def decoding(cfg: dict) -> dict:
    """generate()'s decoding keyword arguments from `cfg` (generate_paraphrases' section, or
    the same keys); a length window whose minimum exceeds its maximum is a params error."""
    if cfg["min_ratio"] > cfg["max_ratio"]:
        raise ParamsError("params.yaml: 'generate_paraphrases.min_ratio' exceeds 'max_ratio'")
    return {k: cfg[k] for k in DECODING}


def generate(
    model,
    tokenizer,
    texts: Sequence[str],
    tags: str,
    *,
    min_ratio: float,
    max_ratio: float,
    num_beams: int,
    batch_size: int,
    max_length: int,
    device: torch.device | str = "cpu",
    precision: str = DEFAULT_PRECISION,
) -> tuple[list[str], list[int]]:
    """Paraphrase each text under `tags` ("" = untagged, the baseline); return (outputs,
    generated token counts). Either architecture; beam search, no sampling: the same
    model and inputs give the same outputs."""
    return _impl(model).generate(
        model,
        tokenizer,
        texts,
        tags,
        num_beams=num_beams,
        min_ratio=min_ratio,
        max_ratio=max_ratio,
        batch_size=batch_size,
        max_length=max_length,
        device=torch.device(device),
        precision=precision,
    )
