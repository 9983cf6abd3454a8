"""Causal-LM perplexity, to keep the most fluent paraphrase candidate (PPDB paper §3.2).

perplexity(x) = exp(mean over tokens t of -log p(x_t | x_<t)). Every sentence starts
with the model's BOS token (added when the tokenizer does not add it), so the first
word is scored too and short sentences are comparable.

Why batched and bucketed: one forward pass per sentence leaves most of the matrix
units idle; sorting by token length and packing batches up to `max_batch_tokens`
keeps padding small. Padding is on the right with attention_mask 0 and label -100, so
a sentence gets the same score alone and in a padded batch (a causal model never
attends to later positions, and positions of real tokens do not move); the NLL is
taken over each row's real tokens only. Logits are B x L x vocab floats:
`max_batch_tokens` bounds that memory (gemma-3's vocabulary is 262k, so 1024 tokens
is ~1 GB; SmolLM2's is 49k, so 4096 tokens is ~0.8 GB). On this CPU, batches of ~64
sentences score 2-3x more candidates per CPU second than batches of ~25.

Perplexities are rounded to `SIGNIFICANT` digits: they come from float32 logits, whose
last bits can differ between runs of the same input on a CPU (a 1e-6 relative wobble
was seen between two fresh runs), and the digits past float32 precision are noise that
would make the same params give different bytes.

`rank_candidates` is the rank_fluency stage's work: the candidates grouped by sentence
into shards (`paracl.core.distributed.sharded`), `RankJob` on each (in the driver with the
local executor, on `model_workers` Ray actors each loading the LM once with `executor:
ray`), and the metrics. The driver holds one shard per task in flight and, for the
median in the metrics, one perplexity per pair.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from tqdm import tqdm

from paracl.core import schemas
from paracl.core.device import DEFAULT_PRECISION, autocast, seed_everything, select_device
from paracl.core.distributed.sharded import (
    CountedShards,
    Engine,
    Shard,
    group_shards,
    map_shards,
    prepend,
)
from paracl.core.io import fingerprint, input_checksum, iter_batches, iter_parts, read_metadata
from paracl.core.key_figures import write_metrics
from paracl.core.models import ResolvedModel, check_model_dir, resolve_model
from paracl.core.params import Lang, RunSettings, RunWide, Section, param
from paracl.core.stage import args

if TYPE_CHECKING:  # torch loads with the scorer: the params check runs without it
    import torch

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class RankFluency(Section):
    model: dict[Lang, str]
    batch_size: int = param(min=1)
    # padded tokens per batch: bounds the logits' memory
    max_batch_tokens: dict[Lang, int] = param(min=8)
    max_sentences: int | None = param(min=1, help="sentences scored; null = all")
    shard_size: int = param(min=1, help="candidates per shard, whole sentences")


class Params(RunWide):
    """What stage rank_fluency reads of params.yaml: the run-wide keys and these."""

    rank_fluency: RankFluency


log = logging.getLogger(__name__)

SIGNIFICANT = 5  # digits of a stored perplexity (float32 logits carry ~7)


def perplexity(total_nll: float, count: int) -> float:
    """exp(mean token NLL), rounded to SIGNIFICANT digits (see the module docstring)."""
    return float(f"{math.exp(total_nll / count):.{SIGNIFICANT}g}")


def length_batches(
    lengths: Sequence[int], batch_size: int, max_batch_tokens: int
) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), each within
    `batch_size` items and `max_batch_tokens` padded tokens (a longer item goes alone)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = lengths[current[0]] if current else lengths[i]
        if current and (
            len(current) >= batch_size or (len(current) + 1) * width > max_batch_tokens
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def start_token_id(tokenizer) -> int | None:
    """The token each sentence starts with, so that its first word is scored.

    The tokenizer's own BOS when it adds one (gemma: <bos>); else GPT-2's and SmolLM's
    document separator <|endoftext|>, which is what the model saw before a new text in
    pre-training (SmolLM2-Instruct's declared BOS is the chat marker <|im_start|>);
    else the declared BOS; else none (the first token is then not scored).
    """
    probe = tokenizer("a", add_special_tokens=True)["input_ids"]
    if tokenizer.bos_token_id is not None and probe and probe[0] == tokenizer.bos_token_id:
        return tokenizer.bos_token_id
    if "<|endoftext|>" in tokenizer.get_vocab():  # (SmolLM2 also calls it its unk token)
        return tokenizer.convert_tokens_to_ids("<|endoftext|>")
    return tokenizer.bos_token_id


class PerplexityScorer:
    """A causal LM and its tokenizer, scoring texts in length-bucketed batches."""

    def __init__(
        self,
        model_path: str | Path,
        device: torch.device | str = "cpu",
        batch_size: int = 32,
        max_batch_tokens: int = 2048,
        precision: str = DEFAULT_PRECISION,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_model_dir(model_path)
        self.device, self.precision = torch.device(device), precision
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
        self.model.to(self.device).eval()
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        tok = self.tokenizer
        self.bos_id = start_token_id(tok)
        self.pad_id = next(
            (t for t in (tok.pad_token_id, tok.eos_token_id, self.bos_id) if t is not None), 0
        )
        limit = getattr(self.model.config, "max_position_embeddings", None) or 1024
        self.max_length = min(int(limit), 1024)

    def encode(self, text: str) -> list[int]:
        """Token ids with a leading BOS (when the model has one), truncated to fit."""
        ids = list(self.tokenizer(text, add_special_tokens=True)["input_ids"])
        eos = self.tokenizer.eos_token_id
        if eos is not None and eos != self.bos_id and ids and ids[-1] == eos:
            ids = ids[:-1]  # score the sentence, not an end-of-text token some tokenizers add
        if self.bos_id is not None and (not ids or ids[0] != self.bos_id):
            ids = [self.bos_id] + ids
        return ids[: self.max_length]

    def _nll_batch(self, seqs: list[list[int]]) -> list[tuple[float, int]]:
        """(sum of token NLL, number of scored tokens) for each sequence of one batch."""
        import torch
        import torch.nn.functional as F

        with torch.inference_mode():
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for row, seq in enumerate(seqs):
                ids[row, : len(seq)] = torch.tensor(seq)
                mask[row, : len(seq)] = 1
            labels = ids.masked_fill(mask == 0, -100)
            ids, mask, labels = ids.to(self.device), mask.to(self.device), labels.to(self.device)
            with autocast(self.device, self.precision):
                logits = self.model(input_ids=ids, attention_mask=mask).logits
            out = []
            for row, seq in enumerate(seqs):
                # one row at a time: a [len, vocab] log-softmax, not a copy of the whole batch
                nll = F.cross_entropy(
                    logits[row, : len(seq) - 1].float(), labels[row, 1 : len(seq)], reduction="sum"
                )
                out.append((float(nll), len(seq) - 1))
            return out

    def score(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Perplexity of each text (NaN for a text with no token to score)."""
        seqs = [self.encode(t) for t in texts]
        out = np.full(len(texts), np.nan, dtype=np.float64)
        batches = length_batches([len(s) for s in seqs], self.batch_size, self.max_batch_tokens)
        for batch in tqdm(batches, desc="perplexity", disable=not progress, mininterval=10):
            for i, (total, count) in zip(
                batch, self._nll_batch([seqs[i] for i in batch]), strict=True
            ):
                if count > 0:
                    out[i] = perplexity(total, count)
        return out

    def score_one_by_one(self, texts: Sequence[str]) -> np.ndarray:
        """The unbatched reference loop (for the benchmark and the padding test)."""
        out = np.full(len(texts), np.nan, dtype=np.float64)
        for i, text in enumerate(texts):
            total, count = self._nll_batch([self.encode(text)])[0]
            if count > 0:
                out[i] = perplexity(total, count)
        return out


def choose(cands: pd.DataFrame, perplexity: Sequence[float] | np.ndarray) -> pd.DataFrame:
    """The lowest-perplexity candidate of each sentence (first one on ties), input order."""
    scored = cands.assign(perplexity=list(perplexity), _order=range(len(cands)))
    scored = scored.dropna(subset=["perplexity"])
    best = scored.sort_values(["perplexity", "_order"]).drop_duplicates("id", keep="first")
    best = best.sort_values("_order").rename(columns={"candidate": "paraphrase"})
    return best.drop(columns="_order").reset_index(drop=True)


# ---------------------------------------------------------------- sharded stage worker


@dataclass(frozen=True)
class RankJob:
    """The stage's shard worker (paracl.core.distributed.executor.ShardJob): the LM
    loaded once per worker (a Ray actor, or the driver process locally)."""

    model_path: str
    device: str
    batch_size: int
    max_batch_tokens: int
    seed: int
    precision: str = DEFAULT_PRECISION

    def setup(self) -> PerplexityScorer:
        seed_everything(self.seed)
        dev = select_device(self.device)
        return PerplexityScorer(
            self.model_path, dev, self.batch_size, self.max_batch_tokens, self.precision
        )

    def process(self, scorer: PerplexityScorer, shard: Shard) -> pd.DataFrame:
        """The best candidate of each sentence of one shard (all of a sentence's
        candidates are in the same shard; schemas.PPDB_PAIRS columns)."""
        return choose(shard.rows, scorer.score(shard.rows["candidate"].tolist()))


# ---------------------------------------------------------------- the stage's driver


def perplexities(path: str) -> np.ndarray:
    """A pairs artifact's perplexity column, read alone (for the mean and median)."""
    parts = [b["perplexity"].to_numpy() for _, b in iter_parts(path, 65536, columns=["perplexity"])]
    return np.concatenate(parts) if parts else np.zeros(0)


def rank_candidates(
    candidates: str, out: str, model: ResolvedModel, cfg: dict, run: RunSettings,
    engine: Engine, upstream: dict, substituted: dict,
) -> dict:  # fmt: skip
    """Write the lowest-perplexity candidate of each sentence of `candidates` (the first
    `rank_fluency.max_sentences` sentences, in artifact order; `cfg`: the rank_fluency
    section) to the shard directory `out`; return the metrics. `upstream` is the
    candidates' metadata, `substituted` ppdb_substitute's metrics (both carried into the
    metrics). Zero candidates give an empty `out` and a note, and the model is never loaded."""
    lang = run.lang
    key = fingerprint(
        "rank_fluency",
        cfg,
        lang,
        run.seed,
        run.device,
        run.precision,
        model.describe(),
        input_checksum(candidates),
    )
    scored, notes = _shards(candidates, cfg["shard_size"], cfg["max_sentences"], model)
    job = RankJob(
        str(Path(model.path).resolve()),  # Ray workers run in another cwd
        run.device,
        cfg["batch_size"],
        cfg["max_batch_tokens"][lang],
        run.seed,
        run.precision,
    )
    manifest = map_shards(
        job,
        scored,
        out=out,
        schema=schemas.PPDB_PAIRS,
        key=key,
        engine=engine,
        metadata={
            "stage": "rank_fluency",
            "model": model.describe(),
            "probability": upstream.get("probability"),
            "stand_in_probability": upstream.get("stand_in_probability"),
            "theta": upstream.get("theta"),
            "lang": lang,
        },
        model=True,  # no shard (no candidates): the model is never loaded
        desc="rank_fluency",
    )
    ppl = perplexities(out) if manifest["rows"] else np.zeros(0)
    log.info("%d pairs → %s", manifest["rows"], out)
    return _metrics(
        lang, model, upstream, substituted, scored, manifest, ppl, cfg["max_sentences"], notes
    )


def _shards(
    candidates: str, shard_size: int, max_sentences: int | None, model: ResolvedModel
) -> tuple[CountedShards, list[str]]:
    """The candidates in shards of whole sentences (the first `max_sentences`), and a
    note when there is none."""
    batches = iter_batches(candidates, batch_size=8192, schema=schemas.PPDB_CANDIDATES)
    shards = group_shards(batches, shard_size, key="id", max_groups=max_sentences)
    first = next(shards, None)
    notes = []
    if first is None:
        notes.append(f"{candidates} has no candidates: no pairs (see metrics/ppdb_substitute.json)")
        log.warning(notes[-1])
    else:
        log.info("ranking candidates with %s", model)
    scored = CountedShards(() if first is None else prepend(first, shards), key="id")
    return scored, notes


def _metrics(
    lang: str,
    model: ResolvedModel,
    upstream: dict,
    substituted: dict,
    scored: CountedShards,
    manifest: dict,
    ppl: np.ndarray,
    max_sentences: int | None,
    notes: list[str],
) -> dict:
    """rank_fluency's metrics: ppdb_substitute's counts carried on, what was scored, the
    pairs' perplexities."""
    return {
        "lang": lang,
        "theta": upstream.get("theta"),
        "model": model.describe(),
        "probability": upstream.get("probability"),
        "stand_in_probability": upstream.get("stand_in_probability"),
        "dictionary": substituted.get("dictionary", {}),
        "rules_kept_theta": substituted.get("rules_kept_theta"),
        "sentences": substituted.get("sentences"),
        "sentences_matched": substituted.get("sentences_matched"),
        "candidates": substituted.get("candidates"),
        "sentences_scored": scored.groups,
        "candidates_scored": scored.rows,
        "pairs": int(manifest["rows"]),
        "perplexity_mean": round(float(ppl.mean()), 4) if len(ppl) else None,
        "perplexity_median": round(float(np.median(ppl)), 4) if len(ppl) else None,
        "max_sentences": max_sentences,
        "shards": len(manifest["shards"]),
        "notes": notes,
    }


# dvc.yaml's metrics (paracl.core.key_figures): training pairs made
KEY_FIGURES = ("pairs",)


def main(params: dict) -> None:
    paths = args("candidates", "rules", "pairs", "metrics")
    upstream = read_metadata(paths.candidates)
    substituted = read_metadata(paths.rules).get("metrics", {})
    cfg, settings = params["rank_fluency"], RunSettings.of(params)
    model = resolve_model(cfg["model"][settings.lang])
    metrics = rank_candidates(
        paths.candidates, paths.pairs, model, cfg, settings, Engine.from_params(params),
        upstream, substituted,
    )  # fmt: skip
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
