"""Sentence splitting, as the PPDB paper's pre-processing did it (§4.2).

- English: Moses' split-sentences.perl rules (non-breaking prefixes such as "Mr." or
  "No." before a number; "?!" and "." followed by an upper-case sentence starter),
  through the `sentence-splitter` package, a line-by-line port of that script with
  Moses' own prefix lists. Each line of a paragraph is split on its own.
- Japanese: ja_sentence_segmenter (the tool the paper names), with the pipeline its
  README gives: split at newlines, join a line ending in "の" to the next (a line
  wrapped mid-phrase), then split after 。！？!? except inside 「…」 and (…). Its
  neologd normaliser is not applied: the `text` column keeps the source's characters,
  so full-width ！？ are listed as punctuation instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from paracl.core.languages import profile

PUNCTUATION_JA = "。！？!?"
MAX_CONCATENATE = 10_000  # bound the "の" joining (quadratic on adversarial text)


@functools.cache
def _moses(lang: str) -> Callable[[str], list[str]]:
    from sentence_splitter import SentenceSplitter

    return SentenceSplitter(language=lang).split


@functools.cache
def _japanese() -> Callable[[str], object]:
    from ja_sentence_segmenter.common.pipeline import make_pipeline
    from ja_sentence_segmenter.concatenate.simple_concatenator import concatenate_matching
    from ja_sentence_segmenter.split.simple_splitter import split_newline, split_punctuation

    join_tail_no = functools.partial(
        concatenate_matching,
        former_matching_rule=r"^(?P<result>.+)(の)$",
        remove_former_matched=False,
        max_concatenate_length=MAX_CONCATENATE,
    )
    split_punc = functools.partial(split_punctuation, punctuations=PUNCTUATION_JA)
    return make_pipeline(split_newline, join_tail_no, split_punc)


def _split_moses(text: str, lang: str) -> list[str]:
    """Each line of a paragraph on its own, with Moses' rules for the language."""
    split = _moses(profile(lang).moses)
    return [s for line in text.splitlines() if line.strip() for s in split(line.strip())]


def _split_ja(text: str, lang: str) -> list[str]:
    # ja_sentence_segmenter reserves U+222F as its escape sentinel.
    return list(_japanese()(text.replace("\u222f", "")))


def _describe_moses(lang: str) -> str:
    from importlib.metadata import version

    moses = profile(lang).moses
    return f"sentence-splitter {version('sentence-splitter')} (Moses split-sentences.perl, {moses})"


def _describe_ja(lang: str) -> str:
    from importlib.metadata import version

    return (
        f"ja_sentence_segmenter {version('ja-sentence-segmenter')} "
        f"(newline, join tail 'の', punctuation {PUNCTUATION_JA})"
    )


# A profile's `splitter` names one of these: (split, describe).
SPLITTERS = {
    "moses": (_split_moses, _describe_moses),
    "ja_sentence_segmenter": (_split_ja, _describe_ja),
}


def split_sentences(text: str, lang: str) -> list[str]:
    """The sentences of one paragraph, stripped, empty ones dropped."""
    out = SPLITTERS[profile(lang).splitter][0](text, lang)
    return [s.strip() for s in out if s.strip()]


def describe(lang: str) -> str:
    """Which splitter ran, with its version, for the metrics."""
    return SPLITTERS[profile(lang).splitter][1](lang)
