"""Fill sentinel blanks with T5 by beam search, batched and bucketed by length.

JCSE generates with "a simple unsampled beam search". `fill` fills every blank of a
sentence at once (distinct sentinels, the paper's text: mask_mode all_at_once); `fill_one`
fills the single blank `<extra_id_0>` as its authors' code does, one chunk at a time
(mask_mode sequential, paracl.parts.filler.sequential). Inputs are sorted by token length
so that each batch pads little; results come back in input order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from paracl.core.device import DEFAULT_PRECISION, autocast
from paracl.core.models import check_model_dir
from paracl.parts.filler.masking import sentinel

END_TOKEN = sentinel(1)  # where the authors' `_filter` would cut a fill


def script_cut(decoded: str) -> str:
    """The authors' `_filter` on decoded text: everything before `<extra_id_1>` if it is
    there, else all of it, unstripped."""
    return decoded[: decoded.index(END_TOKEN)] if END_TOKEN in decoded else decoded


log = logging.getLogger(__name__)


def sentinel_ids(tokenizer) -> list[int]:
    """Ids of <extra_id_0>, <extra_id_1>, … as far as the tokenizer has them."""
    ids = []
    while True:
        tid = tokenizer.convert_tokens_to_ids(sentinel(len(ids)))
        if tid is None or tid == tokenizer.unk_token_id:
            break
        ids.append(tid)
    if not ids:
        raise ValueError("the tokenizer has no <extra_id_N> sentinel tokens: not a T5 tokenizer?")
    return ids


@dataclass(frozen=True)
class Candidate:
    target: str  # decoded target, special tokens kept except pad/eos
    score: float  # beam score: length-normalised log-probability
    n_tokens: int = 0  # decoder tokens of the sequence, the start token included, pad not
    span: str | None = None  # fill_one: the fill as JCSE's authors' scripts keep it (script_span)


def _group(order: Sequence[int], batch_size: int, key=lambda i: 0) -> list[list[int]]:
    """Consecutive runs of `order` of at most batch_size that share `key`."""
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < batch_size and key(batches[-1][0]) == key(i):
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


class T5Filler:
    """A T5 (or any seq2seq model with sentinels) that fills blanks."""

    def __init__(self, path: str | Path, device: torch.device, precision: str = DEFAULT_PRECISION):
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        check_model_dir(path)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForSeq2SeqLM.from_pretrained(path).to(device).eval()
        self.device, self.precision = device, precision
        self._sentinels = sentinel_ids(self.tokenizer)
        self.n_sentinels = len(self._sentinels)
        self._drop = {self.tokenizer.pad_token_id, self.tokenizer.eos_token_id}

    def _decode(self, ids: list[int]) -> str:
        kept = [i for i in ids if i not in self._drop]
        return self.tokenizer.decode(kept, skip_special_tokens=False)

    def script_span(self, ids: Sequence[int]) -> str:
        """A generated sequence's fill as JCSE's authors' `_filter` keeps it: the tokens
        after the first two (the decoder start and, by assumption, `<extra_id_0>`) decoded
        with every special token skipped, `<extra_id_1>` and later sentinels included, so
        the text T5 writes after `<extra_id_1>` stays in the fill; no space clean-up, no
        strip; then cut at a literal `<extra_id_1>` (only a tokenizer that does not count
        sentinels as special leaves one)."""
        text = self.tokenizer.decode(
            list(ids[2:]), skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        return script_cut(text)

    def _encode(self, texts: Sequence[str], max_input_tokens: int) -> list[list[int]]:
        if not texts:
            return []
        return self.tokenizer(list(texts), truncation=True, max_length=max_input_tokens)[
            "input_ids"
        ]

    def _beam_search(
        self, rows: list[list[int]], num_beams: int, num_return_sequences: int, spans: bool = False,
        **limits,
    ) -> list[list[Candidate]]:  # fmt: skip
        """One generate() call on right-padded `rows`; num_return_sequences per row,
        best first. `limits`: the stop tokens and length budget. spans: each candidate
        also carries its script_span."""
        pad = self.tokenizer.pad_token_id
        input_ids = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
        for r, ids in enumerate(rows):
            input_ids[r, : len(ids)] = torch.tensor(ids)
        input_ids = input_ids.to(self.device)
        with autocast(self.device, self.precision):
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=input_ids.ne(pad).long(),
                num_beams=num_beams,
                num_return_sequences=num_return_sequences,
                do_sample=False,
                return_dict_in_generate=True,
                output_scores=True,
                **limits,
            )
        seqs, scores = out.sequences.tolist(), out.sequences_scores.float().tolist()
        n = num_return_sequences
        return [
            [
                Candidate(
                    self._decode(s),
                    round(sc, 6),
                    sum(t != pad for t in s[1:]) + 1,
                    self.script_span(s) if spans else None,
                )
                for s, sc in zip(seqs[r * n : r * n + n], scores[r * n : r * n + n], strict=True)
            ]
            for r in range(len(rows))
        ]

    @torch.inference_mode()
    def fill(
        self,
        masked: Sequence[str],
        n_blanks: Sequence[int],
        num_beams: int = 4,
        num_return_sequences: int = 4,
        batch_size: int = 16,
        max_fill_tokens: int = 8,
        max_input_tokens: int = 128,
    ) -> list[list[Candidate]]:
        """num_return_sequences candidates per masked input, best first.

        Inputs are batched by number of blanks, then by token length. A sequence stops
        at eos or at the sentinel after its last blank (`<extra_id_n>` for n blanks,
        which T5 emits to close the final span): anything after it would be discarded
        as an extra fill, and beams that differ only there would be duplicates. The
        budget is max_fill_tokens per blank plus one sentinel per blank and the close.
        """
        _check_beams(num_beams, num_return_sequences)
        enc = self._encode(masked, max_input_tokens)
        order = sorted(range(len(masked)), key=lambda i: (n_blanks[i], len(enc[i]), i))
        results: list[list[Candidate]] = [[] for _ in masked]
        batches = _group(order, batch_size, key=lambda i: n_blanks[i])
        for idx in tqdm(batches, desc="T5 fill", mininterval=10, disable=len(batches) < 5):
            blanks = n_blanks[idx[0]]
            stop = [self.tokenizer.eos_token_id]
            if blanks < self.n_sentinels:
                stop.append(self._sentinels[blanks])
            found = self._beam_search(
                [enc[i] for i in idx],
                num_beams,
                num_return_sequences,
                max_new_tokens=blanks * (max_fill_tokens + 1) + 1,
                eos_token_id=stop,
            )
            for i, cands in zip(idx, found, strict=True):
                results[i] = cands
        return results

    @torch.inference_mode()
    def fill_one(
        self,
        masked: Sequence[str],
        num_beams: int,
        num_return_sequences: int,
        batch_size: int = 16,
        max_length: int | Sequence[int] = 15,
        max_input_tokens: int = 64,
    ) -> list[list[Candidate]]:
        """Beam search on inputs with the single blank `<extra_id_0>`, as JCSE's authors'
        generators call it (paracl.parts.filler.sequential): stop at eos only, at most
        `max_length` decoder tokens with the start token (their 15; one per input where
        the QA script's shorter budget applies), inputs cut at 64 tokens as theirs. Each
        candidate carries the fill as the scripts keep it (`span`). Batched by budget and
        token length; results in input order."""
        _check_beams(num_beams, num_return_sequences)
        enc = self._encode(masked, max_input_tokens)
        budget = [max_length] * len(masked) if isinstance(max_length, int) else list(max_length)
        order = sorted(range(len(masked)), key=lambda i: (budget[i], len(enc[i]), i))
        results: list[list[Candidate]] = [[] for _ in masked]
        batches = _group(order, batch_size, key=lambda i: budget[i])
        for idx in tqdm(batches, desc="T5 fill", mininterval=10, disable=len(batches) < 5):
            found = self._beam_search(
                [enc[i] for i in idx],
                num_beams,
                num_return_sequences,
                spans=True,
                max_length=budget[idx[0]],
                eos_token_id=self.tokenizer.eos_token_id,
            )
            for i, cands in zip(idx, found, strict=True):
                results[i] = cands
        return results


def _check_beams(num_beams: int, num_return_sequences: int) -> None:
    if num_return_sequences > num_beams:
        raise ValueError(f"num_return_sequences ({num_return_sequences}) > num_beams ({num_beams})")
