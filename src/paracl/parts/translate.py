"""The round trip's translators: a sentence to a pivot language and back, seeded.

Two stages run them: roundtrip (sampled candidates, shard by shard, paper §3.2, §4.1)
and paraphrase_pairs (the paper's greedy round-trip baseline on a pair dataset's
sentences, §5.3). `Sampling` is one decoding setting (top-k sampling at temperature T, or
greedy); `round_trip` crosses every forward setting with every backward one;
`RoundTripJob` is the shard worker that loads both translators once and translates a shard.

Any transformers seq2seq translation model works: FSMT (facebook/wmt19-en-de), Marian
(opus-mt), and multilingual NLLB/M2M, which need the source language set on the
tokenizer and the target language forced as the first generated token.

No MT weights ship offline, so the offline default is a *causal* LM prompted to
translate (`PromptTranslator`): gemma-3-270m, which knows German, English and Japanese,
with three fixed example pairs in the prompt (few-shot), one line per sentence. Which
class runs is read from the model's config (`is_encoder_decoder`); a packaged GGUF runs
on llama.cpp (`LlamaCppTranslator`, batched by paracl.parts.llama_batch).

Determinism: each batch is seeded from the run's seed, the setting, and the batch's own
texts, so a batch gives the same output whichever shard or position it is run in (a
resumed run reproduces an uninterrupted one), and whichever worker ran it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from paracl.core import languages
from paracl.core.device import DEFAULT_PRECISION, autocast
from paracl.core.distributed.sharded import Shard
from paracl.core.errors import ParamsError

if TYPE_CHECKING:  # torch loads with a translator: the params check runs without it
    import torch


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
PAPER_MODELS = ("facebook/wmt19-en-de", "facebook/wmt19-de-en")


def batch_seed(seed: int, tag: str, texts: Sequence[str]) -> int:
    """A seed that depends on the run seed, the setting and the batch content only."""
    digest = hashlib.sha256(f"{seed}\x00{tag}\x00".encode() + "\x00".join(texts).encode())
    return int.from_bytes(digest.digest()[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def translation_prompt(text: str, src: str, tgt: str) -> str:
    """A few-shot prompt whose continuation is the translation, ending at a newline."""
    # the shots: the same sentences in each language's profile
    a, b = languages.pivot(src), languages.pivot(tgt)
    pairs = zip(a.examples, b.examples, strict=True)
    shots = "".join(f"{a.name}: {x}\n{b.name}: {y}\n\n" for x, y in pairs)
    return f"{shots}{a.name}: {text}\n{b.name}:"


def few_shot_prefix(src: str, tgt: str) -> str:
    """The part of every src → tgt prompt before the sentence (its examples)."""
    return translation_prompt("\x00", src, tgt).split("\x00", 1)[0]


def describe(model_id: str, seed: int, device: torch.device) -> dict:
    """What runs for `model_id`, for the metrics: a packaged GGUF runs as it ships (on
    llama.cpp, quantised), anything else as `paracl.core.models.describe_model` says."""
    from paracl.core.models import PACKAGED, describe_model, packaged_gguf

    if device.type == "cpu" and model_id in PACKAGED and PACKAGED[model_id].file.endswith(".gguf"):
        if packaged_gguf(model_id) is not None:
            spec = PACKAGED[model_id]
            note = f"{spec.file} from {spec.dist}, run as shipped (quantised) by llama.cpp"
            return {
                "id": model_id,
                "source": f"package:{spec.dist}",
                "note": note,
                "stand_in": False,
            }
    return describe_model(model_id, seed)


def load_translator(
    model_id: str,
    seed: int,
    device: torch.device,
    src: str,
    tgt: str,
    src_lang_code: str | None = None,
    tgt_lang_code: str | None = None,
    loaded: dict | None = None,
    precision: str = DEFAULT_PRECISION,
) -> Translator | PromptTranslator | LlamaCppTranslator:
    """A translator src → tgt for `model_id`: a seq2seq model (NLLB/M2M codes optional),
    or a causal LM prompted to translate, on llama.cpp where the id ships as a GGUF file
    (on 2 CPU cores gemma-3-270m generates ~10× faster there than in transformers; what
    runs is the packaged quantised file itself), else on transformers. `loaded` (model →
    object) lets the two directions of a round trip share one causal LM. `precision`: the
    autocast dtype on transformers (paracl.core.device); llama.cpp runs the GGUF's own types."""
    import torch
    from transformers import AutoConfig

    from paracl.core.models import local_path, packaged_gguf

    loaded = {} if loaded is None else loaded
    gguf = packaged_gguf(model_id) if device.type == "cpu" else None
    path = None if gguf else local_path(model_id, seed)
    if path is not None and AutoConfig.from_pretrained(str(path)).is_encoder_decoder:
        return Translator(path, device, src_lang_code, tgt_lang_code, precision)
    for code in (src, tgt):
        if languages.pivot(code) is None:
            raise ParamsError(
                f"params.yaml: 'roundtrip.pivot': no translation prompt for language {code!r} "
                f"(have: {', '.join(languages.pivots())})"
            )
    key = str(gguf or path)
    if gguf is not None:
        if key not in loaded:
            from llama_cpp import Llama

            from paracl.parts.llama_batch import load_cpu_backend

            load_cpu_backend()
            loaded[key] = Llama(
                model_path=key,
                n_ctx=1024,
                n_threads=torch.get_num_threads(),
                seed=0,
                verbose=False,
            )
        return LlamaCppTranslator(loaded[key], src, tgt)
    if key not in loaded:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(key, dtype=torch.float32)
        loaded[key] = (model.to(device).eval(), AutoTokenizer.from_pretrained(key))
    return PromptTranslator(*loaded[key], src, tgt, precision)


