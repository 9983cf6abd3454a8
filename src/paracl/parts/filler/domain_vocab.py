"""How much of the negatives' new text is the target domain's vocabulary.

JCSE adapts its filler so that fills use domain terms (§3.2: a general-domain T5 "has no
ability ... to generate proper domain-specific terms"). This measures it: the in-domain
vocabulary is the words of the target corpus that are rare in the reference corpus
(Wikipedia): seen at least MIN_COUNT times in the target corpus and at least MIN_RATIO
times as frequent there, per token, as in the reference (the reference count smoothed
by one, so a word Wikipedia never has still needs MIN_RATIO / N_ref of the target's
tokens). Words are the corpus' own tokens (Moses / MeCab, paracl.parts.corpus.tokenize); a
word must hold a letter (digits and punctuation are nobody's vocabulary).

Of the negatives, the metric reports the share whose fills use at least one in-domain
word, and the share of fill words that are in-domain, beside the same two shares for the
noun chunks the fills replaced (what the anchors themselves say: the ceiling a filler
that writes like the domain approaches). The corrupt stage computes it; the unadapted
and adapted fillers' runs on the same anchors give "before" and "after".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from paracl.core import schemas
from paracl.core.io import iter_batches
from paracl.parts.corpus.tokenize import tokenize

MIN_COUNT = 3
MIN_RATIO = 10.0


def is_word(token: str) -> bool:
    return any(c.isalpha() for c in token)


def word_counts(corpus: str | Path, lang: str) -> Counter:
    """Token counts of the corpus' sentences of `lang` (its `tokens` column), streamed."""
    counts: Counter = Counter()
    for batch in iter_batches(corpus, 10_000, schemas.CORPUS, ["tokens", "lang"]):
        for tokens in batch.loc[batch["lang"] == lang, "tokens"]:
            counts.update(t for t in tokens if is_word(t))
    return counts


def domain_words(target: Counter, reference: Counter) -> frozenset[str]:
    """Words of `target` rare in `reference` (module docstring)."""
    n_target, n_ref = sum(target.values()), sum(reference.values())
    if not n_target or not n_ref:
        return frozenset()
    return frozenset(
        w
        for w, c in target.items()
        if c >= MIN_COUNT and c / n_target >= MIN_RATIO * (reference[w] + 1) / n_ref
    )


def _words(texts: Iterable[str], lang: str) -> list[list[str]]:
    return [[t for t in tokenize(text, lang) if is_word(t)] if text else [] for text in texts]


def _shares(per_row: Sequence[list[list[str]]], vocab: frozenset[str]) -> dict:
    """Share of rows with an in-domain word, and of all words that are in-domain."""
    rows = [[w for part in row for w in part] for row in per_row]
    words = [w for row in rows for w in row]
    return {
        "share_with_domain_word": round(
            sum(any(w in vocab for w in r) for r in rows) / len(rows), 4
        ),
        "share_of_words": round(sum(w in vocab for w in words) / len(words), 4) if words else None,
    }


def vocabulary_use(negatives: pd.DataFrame, vocab: frozenset[str], lang: str) -> dict:
    """The in-domain shares of the negatives' fills and of the chunks they replaced (only
    the chunks a fill replaced: a causal LM keeps some chunks of each anchor)."""
    if negatives.empty:
        return {"negatives": 0, "fills": None, "replaced_chunks": None}
    fills, chunks = [], []
    for row_fills, row_chunks in zip(negatives["fills"], negatives["chunks"], strict=True):
        pairs = [(f, c) for f, c in zip(row_fills, row_chunks, strict=True) if f]
        fills.append(_words([f for f, _ in pairs], lang))
        chunks.append(_words([c for _, c in pairs], lang))
    return {
        "negatives": len(negatives),
        "fills": _shares(fills, vocab),
        "replaced_chunks": _shares(chunks, vocab),
    }


def domain_vocabulary_metrics(
    negatives: pd.DataFrame, target: str | Path, reference: str | Path, lang: str
) -> dict:
    """The corrupt stage's `domain_vocabulary` metrics (null where the target corpus is
    the reference itself: nothing is rare in itself)."""
    if Path(target).resolve() == Path(reference).resolve():
        return {"vocabulary": None, "note": "the target corpus is the reference corpus"}
    counts = word_counts(target, lang)
    vocab = domain_words(counts, word_counts(reference, lang))
    return {
        "vocabulary": len(vocab),
        "min_count": MIN_COUNT,
        "min_ratio": MIN_RATIO,
        "reference": str(reference),
        "most_frequent": sorted(vocab, key=lambda w: (-counts[w], w))[:10],
        **vocabulary_use(negatives, vocab, lang),
    }
