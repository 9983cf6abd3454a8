"""JCSE's negatives as its authors' code makes them: one chunk at a time, on the sentence
as edited so far, the requested beam rank kept (fake steps, the tiny T5, a tiny GPT-2)."""

from collections import Counter
from dataclasses import asdict

import pandas as pd
import pytest
import torch
from conftest import part_config

from paracl.core.params import ParamsError
from paracl.parts.filler.causal import CausalFiller
from paracl.parts.filler.generate import Candidate, T5Filler
from paracl.parts.filler.masking import Masked, parse_fills
from paracl.parts.filler.pipeline import CorruptConfig, corrupt
from paracl.parts.filler.sequential import BLANK, run_chains

CPU = torch.device("cpu")
ANCHORS = pd.DataFrame(
    {
        "id": ["a-0", "a-1", "a-2"],
        "text": [
            "The cat sat on the mat in the afternoon sun.",
            "Go!",
            "Two dogs are running through the green field.",
        ],
    }
)


def _fake_step(calls: list):
    """Candidates `<chunk>-1`, `<chunk>-2`, … best first; records each call's inputs."""

    def step(masked: list[Masked]):
        calls.append([m.masked for m in masked])
        return [[(f"{m.chunks[0]}-{r}", -float(r)) for r in range(1, 4)] for m in masked]

    return step


def test_chains_edit_one_chunk_per_step_in_order_on_the_edited_sentence():
    calls: list = []
    counts: Counter = Counter()
    texts = ["the cat sat on the mat", "a dog"]
    chains = run_chains(texts, [["cat", "mat"], ["dog"]], _fake_step(calls), [2], counts)
    assert calls == [  # step 1: the first chunk of both; step 2: the edited sentence only
        [f"the {BLANK} sat on the mat", f"a {BLANK}"],
        [f"the cat-2 sat on the {BLANK}"],
    ]
    assert [c.text for c in chains] == ["the cat-2 sat on the mat-2", "a dog-2"]
    assert chains[0].fills == ["cat-2", "mat-2"] and chains[0].replaced == [0, 1]
    assert counts["chunks_masked"] == 3 and counts["chunks_not_found"] == 0


def test_chains_keep_their_rank_and_share_the_first_input():
    calls: list = []
    chains = run_chains(["a cat"], [["cat"]], _fake_step(calls), [1, 3], Counter())
    assert [c.text for c in chains] == ["a cat-1", "a cat-3"]
    assert calls == [[f"a {BLANK}"]]  # both chains' identical first input filled once


def test_a_chunk_no_longer_in_the_edited_sentence_is_skipped():
    counts: Counter = Counter()
    # the fill of "cat" removes the text of the second chunk, "cat sat"
    chains = run_chains(["the cat sat"], [["cat", "cat sat"]], _fake_step([]), [2], counts)
    assert chains[0].text == "the cat-2 sat" and chains[0].replaced == [0]
    assert counts["chunks_not_found"] == 1


def test_too_few_candidates_for_the_rank_keeps_the_chunk():
    counts: Counter = Counter()
    chains = run_chains(["a cat"], [["cat"]], _fake_step([]), [4], counts)
    assert chains[0].text == "a cat" and counts["steps_short_of_rank"] == 1


def test_fill_one_respects_the_decoder_length_and_returns_beams_best_first(tiny_t5):
    filler = T5Filler(tiny_t5, CPU)
    masked = [f"The {BLANK} sat on the mat.", f"Two {BLANK} are running."]
    for max_length in (3, 6):
        out = filler.fill_one(masked, num_beams=4, num_return_sequences=3, max_length=max_length)
        assert [len(c) for c in out] == [3, 3]
        for cands in out:
            assert all(c.n_tokens <= max_length for c in cands)
            assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)
    assert any(c.n_tokens == 6 for cands in out for c in cands)  # the budget is reached


def _seq(**kw) -> CorruptConfig:
    base = {"mask_mode": "sequential", "num_beams": 4, "num_return_sequences": 2}
    return part_config(CorruptConfig, **{**base, "batch_size": 2, "fill_max_length": 6, **kw})


