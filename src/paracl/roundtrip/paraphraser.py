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
import logging
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from transformers import LogitsProcessor, LogitsProcessorList

from paracl.device import autocast
from paracl.roundtrip.tagging import ALL_TAGS

log = logging.getLogger(__name__)


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


def ratio_summary(counts: Sequence[int], lengths: Sequence[int]) -> dict:
    """Output/input token-length ratios, to show the window was respected."""
    ratios = np.array([c / n for c, n in zip(counts, lengths, strict=True) if n > 0])
    if not len(ratios):
        return {"min": None, "max": None, "mean": None}
    return {"min": float(ratios.min()), "max": float(ratios.max()), "mean": float(ratios.mean())}


# -- sharded generation (stages/generate_paraphrases.py → map_shards) -------------------

_STATE: dict = {}  # per worker process: the paraphraser, its tokenizer, the STS scorer


def init_worker(
    model_dir: str,
    scorer_dir: str,
    device: str,
    lang: str,
    tags: Sequence[str],
    gen: dict,
) -> None:
    """Load the paraphraser and the STS scorer once per worker (a Ray actor, or the
    driver process locally), from directories this worker can read."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from paracl.device import select_device
    from paracl.models import check_model_dir
    from paracl.roundtrip import sts_scorer

    check_model_dir(model_dir)
    check_model_dir(scorer_dir)
    dev = select_device(device)
    _STATE.clear()
    _STATE.update(
        tokenizer=AutoTokenizer.from_pretrained(model_dir),
        model=AutoModelForSeq2SeqLM.from_pretrained(model_dir).to(dev).eval(),
        scorer=sts_scorer.load_scorer(scorer_dir, str(dev)),
        device=dev,
        lang=lang,
        tags=list(tags),
        gen=dict(gen),
    )


def generate_shard(frame: pd.DataFrame, index: int) -> pd.DataFrame:
    """map_shards fn: every requested tag pair for one shard of (id, text) rows, scored
    like the tagger scores candidates (STS ×100, sentence BLEU ×100); tag-major rows."""
    from paracl.roundtrip import sts_scorer, tagging

    tokenizer, model, scorer = _STATE["tokenizer"], _STATE["model"], _STATE["scorer"]
    texts = frame["text"].tolist()
    n_in = np.array(
        [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts], dtype=np.int32
    )
    rows = []
    for tags in _STATE["tags"]:
        outputs, counts = generate(
            model, tokenizer, texts, tags, device=_STATE["device"], **_STATE["gen"]
        )
        sim, bleu = tagging.score_pairs(
            texts, outputs, lambda pairs: sts_scorer.predict(scorer, pairs), _STATE["lang"]
        )
        rows.append(
            pd.DataFrame(
                {
                    "id": frame["id"].tolist(),
                    "text": texts,
                    "paraphrase": outputs,
                    "tags": tags,
                    "sim": sim,
                    "bleu": bleu,
                    "n_input_tokens": n_in,
                    "n_output_tokens": np.array(counts, dtype=np.int32),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)
