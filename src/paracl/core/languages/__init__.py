"""Language profiles: everything that differs between the corpus languages, one file each.

Why: a stage asks `profile(lang)` for its language's splitter, tokenizer, language-ID
code, BLEU tokenizer, noun-chunk pipeline, evaluation jobs and data files instead of
branching on a language code, so adding a language is a profile file here (found: no list
names it), its entries in params.yaml and a preset (docs/extending.md). A profile is data:
where a part implements something (a sentence splitter, a tokenizer, the STS sets'
readers), the profile names it and the part resolves the name, so core imports no part.

`en` and `ja` are the corpus languages; `de` is a pivot only (a translation prompt's
name and examples, paracl.parts.translate), not a corpus language.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from paracl.core.errors import UserError


@dataclass(frozen=True)
class Pivot:
    """What a few-shot translation prompt needs of a language."""

    code: str  # params.yaml's `lang` and `roundtrip.pivot` values, the corpus `lang` column
    name: str  # "English": the prompt's line labels
    examples: tuple[str, ...]  # the prompt's shots, the same sentences in every language


@dataclass(frozen=True)
class Profile(Pivot):
    """A corpus language: the pipeline's every language-dependent choice."""

    splitter: str  # sentence splitter, a name of paracl.parts.corpus.segment.SPLITTERS
    tokenizer: str  # word tokenizer, a name of paracl.parts.corpus.tokenize.TOKENIZERS
    moses: str | None  # Moses' language code (its splitter, tokenizer, detokenizer)
    langdetect: str  # langdetect's code for the language-ID filter
    spaced: bool  # words are separated by spaces (PPDB matching, splicing, word counts)
    keep_punct: str  # the comma and period characters symbol removal keeps (tags.text)
    bleu_tokenize: str  # sacrebleu tokenizer of the tag stage's BLEU
    noun_chunks: str  # spaCy/GiNZA pipeline whose noun chunks JCSE masks
    sts_scorer_data: Mapping[str, str]  # STS scorer split -> file in its dataset folder
    sts_scorer_note: str | None  # how a scorer in this language differs from the paper's
    sts_dev: str  # training's STS dev set (model selection), under data/raw
    unsup_sts: str  # evaluate's unsupervised STS job of this language
    unsup_sts_sets: str  # its sets, a name of paracl.parts.evaluation.unsup_sts.SETS
    pi: str  # evaluate's cosine paraphrase-identification job of this language
    pi_sets: tuple[str, ...]  # the tasks (paracl.parts.evaluation.tasks) that job averages


PROFILES: dict[str, Profile] = {}
PIVOTS: dict[str, Pivot] = {}


def register(lang: Profile | Pivot) -> None:
    """Add a corpus language (a Profile) or a pivot-only language (a Pivot)."""
    (PROFILES if isinstance(lang, Profile) else PIVOTS)[lang.code] = lang


def codes() -> list[str]:
    """The corpus languages, in registration order (params.yaml's `lang` accepts these)."""
    return list(PROFILES)


def profiles() -> Iterator[Profile]:
    return iter(PROFILES.values())


def profile(lang: str) -> Profile:
    """The profile of `lang`; an unknown one is a one-line error naming the param."""
    if lang not in PROFILES:
        known = ", ".join(PROFILES)
        raise UserError(f"params.yaml: 'lang': unknown language {lang!r} (known: {known})")
    return PROFILES[lang]


def pivot(lang: str) -> Pivot | None:
    """A language a translation prompt can name (a corpus language or a pivot), or None."""
    return PROFILES.get(lang) or PIVOTS.get(lang)


def pivots() -> list[str]:
    return [*PROFILES, *PIVOTS]


# Every module of this package is a language that registers itself: a new language is a
# file here, found rather than listed (the core loads its own modules, never one above it).
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

ENGLISH, JAPANESE = PROFILES["en"], PROFILES["ja"]
DEFAULT = ENGLISH.code  # a function's default language: the PPDB paper's