def test_sequential_t5_keeps_the_requested_beam_and_is_deterministic(tiny_t5, nlp_en):
    filler = T5Filler(tiny_t5, CPU)
    cfg = _seq(keep_rank=3)
    one = ANCHORS.iloc[[0]]
    chunk = one["text"].iloc[0][:7]  # "The cat": spaCy's first noun chunk
    first = f"{BLANK} sat on the mat in the afternoon sun."
    beams = filler.fill_one([first], num_beams=4, num_return_sequences=4, max_length=6)[0]
    rows, stats = corrupt(one, nlp_en, filler, _seq(keep_rank=3, num_return_sequences=1))
    assert stats["sentences_masked"] == 1
    assert rows["rank"].tolist() == [2] and rows["chunks"].iloc[0][0] == chunk
    assert rows["fills"].iloc[0][0] == (parse_fills(beams[2].target, 1).fills[0] or "")
    rows, stats = corrupt(ANCHORS, nlp_en, filler, cfg)
    again, stats2 = corrupt(ANCHORS, nlp_en, filler, cfg)
    pd.testing.assert_frame_equal(rows, again)
    assert stats == stats2 and stats["skipped_no_chunk"] == 1
    assert set(rows["rank"]) <= {2, 3}  # ranks 3 and 4, 0-based
    for masked, chunks, fills in zip(rows["masked"], rows["chunks"], rows["fills"], strict=True):
        assert masked.count("<extra_id_") == len(chunks) == len(fills)


class _FakeT5:
    """fill_one's interface: beam r of an input is `<extra_id_0> b<r><extra_id_1>`."""

    def __init__(self):
        self.calls = []

    def fill_one(self, masked, num_beams, num_return_sequences, batch_size, max_length):
        self.calls.append((list(masked), num_beams, num_return_sequences, max_length))
        return [
            [Candidate(f"{BLANK} b{r}<extra_id_1>", -r) for r in range(num_return_sequences)]
            for _ in masked
        ]


def test_sequential_t5_asks_for_the_params_beams_and_splices_the_kept_rank(nlp_en):
    fake = _FakeT5()
    cfg = _seq(num_beams=7, keep_rank=2, num_return_sequences=2, fill_max_length=9)
    rows, _ = corrupt(ANCHORS.iloc[[2]], nlp_en, fake, cfg)  # chunks: Two dogs, the green field
    assert rows["negative"].tolist() == ["b1 are running through b1.", "b2 are running through b2."]
    assert rows["rank"].tolist() == [1, 2] and rows["fills"].iloc[0] == ["b1", "b1"]
    assert [c[1:] for c in fake.calls] == [(7, 3, 9)] * 2  # beams, ranks 1..3, max length
    assert fake.calls[1][0] == [
        f"b1 are running through {BLANK}.",
        f"b2 are running through {BLANK}.",
    ]


def test_sequential_causal_lm_is_deterministic(tiny_gpt2, nlp_en):
    cfg = _seq(num_samples=3, num_return_sequences=1, keep_rank=1, quantize=False)
    filler = CausalFiller(tiny_gpt2, CPU, cfg.sampling(), seed=1)
    rows, stats = corrupt(ANCHORS, nlp_en, filler, cfg)
    again, _ = corrupt(ANCHORS, nlp_en, CausalFiller(tiny_gpt2, CPU, cfg.sampling(), 1), cfg)
    pd.testing.assert_frame_equal(rows, again)
    assert stats["candidates"] > 0 and stats["negatives"] == len(rows)
    assert (rows["negative"] != rows["text"]).all()


@pytest.mark.parametrize(
    ("bad", "name"),
    [
        ({"mask_mode": "both"}, "corrupt.mask_mode"),
        ({"keep_rank": 0}, "corrupt.keep_rank"),
        ({"keep_rank": 4}, "corrupt.keep_rank"),  # ranks 4..5 > 4 beams
        ({"fill_max_length": 1}, "corrupt.fill_max_length"),
    ],
)
def test_a_bad_param_is_a_one_line_error_naming_it(bad, name):
    cfg = asdict(_seq())
    with pytest.raises(ParamsError, match=name) as err:
        CorruptConfig.from_params({**cfg, **bad})
    assert "\n" not in str(err.value)


def test_the_metrics_name_mode_beams_ranks_and_departures():
    authors = _seq(num_beams=200, keep_rank=2, fill_max_length=15).summary(causal=False)
    assert authors["mask_mode"] == "sequential" and authors["beam_width"] == 200
    assert authors["kept_ranks"] == [2, 3] and authors["deviations"] == []
    small = _seq().summary(causal=False)["deviations"]
    assert "num_beams 4, the authors' 200" in small
    assert "fill_max_length 6, the authors' 15" in small
    at_once = part_config(CorruptConfig).summary(causal=True)
    assert at_once["mask_mode"] == "all_at_once" and at_once["kept_ranks"] is None
    assert len(at_once["deviations"]) == 2  # all chunks at once; sampled, not beams
