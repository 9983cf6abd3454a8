"""Noun chunks on known sentences, with the real packaged spaCy / GiNZA pipelines.

Each pipeline loads in a few seconds; they are loaded once per test session.
"""

import pytest

from paracl.parts.filler.chunks import load_pipeline, noun_chunk_spans
from paracl.parts.filler.pipeline import mask_texts


@pytest.fixture(scope="module")
def nlp_ja():
    return load_pipeline("ja")


def _chunks(nlp, texts):
    spans = noun_chunk_spans(texts, nlp)
    return [[t[s:e] for s, e in sp] for t, sp in zip(texts, spans, strict=True)]


def test_english_noun_chunks(nlp_en):
    texts = [
        "The quick brown fox jumps over the lazy dog.",
        "My sister bought a new car in March.",
        "Go!",
    ]
    got = _chunks(nlp_en, texts)
    assert got[0] == ["The quick brown fox", "the lazy dog"]
    assert "a new car" in got[1] and "My sister" in got[1]
    assert got[2] == []


def test_japanese_noun_chunks(nlp_ja):
    texts = ["猫はマットの上に座っていた。", "東京は日本の首都である。"]
    got = _chunks(nlp_ja, texts)
    assert "猫" in got[0] and "マット" in got[0]
    assert "東京" in got[1] and "首都" in got[1]


def test_sentences_without_chunks_are_counted_and_skipped(nlp_en):
    masked, counts = mask_texts(["Go!", "The cat sat on the mat."], nlp_en, max_blanks=20)
    assert masked[0] is None and counts["skipped_no_chunk"] == 1
    assert masked[1].masked == "<extra_id_0> sat on <extra_id_1>."
    assert counts["chunks_masked"] == 2


def test_more_chunks_than_sentinels_is_skipped(nlp_en):
    masked, counts = mask_texts(["The cat sat on the mat with a hat."], nlp_en, max_blanks=2)
    assert masked == [None] and counts["skipped_too_many_chunks"] == 1
