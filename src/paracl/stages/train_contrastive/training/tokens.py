"""Tokenize each training text once, not at every step: the trainer's token cache.

A step embeds its batch's texts (paracl.parts.encoder.forward.embed: sentence-transformers'
`preprocess`, then the model). Unsupervised SimCSE's anchor and positive are one text,
every epoch sees every text again, and on a small model the tokenizer and
sentence-transformers' input checks are a tenth of the step (bench/bench_training.py). So
`TokenCache.warm` tokenizes every text of the training set once, ahead of the first epoch,
with the very `preprocess` call a step makes (prompt, truncation, chat template alike);
each row's tokens are kept without their padding, its per-token keys (input_ids,
attention_mask, ...) stacked in one small int32 tensor a text. A step then pads its rows to the batch's
longest, as `preprocess` pads them: same tensors, so the same losses bit for bit.

That last claim is checked, not assumed: until a batch that needs padding has been
collated exactly as `preprocess` gives it (same keys, same values), every batch is
compared; a difference (a processor that flattens rows for varlen attention, a key that
is not per-token) turns the cache off for the run, and the steps tokenize as before.
On CUDA the padded batch is pinned and copied without blocking the host.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import torch
from sentence_transformers import SentenceTransformer

from paracl.core.token_rows import pad_rows, split_rows, to_device
from paracl.parts.encoder.forward import default_prompt

log = logging.getLogger(__name__)

CHUNK = 256  # texts per warm-up `preprocess` call


class TokenCache:
    """text -> its unpadded per-token values (one row per key of `keys`), filled by `warm`
    and on a miss; `features(texts)` is `model.preprocess(texts)` from the cache."""

    def __init__(self, model: SentenceTransformer):
        self.model = model
        self.rows: dict[str, torch.Tensor] = {}  # (len(keys), tokens) int32 per text
        self.keys: dict[str, torch.dtype] = {}  # per-token feature -> its dtype
        self.constant: dict = {}  # non-per-token entries of the features (e.g. modality)
        self.enabled = True
        self.checked = False  # a padded batch has matched preprocess exactly

    def _preprocess(self, texts: list[str]) -> dict:
        return self.model.preprocess(texts, prompt=default_prompt(self.model))

    def warm(self, texts: Iterable[str]) -> None:
        """Tokenize the texts not seen yet, CHUNK at a time (in length order: less padding)."""
        new = sorted({t for t in texts if t not in self.rows}, key=len)
        for i in range(0, len(new), CHUNK):
            if not self.enabled:
                return
            self._keep(new[i : i + CHUNK], self._preprocess(new[i : i + CHUNK]))

    def _keep(self, texts: list[str], feats: dict) -> None:
        """Store each row of `feats` without its padding; off when a key is not per-token."""
        mask = feats.get("attention_mask")
        if not isinstance(mask, torch.Tensor) or mask.dim() != 2 or len(mask) != len(texts):
            self._disable("no per-row attention mask")
            return
        width, left = mask.shape[1], self._left()
        for key, value in feats.items():
            if not isinstance(value, torch.Tensor):
                if self.constant.setdefault(key, value) != value:
                    self._disable(f"{key!r} differs between batches")
                    return
            elif (
                value.dim() != 2 or value.shape != (len(texts), width) or value.is_floating_point()
            ):
                self._disable(f"{key!r} is not one integer per token")
                return
            elif self.keys.setdefault(key, value.dtype) != value.dtype:
                self._disable(f"{key!r} changed its dtype")
                return
        if set(self.keys) != {k for k, v in feats.items() if isinstance(v, torch.Tensor)}:
            self._disable("the per-token keys differ between batches")
            return
        for text, row in zip(texts, split_rows(feats, list(self.keys), left), strict=True):
            self.rows[text] = row

    def _left(self) -> bool:
        return getattr(self.model.tokenizer, "padding_side", "right") == "left"

    def _disable(self, why: str) -> None:
        if self.enabled:
            log.info("token cache off (steps tokenize their batch): %s", why)
        self.enabled = False

    def features(self, texts: list[str]) -> dict:
        """The batch's model inputs, exactly as `model.preprocess(texts)` makes them."""
        if not self.enabled:
            return self._preprocess(texts)
        self.warm(texts)
        if not self.enabled:
            return self._preprocess(texts)
        feats = self._collate(texts)
        if not self.checked:
            self._check(texts, feats)
            if not self.enabled:
                return self._preprocess(texts)
        return feats

    def _collate(self, texts: list[str]) -> dict:
        """Pad the cached rows to the longest, with the tokenizer's pad values and side."""
        rows = [self.rows[t] for t in texts]
        return dict(self.constant) | pad_rows(rows, self.keys, self.model.tokenizer)

    def _check(self, texts: list[str], feats: dict) -> None:
        """Compare with preprocess until a batch that needed padding has matched."""
        ref = self._preprocess(texts)
        same = ref.keys() == feats.keys() and all(
            torch.equal(v, feats[k]) if isinstance(v, torch.Tensor) else v == feats[k]
            for k, v in ref.items()
        )
        if not same:
            self._disable("a batch collated from it differs from preprocess")
        elif len({self.rows[t].shape[1] for t in texts}) > 1:
            self.checked = True


def embed_cached(tokens: TokenCache, texts: list[str]) -> torch.Tensor:
    """Sentence embeddings with autograd, as paracl.parts.encoder.forward.embed gives them,
    from the token cache."""
    feats = to_device(tokens.features(texts), tokens.model.device)
    return tokens.model(feats)["sentence_embedding"]
