"""Word segmentation: Moses (sacremoses) for English, MeCab + IPAdic for Japanese.

These tokens are what the length filter counts ("more than 5 and fewer than 50
words", PPDB paper §4.2) and what the PPDB stage matches phrases against. Moses is
run with `escape=False` so tokens keep the source characters (`&`, not `&amp;`).
IPAdic is the dictionary the paper used (PyPI package `ipadic`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _moses() -> Callable[[str], list[str]]:
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang="en")
    return functools.partial(tok.tokenize, escape=False)


@functools.cache
def _mecab() -> Callable[[str], list[str]]:
    import ipadic
    import MeCab

    tagger = MeCab.Tagger(f"{ipadic.MECAB_ARGS} -Owakati")
    return lambda text: tagger.parse(text).split()


def tokenize(text: str, lang: str) -> list[str]:
    """Words of one sentence."""
    if lang == "en":
        return _moses()(text)
    if lang == "ja":
        return _mecab()(text)
    raise ValueError(f"no tokenizer for language {lang!r}")


def describe(lang: str) -> dict:
    """Which tokenizer and dictionary ran, with versions, for the metrics."""
    from importlib.metadata import version

    if lang == "en":
        return {
            "tokenizer": f"sacremoses {version('sacremoses')} MosesTokenizer(lang=en, escape=False)",
            "dictionary": None,
        }
    return {
        "tokenizer": f"MeCab via mecab-python3 {version('mecab-python3')} (-Owakati)",
        "dictionary": f"IPAdic (PyPI ipadic {version('ipadic')})",
    }