class LlamaCppTranslator:
    """A packaged GGUF causal LM on llama.cpp, prompted to translate: the interface of
    `Translator`, decoded by `paracl.parts.llama_batch.BatchedCompletions` (`batch_size`
    sentences side by side, the few-shot examples read once).

    Seeded per sentence: each completion samples from a generator seeded by the run's
    seed, its setting and its own text. Its logits also move a little with what is
    decoded beside it (see paracl.parts.llama_batch), so the same texts in the same order and
    batch_size give the same output: a shard, resumed or not, on any worker.
    """

    def __init__(self, llm, src: str, tgt: str):
        self.llm, self.src, self.tgt = llm, src, tgt
        self.engine = None

    def translate(
        self, texts: Sequence[str], sampling: Sampling, seed: int = 0, **decode
    ) -> list[str]:
        """Translate `texts` as `Translator.translate` does; a row ends at its first line break."""
        return self.translate_grid(texts, [sampling], [seed], **decode)[0]

    def translate_grid(
        self,
        texts: Sequence[str],
        settings: Sequence[Sampling],
        seeds: Sequence[int],
        batch_size: int = 32,
        max_new_tokens: int = 128,
        length_ratio: float = 2.0,
        num_beams: int = 1,
    ) -> list[list[str]]:
        """Every text under every setting (settings[i] seeded by seeds[i]): each prompt is
        read once and forked per setting. Returns [setting][text]."""
        import torch

        from paracl.parts.llama_batch import BatchedCompletions, Draw

        if num_beams > 1:
            raise ParamsError("params.yaml: 'roundtrip.num_beams' > 1 needs a seq2seq model")
        if self.engine is None or self.engine.n_seq != max(batch_size, len(settings)):
            prefix = few_shot_prefix(self.src, self.tgt)
            self.engine = BatchedCompletions(
                self.llm, prefix, max(batch_size, len(settings)), torch.get_num_threads()
            )
        draws = []
        for text in texts:
            limit = min(max_new_tokens, math.ceil(length_ratio * self.engine.tokens(text)) + 5)
            draws.append(
                [
                    Draw(s.top_k, s.temperature, batch_seed(sd, s.name, [text]), limit)
                    for s, sd in zip(settings, seeds, strict=True)
                ]
            )
        prompts = [translation_prompt(t, self.src, self.tgt) for t in texts]
        by_text = self.engine.complete(prompts, draws)
        return [[row[i] for row in by_text] for i in range(len(settings))]


def line_end_ids(tokenizer) -> list[int]:
    """Every token that contains a line break: generation stops at the first one."""
    ends = [i for t, i in tokenizer.get_vocab().items() if "\n" in t or "Ċ" in t]
    if tokenizer.eos_token_id is not None:
        ends.append(tokenizer.eos_token_id)
    return sorted(set(ends))


