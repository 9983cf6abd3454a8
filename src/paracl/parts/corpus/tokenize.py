"""Word segmentation: Moses (sacremoses) for English, MeCab + IPAdic for Japanese.

These tokens are what the length filter counts ("more than 5 and fewer than 50
words", PPDB paper §4.2) and what the PPDB stage matches phrases against. Moses is
run with `escape=False` so tokens keep the source characters (`&`, not `&amp;`).
IPAdic is the dictionary the paper used (PyPI package `ipadic`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from paracl.core.languages import profile


@functools.cache
def _moses(lang: str) -> Callable[[str], list[str]]:
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang=lang)
    return functools.partial(tok.tokenize, escape=False)


@functools.cache
def _mecab() -> Callable[[str], list[str]]:
    import ipadic
    import MeCab

    tagger = MeCab.Tagger(f"{ipadic.MECAB_ARGS} -Owakati")
    return lambda text: tagger.parse(text).split()


def _describe_moses(lang: str) -> dict:
    from importlib.metadata import version

    moses = profile(lang).moses
    return {
        "tokenizer": f"sacremoses {version('sacremoses')} MosesTokenizer(lang={moses}, escape=False)",
        "dictionary": None,
    }


def _describe_mecab(lang: str) -> dict:
    from importlib.metadata import version

    return {
        "tokenizer": f"MeCab via mecab-python3 {version('mecab-python3')} (-Owakati)",
        "dictionary": f"IPAdic (PyPI ipadic {version('ipadic')})",
    }


# A profile's `tokenizer` names one of these: (the tokenizer of a language, describe).
TOKENIZERS = {
    "moses": (lambda lang: _moses(profile(lang).moses), _describe_moses),
    "mecab": (lambda lang: _mecab(), _describe_mecab),
}


def tokenize(text: str, lang: str) -> list[str]:
    """Words of one sentence."""
    return TOKENIZERS[profile(lang).tokenizer][0](lang)(text)


def describe(lang: str) -> dict:
    """Which tokenizer and dictionary ran, with versions, for the metrics."""
    return TOKENIZERS[profile(lang).tokenizer][1](lang)
