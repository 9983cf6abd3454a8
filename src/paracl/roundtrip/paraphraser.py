"""The tag-controlled paraphraser: BART fine-tuned on tagged pairs (paper §3.3, §4.2).

The two tags (e.g. `<SIM95><BLEU20>`) are new special tokens put at the start of the
input, so one model learns every similarity level and the user picks one at generation
time. Training: AdamW, lr 1e-5, the loss on dev after every epoch, stop after 5 epochs
without improvement and keep the best epoch. Generation: beam search (20 beams) with the
output held to 0.75–1.5× the input's token count, per sentence (a logits processor
blocks </s> before the minimum and forces it at the maximum).
"""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from paracl.device import autocast
from paracl.roundtrip.tagging import ALL_TAGS
from paracl.standins import seq2seq_model

log = logging.getLogger(__name__)

INFO_FILE = "paracl_paraphraser.json"  # in the model directory: what it was trained on
SPLITS = ("train", "dev", "test")


def add_tag_tokens(tokenizer, model) -> int:
    """Add the 14 tags as special tokens and grow the embeddings; return how many were new."""
    added = tokenizer.add_tokens(list(ALL_TAGS), special_tokens=True)
    if added:
        model.resize_token_embeddings(len(tokenizer))
    return added


def tagged_input(tags: str, text: str) -> str:
    """The model input: the tags first, then the sentence."""
    return f"{tags} {text}"


def _batches(n: int, size: int, generator: torch.Generator | None) -> list[list[int]]:
    order = torch.randperm(n, generator=generator).tolist() if generator else list(range(n))
    return [order[i : i + size] for i in range(0, n, size)]


def _loss(model, tokenizer, sources, targets, max_length, device) -> torch.Tensor:
    enc = tokenizer(
        list(sources),
        text_target=list(targets),
        return_tensors="pt",
        padding=True,
        truncation=True,
        max_length=max_length,
    ).to(device)
    labels = enc["labels"].masked_fill(enc["labels"] == tokenizer.pad_token_id, -100)
    with autocast(device):
        return model(
            input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels
        ).loss


