"""Round-trip translation with temperature softmax + top-k sampling (paper §3.2, §4.1).

Beam search round trips mostly give pairs that are close on the surface (Figure 1);
sampling from a flattened (T > 1), top-k-truncated distribution gives diverse
candidates, and the tagger filters the bad ones afterwards. The paper uses
(k, T) ∈ {(20, 3.0), (30, 2.0)} in each direction: 2 pivots × 2 back-translations =
4 candidates per sentence. Greedy decoding is the paper's round-trip baseline.

Any transformers seq2seq translation model works: FSMT (facebook/wmt19-en-de), Marian
(opus-mt), and multilingual NLLB/M2M, which need the source language set on the
tokenizer and the target language forced as the first generated token.

Determinism: each batch is seeded from the run's seed, the setting, and the batch's own
texts, so a batch gives the same output whichever shard or position it is run in (a
resumed run reproduces an uninterrupted one), and whichever worker ran it.

Sharded execution (`round_trip_sharded` → paracl.distributed.sharded.map_shards):
`init_worker` loads both translators once per worker (a Ray actor, or the driver
process locally; stand-ins are built inside the worker, deterministically) and
`round_trip_shard` translates one shard. The seeded `max_sentences` sample is drawn on
the driver from the id column alone, then (id, text) is streamed: the driver holds the
corpus ids while drawing, then the picked ids and the shards in flight, never the corpus
text. Sentences keep corpus order; shard i holds sentences [i × shard_size,
(i + 1) × shard_size) of the sample, so the output bytes depend on shard_size but not on
the engine or workers.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from paracl import schemas
from paracl.device import autocast
from paracl.distributed.sharded import CountedShards, Engine, map_shards, stream_shards
from paracl.io import fingerprint, input_checksum
from paracl.params import ParamsError
from paracl.sampling import iter_sample

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sampling:
    """One decoding setting: top-k sampling at temperature T, or greedy when top_k is None."""

    top_k: int | None = None
    temperature: float = 1.0

    def kwargs(self) -> dict:
        if self.top_k is None:
            return {"do_sample": False, "num_beams": 1}
        return {"do_sample": True, "top_k": self.top_k, "temperature": self.temperature}

    @property
    def name(self) -> str:
        return "greedy" if self.top_k is None else f"k{self.top_k}_T{self.temperature:g}"


PAPER_SETTINGS = (Sampling(20, 3.0), Sampling(30, 2.0))


def decoding_settings(cfg: dict) -> list[Sampling]:
    """The settings of the roundtrip params: one greedy setting (mode greedy), or the
    (top_k[i], temperature[i]) pairs (mode sample), each used in both directions."""
    if cfg["mode"] == "greedy":
        return [Sampling()]
    if len(cfg["top_k"]) != len(cfg["temperature"]) or not cfg["top_k"]:
        raise ParamsError(
            "params.yaml: 'roundtrip.top_k' and 'roundtrip.temperature' must be non-empty "
            f"lists of equal length (pairs), got {cfg['top_k']} and {cfg['temperature']}"
        )
    return [Sampling(k, float(t)) for k, t in zip(cfg["top_k"], cfg["temperature"], strict=True)]


def batch_seed(seed: int, tag: str, texts: Sequence[str]) -> int:
    """A seed that depends on the run seed, the setting and the batch content only."""
    digest = hashlib.sha256(f"{seed}\x00{tag}\x00".encode() + "\x00".join(texts).encode())
    return int.from_bytes(digest.digest()[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


class Translator:
    """A seq2seq translation model and its tokenizer, with batched sampled decoding."""

    def __init__(
        self,
        path: str | Path,
        device: torch.device | str = "cpu",
        src_lang: str | None = None,
        tgt_lang: str | None = None,
    ):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModelForSeq2SeqLM.from_pretrained(str(path)).to(self.device).eval()
        self.forced_bos = None
        if src_lang is not None:
            self.tokenizer.src_lang = src_lang
        if tgt_lang is not None:
            self.forced_bos = self._lang_token_id(tgt_lang)

    def _lang_token_id(self, code: str) -> int:
        """The id of a target-language token: NLLB 'deu_Latn', M2M 'de' (as '__de__')."""
        unk = self.tokenizer.unk_token_id
        for token in (code, f"__{code}__"):
            idx = self.tokenizer.convert_tokens_to_ids(token)
            if idx is not None and idx != unk:
                return idx
        raise ValueError(f"language code {code!r} is not a token of this tokenizer")

    @torch.inference_mode()
    def translate(
        self,
        texts: Sequence[str],
        sampling: Sampling,
        seed: int = 0,
        batch_size: int = 32,
        max_new_tokens: int = 128,
        length_ratio: float = 2.0,
        num_beams: int = 1,
    ) -> list[str]:
        """Translate `texts`; batches are length-sorted, outputs come back in input order.

        At most min(max_new_tokens, length_ratio × the batch's longest input + 5) tokens
        are generated, so a model that never emits </s> cannot run away.
        """
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
        out: list[str] = [""] * len(texts)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            batch = [texts[i] for i in idx]
            enc = self.tokenizer(
                batch, return_tensors="pt", padding=True, truncation=True, max_length=max_new_tokens
            ).to(self.device)
            limit = min(max_new_tokens, math.ceil(length_ratio * max(lengths[i] for i in idx)) + 5)
            kwargs = sampling.kwargs()
            if num_beams > 1:
                kwargs["num_beams"] = num_beams
            if self.forced_bos is not None:
                kwargs["forced_bos_token_id"] = self.forced_bos
            torch.manual_seed(batch_seed(seed, sampling.name, batch))
            with autocast(self.device):
                generated = self.model.generate(**enc, max_new_tokens=limit, **kwargs)
            decoded = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
            for i, text in zip(idx, decoded, strict=True):
                out[i] = text.strip()
        return out


def round_trip(
    forward: Translator,
    backward: Translator,
    ids: Sequence[str],
    texts: Sequence[str],
    settings: Sequence[Sampling],
    seed: int,
    **decode,
) -> pd.DataFrame:
    """Every forward setting × every backward setting: len(settings)² candidates a sentence."""
    frames = []
    for i, fwd in enumerate(settings):
        pivots = forward.translate(texts, fwd, seed=seed, **decode)
        for j, bwd in enumerate(settings):
            back = backward.translate(pivots, bwd, seed=seed + 1 + j, **decode)
            frames.append(
                pd.DataFrame(
                    {
                        "id": list(ids),
                        "candidate": i * len(settings) + j,
                        "text": list(texts),
                        "pivot": pivots,
                        "paraphrase": back,
                        "forward": fwd.name,
                        "backward": bwd.name,
                    }
                )
            )
    if not frames:
        raise ValueError("no decoding settings given")
    out = pd.concat(frames, ignore_index=True)
    out["candidate"] = out["candidate"].astype("int32")
    return out.sort_values(["id", "candidate"], kind="stable").reset_index(drop=True)


def round_trip_sharded(
    corpus: str | Path, out: str | Path, params: dict, models: dict
) -> tuple[dict, int]:
    """Every candidate of the seeded `max_sentences` sample of the corpus into the shard
    directory `out` (resuming a crashed run); return (its manifest, sentences read).
    `models`: the forward_model and backward_model descriptions, kept in the metadata."""
    cfg, seed = params["roundtrip"], params["seed"]
    settings = decoding_settings(cfg)
    decode = {k: cfg[k] for k in ("batch_size", "max_new_tokens", "length_ratio", "num_beams")}
    key = fingerprint(cfg, seed, params["lang"], input_checksum(corpus))
    sample = iter_sample(corpus, cfg["max_sentences"], seed)
    sentences = CountedShards(stream_shards(sample, cfg["shard_size"]))
    manifest = map_shards(
        round_trip_shard,
        sentences,
        out=out,
        schema=schemas.ROUNDTRIP_CANDIDATES,
        key=key,
        engine=Engine.from_params(params),
        metadata={"params": cfg, **models},
        model=True,
        init=init_worker,
        init_args=(
            cfg["forward_model"],
            cfg["backward_model"],
            cfg["src_lang_code"],
            cfg["pivot_lang_code"],
            params["device"],
            settings,
            seed,
            decode,
        ),
        desc="roundtrip shards",
    )
    return manifest, sentences.rows


_STATE: dict = {}  # per worker process: the loaded translators and the decoding config


def init_worker(
    forward_model: str,
    backward_model: str,
    src_lang_code: str | None,
    pivot_lang_code: str | None,
    device: str,
    settings: Sequence[Sampling],
    seed: int,
    decode: dict,
) -> None:
    """Load the two translators (stand-ins are built here, in the worker: seed 0 forward,
    seed 1 backward) unless this process already holds them."""
    from paracl.device import select_device
    from paracl.standins import local_path

    dev = select_device(device)
    key = (forward_model, backward_model, src_lang_code, pivot_lang_code, str(dev))
    if _STATE.get("key") != key:
        _STATE.clear()
        forward = Translator(local_path(forward_model, 0), dev, src_lang_code, pivot_lang_code)
        backward = Translator(local_path(backward_model, 1), dev, pivot_lang_code, src_lang_code)
        _STATE.update(key=key, forward=forward, backward=backward)
    _STATE.update(settings=list(settings), seed=seed, decode=dict(decode))


def round_trip_shard(frame: pd.DataFrame, index: int) -> pd.DataFrame:
    """map_shards fn: every candidate of one shard's (id, text) rows."""
    return round_trip(
        _STATE["forward"],
        _STATE["backward"],
        frame["id"].tolist(),
        frame["text"].tolist(),
        _STATE["settings"],
        _STATE["seed"],
        **_STATE["decode"],
    )
