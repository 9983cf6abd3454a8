"""What counts as a usable fill, and the quality measures of a set of negatives.

Why: a hard negative must read as a sentence with other noun phrases, not as the anchor
again or as byte soup. A fill is *garbled* when it has no letter or digit, holds a
replacement character, a control character or sentence punctuation (a noun chunk never
ends a clause), or is in another script than the chunk it replaces (a Japanese chunk
filled with Latin text, or the reverse). A fill *is the original* when it equals the
chunk up to case and whitespace. The same rules filter the causal LM's candidates and
measure any filler's output (the T5 path included), so the numbers compare.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from paracl.parts.filler.masking import SENTINEL_RE

# characters a noun-chunk fill never contains (clause and sentence punctuation, brackets)
BANNED_CHARS = frozenset(
    '.,!?;:"()[]{}<>|/\\*=_`~^@#。、，．！？；：「」『』（）【】〈〉《》…\ufffd'
)
_JA = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")


def _script(text: str) -> str:
    if _JA.search(text):
        return "kana_kanji"
    return "latin" if _LATIN.search(text) else "other"


def bad_char(ch: str) -> bool:
    """A character no fill may hold (also used to ban tokens while sampling)."""
    return ch in BANNED_CHARS or (unicodedata.category(ch).startswith("C") and ch != " ")


def is_garbled(fill: str | None, chunk: str) -> bool:
    """True when `fill` is not a real word sequence that can stand for `chunk`."""
    text = (fill or "").strip()
    if not text or not any(ch.isalnum() for ch in text) or any(bad_char(ch) for ch in text):
        return True
    want, got = _script(chunk), _script(text)
    return (want == "kana_kanji") != (got == "kana_kanji")


# words a noun chunk does not end with (English) and Japanese particles: a fill ending
# so is a cut-off phrase ("at the", "the city of", "猫は"), not a noun chunk
FUNCTION_WORDS = frozenset(
    "a an the of at in on to for by with from as into about and or but nor than that which"
    " who whom whose what this these those my your his her its our their is are was were be"
    " been am has have had do does did will would can could i if".split()
)
PARTICLES = frozenset("はがをにでとものへやかねよ")


def is_dangling(fill: str | None) -> bool:
    """True when the fill ends with a function word or a particle (a cut-off phrase)."""
    words = (fill or "").split()
    return bool(words) and (words[-1].casefold() in FUNCTION_WORDS or words[-1][-1] in PARTICLES)


def _norm(text: str) -> str:
    return "".join(text.casefold().split())


def is_original(fill: str | None, chunk: str) -> bool:
    """The fill equals the chunk it replaces, ignoring case and whitespace."""
    return fill is not None and _norm(fill) == _norm(chunk)


def outside_changed(masked: str, negative: str) -> bool:
    """True when `negative` does not keep the masked sentence's text outside the blanks."""
    parts = SENTINEL_RE.split(masked)[::2]
    pattern = "(.*?)".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern, negative, flags=re.DOTALL) is None


def quality_counts(
    texts: Sequence[str],
    negatives: Sequence[str],
    masked: Sequence[str],
    chunks: Sequence[Sequence[str]],
    fills: Sequence[Sequence[str]],
) -> dict[str, int]:
    """Counts over written negatives: identical to the anchor, text outside the blanks
    changed, a garbled fill (a kept original chunk, `""`, is not a fill)."""
    identical = changed = garbled = 0
    for text, neg, mask, chs, fls in zip(texts, negatives, masked, chunks, fills, strict=True):
        identical += neg.strip() == text.strip()
        changed += outside_changed(mask, neg)
        garbled += any(f and is_garbled(f, c) for f, c in zip(fls, chs, strict=True))
    return {"q_identical": identical, "q_outside_changed": changed, "q_garbled": garbled}
