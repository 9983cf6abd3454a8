"""The paper's output-length window (§4.2): 0.75–1.5× the input's tokens, per sentence.

A logits processor shared by both architectures: it blocks the end tokens before the
minimum and forces </s> (eos) at the maximum, and bans special tokens (tags, separator,
padding) so that every generated token is text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from transformers import LogitsProcessor


class LengthWindow(LogitsProcessor):
    """Hold each sentence's output to [min_len[i], max_len[i]] generated tokens.

    Rows of the score matrix are beams: row r belongs to sentence r // num_beams.
    `offset` is how many tokens precede the text (decoder start and forced <s> for BART;
    the left-padded prompt for a decoder-only model). `ends` are further tokens that end
    an output (a decoder-only model's newlines): blocked before the minimum like eos.
    """

    def __init__(
        self,
        min_len: Sequence[int],
        max_len: Sequence[int],
        eos: int,
        num_beams: int,
        offset: int,
        banned: Sequence[int] = (),
        ends: Sequence[int] = (),
    ):
        self.min_len = torch.tensor(list(min_len)).repeat_interleave(num_beams)
        self.max_len = torch.tensor(list(max_len)).repeat_interleave(num_beams)
        self.eos = eos
        self.ends = sorted({eos, *ends})
        self.offset = offset
        self.banned = sorted(set(banned) - set(self.ends))  # never in a paraphrase

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        produced = input_ids.shape[1] - self.offset
        if produced < 0:
            return scores
        scores = scores.clone()
        if self.banned:
            scores[:, self.banned] = -math.inf
        too_short = (produced < self.min_len.to(scores.device)).nonzero().flatten()
        if len(too_short):
            scores[too_short[:, None], torch.tensor(self.ends, device=scores.device)] = -math.inf
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


def special_ids(tokenizer) -> set[int]:
    """Every special token id, the added tags and separator included (transformers 5
    leaves tokens added with `special_tokens=True` out of `all_special_ids`)."""
    added = {i for i, tok in tokenizer.added_tokens_decoder.items() if tok.special}
    return set(tokenizer.all_special_ids) | added