class Translator:
    """A seq2seq translation model and its tokenizer, with batched sampled decoding."""

    def __init__(
        self,
        path: str | Path,
        device: torch.device | str = "cpu",
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        precision: str = DEFAULT_PRECISION,
    ):
        import torch
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        self.device, self.precision = torch.device(device), precision
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

    def _encode(self, batch: list[str], max_length: int) -> dict:
        return self.tokenizer(
            batch, return_tensors="pt", padding=True, truncation=True, max_length=max_length
        ).to(self.device)

    def _generate_kwargs(self) -> dict:
        return {} if self.forced_bos is None else {"forced_bos_token_id": self.forced_bos}

    def _decode(self, generated: torch.Tensor, enc: dict) -> list[str]:
        return [t.strip() for t in self.tokenizer.batch_decode(generated, skip_special_tokens=True)]

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
        import torch

        with torch.inference_mode():
            lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
            order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
            out: list[str] = [""] * len(texts)
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                batch = [texts[i] for i in idx]
                enc = self._encode(batch, max_new_tokens)
                limit = min(
                    max_new_tokens, math.ceil(length_ratio * max(lengths[i] for i in idx)) + 5
                )
                kwargs = {**sampling.kwargs(), **self._generate_kwargs()}
                if num_beams > 1:
                    kwargs["num_beams"] = num_beams
                torch.manual_seed(batch_seed(seed, sampling.name, batch))
                with autocast(self.device, self.precision):
                    generated = self.model.generate(**enc, max_new_tokens=limit, **kwargs)
                for i, text in zip(idx, self._decode(generated, enc), strict=True):
                    out[i] = text
            return out

    def translate_grid(
        self, texts: Sequence[str], settings: Sequence[Sampling], seeds: Sequence[int], **decode
    ) -> list[list[str]]:
        """Every text under every setting (settings[i] seeded by seeds[i]): [setting][text]."""
        return [
            self.translate(texts, s, seed=sd, **decode)
            for s, sd in zip(settings, seeds, strict=True)
        ]


class PromptTranslator(Translator):
    """A transformers causal LM prompted to translate (few-shot), batched as `Translator`:
    for a causal LM with no packaged GGUF, or on a GPU. A row ends at its first line
    break, and at least 2 tokens are generated (an empty line is no translation)."""

    def __init__(self, model, tokenizer, src: str, tgt: str, precision: str = DEFAULT_PRECISION):
        self.model, self.tokenizer, self.src, self.tgt = model, tokenizer, src, tgt
        self.device, self.precision = model.device, precision
        self.tokenizer.padding_side = "left"  # generation continues every row at the end
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.stop_ids = line_end_ids(tokenizer)

    def _encode(self, batch: list[str], max_length: int) -> dict:
        prompts = [translation_prompt(t, self.src, self.tgt) for t in batch]
        return self.tokenizer(prompts, return_tensors="pt", padding=True).to(self.device)

    def _generate_kwargs(self) -> dict:
        pad = self.tokenizer.pad_token_id
        return {"min_new_tokens": 2, "eos_token_id": self.stop_ids, "pad_token_id": pad}

    def _decode(self, generated: torch.Tensor, enc: dict) -> list[str]:
        new = generated[:, enc["input_ids"].shape[1] :]
        decoded = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        return [t.split("\n", 1)[0].strip() for t in decoded]


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
    all_pivots = forward.translate_grid(texts, settings, [seed] * len(settings), **decode)
    back_seeds = [seed + 1 + j for j in range(len(settings))]
    for i, (fwd, pivots) in enumerate(zip(settings, all_pivots, strict=True)):
        backs = backward.translate_grid(pivots, settings, back_seeds, **decode)
        for j, (bwd, back) in enumerate(zip(settings, backs, strict=True)):
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


@dataclass(frozen=True)
class RoundTripJob:
    """The round trip's shard worker (paracl.core.distributed.executor.ShardJob): stage
    roundtrip maps it over its shards, paraphrase_pairs runs it once, greedily."""

    forward_model: str
    backward_model: str
    src_lang_code: str | None
    pivot_lang_code: str | None
    lang: str
    pivot: str
    device: str
    settings: tuple[Sampling, ...]
    seed: int
    decode: dict  # round_trip's batching and length keyword arguments
    precision: str = DEFAULT_PRECISION

    def setup(self) -> tuple:
        """(forward, backward) translators. Stand-ins are built here, in the worker (seed 0
        forward, seed 1 backward); one causal LM serves both directions."""
        from paracl.core.device import select_device

        dev, loaded = select_device(self.device), {}
        codes = (self.src_lang_code, self.pivot_lang_code)
        forward = load_translator(
            self.forward_model, 0, dev, self.lang, self.pivot, *codes, loaded, self.precision
        )
        backward = load_translator(
            self.backward_model, 1, dev, self.pivot, self.lang, *codes[::-1], loaded, self.precision
        )
        return forward, backward

    def process(self, translators: tuple, shard: Shard) -> pd.DataFrame:
        """Every candidate of one shard's (id, text) rows."""
        forward, backward = translators
        frame = shard.rows
        return round_trip(
            forward,
            backward,
            frame["id"].tolist(),
            frame["text"].tolist(),
            list(self.settings),
            self.seed,
            **self.decode,
        )
