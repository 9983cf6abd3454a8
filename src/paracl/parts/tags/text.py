"""The text rules both the tagger and the heatmaps apply to a sentence.

Paper §3.1: before measuring similarity, symbols other than letters, digits, whitespace,
commas and periods are removed from both sentences, so that punctuation and quoting
variants do not count as paraphrasing. Paper footnotes 2 and 12: the heatmaps count only
pairs with at least 4 words after that removal, because BLEU of shorter pairs is mostly 0.
One module for both, so tagging and heatmap need not import each other.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import numpy as np

from paracl.core.languages import DEFAULT, profile

_SPACES = re.compile(r"\s+")


def strip_symbols(text: str, lang: str = DEFAULT) -> str:
    """Remove every character that is not a letter, digit, whitespace, comma or period
    (the language's: its profile's `keep_punct`)."""
    keep = profile(lang).keep_punct
    chars = [
        c for c in text if c.isspace() or c in keep or unicodedata.category(c)[0] in ("L", "N", "M")
    ]
    return _SPACES.sub(" ", "".join(chars)).strip()


def word_count(text: str, lang: str) -> int:
    """Words after symbol removal; without spaces (Japanese), characters / 2 stand in."""
    stripped = strip_symbols(text, lang)
    if not profile(lang).spaced:
        return len(stripped.replace(" ", "")) // 2
    return len(stripped.split())


def long_enough(
    texts: Iterable[str], paraphrases: Iterable[str], lang: str, min_words: int
) -> np.ndarray:
    """Mask of pairs whose both sides have >= min_words words after symbol removal."""
    return np.array(
        [
            word_count(a, lang) >= min_words and word_count(b, lang) >= min_words
            for a, b in zip(texts, paraphrases, strict=True)
        ],
        dtype=bool,
    )