def pairs_to_io(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(tagged inputs, targets) of a tagged-pairs frame."""
    sources = [
        tagged_input(s + b, t)
        for s, b, t in zip(df["sim_tag"], df["bleu_tag"], df["text"], strict=True)
    ]
    return sources, list(df["paraphrase"])


@torch.no_grad()
def evaluate_loss(model, tokenizer, df, batch_size, max_length, device) -> float:
    """Mean token loss over a frame of tagged pairs (batch-size weighted)."""
    model.eval()
    sources, targets = pairs_to_io(df)
    total, count = 0.0, 0
    for idx in _batches(len(sources), batch_size, None):
        loss = _loss(
            model,
            tokenizer,
            [sources[i] for i in idx],
            [targets[i] for i in idx],
            max_length,
            device,
        )
        total += float(loss) * len(idx)
        count += len(idx)
    return total / max(count, 1)


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
) -> list[dict]:
    """Fine-tune in place with early stopping on dev loss; the best epoch's weights are kept."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    sources, targets = pairs_to_io(train_df)
    history: list[dict] = []
    best_loss, best_state, stale = math.inf, None, 0
    for epoch in range(1, max_epochs + 1):
        model.train()
        total = 0.0
        for idx in _batches(len(sources), batch_size, generator):
            loss = _loss(
                model,
                tokenizer,
                [sources[i] for i in idx],
                [targets[i] for i in idx],
                max_length,
                device,
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
        train_loss = total / max(len(sources), 1)
        dev_loss = (
            evaluate_loss(model, tokenizer, dev_df, batch_size, max_length, device)
            if len(dev_df)
            else train_loss
        )
        history.append({"epoch": epoch, "train_loss": train_loss, "dev_loss": dev_loss})
        log.info("epoch %d: train loss %.4f, dev loss %.4f", epoch, train_loss, dev_loss)
        if dev_loss < best_loss:
            best_loss, best_state, stale = dev_loss, copy.deepcopy(model.state_dict()), 0
        else:
            stale += 1
            if stale >= patience:
                log.info("early stop: %d epochs without dev-loss gain", patience)
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return history


@dataclass
class Trained:
    """A paraphraser fine-tuned on tagged pairs, with what its metrics report."""

    model: Any
    tokenizer: Any
    info: dict  # base model, whether it trained, split sizes: saved as INFO_FILE
    history: list[dict]  # per epoch: train and dev loss
    test_loss: float | None

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
            "best_dev_loss": best["dev_loss"] if best else None,
            "test_loss": self.test_loss,
            "history": self.history,
        }

    def loss_curve(self) -> pd.DataFrame:
        return pd.DataFrame(self.history, columns=["epoch", "train_loss", "dev_loss"])


def fine_tune(
    pairs: pd.DataFrame, cfg: dict, seed: int, device: torch.device, source: str = "tagged pairs"
) -> Trained:
    """The base model (`cfg`: the train_paraphraser params) with the tag tokens added,
    fine-tuned on the train split of `pairs` (the tag stage's output). With no training
    pairs the model is returned untrained (info says so) rather than failing: an empty
    tagged set is a valid outcome of a small or noisy run."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    splits = {s: pairs[pairs["split"] == s].reset_index(drop=True) for s in SPLITS}
    with seq2seq_model(cfg["base_model"], seed=seed) as (path, desc):
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForSeq2SeqLM.from_pretrained(str(path)).to(device)
    added = add_tag_tokens(tokenizer, model)
    history: list[dict] = []
    test_loss = None
    if len(splits["train"]) == 0:
        log.warning(
            "no training pairs in %s (%d rows in all): the paraphraser is saved untrained and "
            "generate_paraphrases will produce nothing",
            source,
            len(pairs),
        )
    else:
        if len(splits["dev"]) == 0:
            log.warning("no dev pairs: early stopping watches the training loss instead")
        history = train(
            model,
            tokenizer,
            splits["train"],
            splits["dev"],
            lr=cfg["lr"],
            batch_size=cfg["batch_size"],
            max_epochs=cfg["max_epochs"],
            patience=cfg["patience"],
            max_length=cfg["max_length"],
            seed=seed,
            device=device,
        )
        if len(splits["test"]):
            test_loss = evaluate_loss(
                model, tokenizer, splits["test"], cfg["batch_size"], cfg["max_length"], device
            )
    info = {
        "base_model": desc,
        "stand_in": desc["stand_in"],
        "trained": bool(history),
        **{f"n_{s}": len(splits[s]) for s in SPLITS},
        "tags_added": added,
    }
    return Trained(model, tokenizer, info, history, test_loss)


class LengthWindow(LogitsProcessor):
    """Hold each sentence's output to [min_len[i], max_len[i]] generated tokens.

    Special tokens other than </s> are banned, so every generated token is text. Rows of
    the score matrix are beams: row r belongs to sentence r // num_beams. `offset`
    is how many decoder tokens precede the text (decoder start, forced <s>).
    """

    def __init__(
        self,
        min_len: Sequence[int],
        max_len: Sequence[int],
        eos: int,
        num_beams: int,
        offset: int,
        banned: Sequence[int] = (),
    ):
        self.min_len = torch.tensor(list(min_len)).repeat_interleave(num_beams)
        self.max_len = torch.tensor(list(max_len)).repeat_interleave(num_beams)
        self.eos = eos
        self.offset = offset
        self.banned = sorted(set(banned) - {eos})  # tags, <pad>, <mask>: never in a paraphrase

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        produced = input_ids.shape[1] - self.offset
        if produced < 0:
            return scores
        scores = scores.clone()
        if self.banned:
            scores[:, self.banned] = -math.inf
        too_short = produced < self.min_len.to(scores.device)
        scores[too_short, self.eos] = -math.inf
        at_max = produced >= self.max_len.to(scores.device)
        if at_max.any():
            eos_col = scores[at_max, self.eos].clone()
            scores[at_max] = -math.inf
            scores[at_max, self.eos] = torch.where(
                torch.isinf(eos_col), torch.zeros_like(eos_col), eos_col
            )
        return scores


def length_window(n_tokens: int, min_ratio: float, max_ratio: float) -> tuple[int, int]:
    """(min, max) output tokens for an input of n_tokens: ceil(0.75 n) … floor(1.5 n)."""
    low = math.ceil(min_ratio * n_tokens)
    high = max(low, math.floor(max_ratio * n_tokens))
    return low, high


@torch.inference_mode()
def generate(
    model,
    tokenizer,
    texts: Sequence[str],
    tags: str,
    *,
    num_beams: int = 20,
    min_ratio: float = 0.75,
    max_ratio: float = 1.5,
    batch_size: int = 8,
    max_length: int = 128,
    device: torch.device | str = "cpu",
) -> tuple[list[str], list[int]]:
    """Paraphrase each text under `tags`; return (outputs, generated token counts)."""
    device = torch.device(device)
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    outputs, counts = [""] * len(texts), [0] * len(texts)
    gen_cfg = model.generation_config
    offset = 1 + (gen_cfg.forced_bos_token_id is not None)
    eos = gen_cfg.eos_token_id if isinstance(gen_cfg.eos_token_id, int) else tokenizer.eos_token_id
    specials = set(tokenizer.all_special_ids)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        windows = [length_window(min(lengths[i], max_length), min_ratio, max_ratio) for i in idx]
        enc = tokenizer(
            [tagged_input(tags, texts[i]) for i in idx],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
        ).to(device)
        processor = LengthWindow(
            [w[0] for w in windows], [w[1] for w in windows], eos, num_beams, offset, specials
        )
        with autocast(device):
            out = model.generate(
                **enc,
                num_beams=num_beams,
                do_sample=False,
                early_stopping=True,
                max_new_tokens=max(w[1] for w in windows) + offset + 1,
                min_new_tokens=0,
                logits_processor=LogitsProcessorList([processor]),
                length_penalty=1.0,
                no_repeat_ngram_size=0,
            )
        for row, i in enumerate(idx):
            ids = [t for t in out[row].tolist() if t not in specials]
            counts[i] = len(ids)
            outputs[i] = tokenizer.decode(ids, skip_special_tokens=True).strip()
    return outputs, counts
