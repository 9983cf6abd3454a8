"""Fill sentinel blanks with T5 by beam search, batched and bucketed by length.

JCSE generates with "a simple unsampled beam search" and takes several return
sequences per input (4 negatives per anchor for base models). Inputs are sorted by
token length so that each batch pads little; results come back in input order.
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
        if num_return_sequences > num_beams:
            raise ValueError(
                f"num_return_sequences ({num_return_sequences}) > num_beams ({num_beams})"
            )
        if not masked:
            return []
        enc = self.tokenizer(list(masked), truncation=True, max_length=max_input_tokens)[
            "input_ids"
        ]
        order = sorted(range(len(masked)), key=lambda i: (n_blanks[i], len(enc[i]), i))
        results: list[list[Candidate]] = [[] for _ in masked]
        pad = self.tokenizer.pad_token_id
        batches: list[list[int]] = []
        for i in order:  # same number of blanks within a batch
            if (
                batches
                and len(batches[-1]) < batch_size
                and n_blanks[batches[-1][0]] == n_blanks[i]
            ):
                batches[-1].append(i)
            else:
                batches.append([i])
        for idx in tqdm(batches, desc="T5 fill", mininterval=10, disable=len(batches) < 5):
            width = max(len(enc[i]) for i in idx)
            input_ids = torch.full((len(idx), width), pad, dtype=torch.long)
            for row, i in enumerate(idx):
                input_ids[row, : len(enc[i])] = torch.tensor(enc[i])
            input_ids = input_ids.to(self.device)
            blanks = n_blanks[idx[0]]
            stop = [self.tokenizer.eos_token_id]
            if blanks < self.n_sentinels:
                stop.append(self._sentinels[blanks])
            with autocast(self.device, self.precision):
                out = self.model.generate(
                    input_ids=input_ids,
                    attention_mask=input_ids.ne(pad).long(),
                    num_beams=num_beams,
                    num_return_sequences=num_return_sequences,
                    do_sample=False,
                    max_new_tokens=blanks * (max_fill_tokens + 1) + 1,
                    eos_token_id=stop,
                    return_dict_in_generate=True,
                    output_scores=True,
                )
            seqs = out.sequences.tolist()
            scores = out.sequences_scores.float().tolist()
            for row, i in enumerate(idx):
                for k in range(num_return_sequences):
                    j = row * num_return_sequences + k
                    results[i].append(Candidate(self._decode(seqs[j]), round(scores[j], 6)))
        return results
