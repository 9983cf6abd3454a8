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
from paracl.parts.filler.generate import Candidate, T5Filler, script_cut
from paracl.parts.filler.masking import SENTINEL_RE, Masked
from paracl.parts.filler.pipeline import CorruptConfig, corrupt
from paracl.parts.filler.script_chunks import (
    Noun,
    Token,
    doc_targets,
    merge_adjacent,
    qabot_targets,
    step_max_length,
)
from paracl.parts.filler.sequential import BLANK, blank_first, run_chains

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


def test_too_few_candidates_for_the_rank_splices_the_lowest_when_asked():
    counts: Counter = Counter()
    chains = run_chains(["a cat"], [["cat"]], _fake_step([]), [4], counts, lowest=True)
    assert chains[0].text == "a cat-3" and counts["steps_short_of_rank"] == 1
    none = run_chains(["a cat"], [["cat"]], lambda ms: [[] for _ in ms], [2], counts, True)
    assert none[0].text == "a cat"  # nothing usable: the chunk stays


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
    assert rows["fills"].iloc[0][0] == beams[2].span
    rows, stats = corrupt(ANCHORS, nlp_en, filler, cfg)
    again, stats2 = corrupt(ANCHORS, nlp_en, filler, cfg)
    pd.testing.assert_frame_equal(rows, again)
    assert stats == stats2 and stats["skipped_no_chunk"] == 1
    assert set(rows["rank"]) <= {2, 3}  # ranks 3 and 4, 0-based
    for masked, chunks, fills in zip(rows["masked"], rows["chunks"], rows["fills"], strict=True):
        assert masked.count("<extra_id_") == len(chunks) == len(fills)


class _FakeT5:
    """fill_one's interface: beam r of an input is `<extra_id_0> b<r><extra_id_1>`, kept
    by the script as `b<r>`."""

    def __init__(self):
        self.calls = []

    def fill_one(self, masked, num_beams, num_return_sequences, batch_size, max_length):
        self.calls.append((list(masked), num_beams, num_return_sequences, list(max_length)))
        return [
            [
                Candidate(f"{BLANK} b{r}<extra_id_1>", -r, span=f"b{r}")
                for r in range(num_return_sequences)
            ]
            for _ in masked
        ]


def test_sequential_t5_asks_for_the_params_beams_and_splices_the_kept_rank(nlp_en):
    fake = _FakeT5()
    cfg = _seq(num_beams=7, keep_rank=2, num_return_sequences=2, fill_max_length=9)
    rows, _ = corrupt(ANCHORS.iloc[[2]], nlp_en, fake, cfg)  # chunks: Two dogs, the green field
    assert rows["negative"].tolist() == ["b1 are running through b1.", "b2 are running through b2."]
    assert rows["rank"].tolist() == [1, 2] and rows["fills"].iloc[0] == ["b1", "b1"]
    assert [c[1:] for c in fake.calls] == [(7, 3, [9]), (7, 3, [9, 9])]  # beams, ranks 1..3,
    # a max length per input (step 2: two chains' inputs)
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
        ({"keep_rank": None, "variant": "qabot"}, "corrupt.keep_rank"),  # rank 8 > 4 beams
        ({"keep_rank": True}, "corrupt.keep_rank"),
        ({"short_of_rank": "best"}, "corrupt.short_of_rank"),
        ({"fill_max_length": 1}, "corrupt.fill_max_length"),
    ],
)
def test_a_bad_param_is_a_one_line_error_naming_it(bad, name):
    cfg = asdict(_seq())
    with pytest.raises(ParamsError, match=name) as err:
        CorruptConfig.from_params({**cfg, **bad})
    assert "\n" not in str(err.value)


def test_the_metrics_name_mode_beams_ranks_and_departures():
    authors = _seq(num_beams=200, keep_rank=None, num_return_sequences=1, fill_max_length=15)
    summary = authors.summary(causal=False)
    assert summary["mask_mode"] == "sequential" and summary["beam_width"] == 200
    assert summary["kept_ranks"] == [2] and summary["script"] == "gen_forsup_contra.py"
    assert len(summary["deviations"]) == 1 and "identical" in summary["deviations"][0]
    small = _seq(keep_rank=3).summary(causal=False)["deviations"]
    assert "num_beams 4, the authors' 200" in small
    assert "fill_max_length 6, the authors' 15" in small
    assert "keep_rank 3, the authors' 2" in small
    assert any(d.startswith("2 negatives per anchor") for d in small)
    qabot = _seq(num_beams=200, keep_rank=None, num_return_sequences=1, variant="qabot")
    assert qabot.summary(causal=False)["kept_ranks"] == [8]
    at_once = part_config(CorruptConfig, mask_mode="all_at_once").summary(causal=True)
    assert at_once["mask_mode"] == "all_at_once" and at_once["kept_ranks"] is None
    assert "not one chunk at a time" in at_once["deviations"][0]
    assert any(d.startswith("a causal LM samples") for d in at_once["deviations"])


# -- the fill as the authors' `_filter` keeps it --


@pytest.mark.parametrize(
    ("decoded", "kept"),
    [
        ("猫が", "猫が"),  # sentinels skipped by the decode: nothing to cut
        ("猫が<extra_id_1>犬", "猫が"),  # a sentinel left in the text: cut there
        (" the cat <extra_id_1> sat<extra_id_2>", " the cat "),  # unstripped
        ("", ""),
    ],
)
def test_the_script_cut_on_hand_written_decoded_text(decoded, kept):
    assert script_cut(decoded) == kept


def test_the_script_span_keeps_every_token_after_the_first_two_special_ones_skipped(tiny_t5):
    filler = T5Filler(tiny_t5, CPU)
    tok = filler.tokenizer
    a, b = (tok("the cat", add_special_tokens=False)["input_ids"],
            tok("sat", add_special_tokens=False)["input_ids"])  # fmt: skip
    x0, x1, x2 = (tok.convert_tokens_to_ids(f"<extra_id_{i}>") for i in range(3))
    start, eos = tok.pad_token_id, tok.eos_token_id
    both = tok.decode(a + b, skip_special_tokens=True, clean_up_tokenization_spaces=False)
    # the text after <extra_id_1> stays, sentinels, eos and padding go
    assert filler.script_span([start, x0, *a, x1, *b, x2, eos, start]) == both
    assert filler.script_span([start, x0, *a, eos]) == tok.decode(a, skip_special_tokens=True)
    # the second token is dropped whatever it is, as the script's output[2:]
    assert filler.script_span([start, *a, eos]) == tok.decode(a[1:], skip_special_tokens=True)
    assert filler.script_span([start, x0, eos, start]) == ""


def test_fill_one_candidates_carry_the_script_span_and_a_budget_each(tiny_t5):
    filler = T5Filler(tiny_t5, CPU)
    masked = [f"The {BLANK} sat on the mat.", f"Two {BLANK} are running."]
    out = filler.fill_one(masked, num_beams=3, num_return_sequences=2, max_length=[3, 7])
    assert all(c.n_tokens <= 3 for c in out[0]) and all(c.n_tokens <= 7 for c in out[1])
    for cands in out:
        assert all(c.span is not None and "<extra_id_" not in c.span for c in cands)


# -- K, one chunk at a time --


def test_k_1_is_one_negative_per_anchor_the_scripts_2nd_beam(nlp_en):
    fake = _FakeT5()
    cfg = _seq(num_beams=200, keep_rank=None, num_return_sequences=1)
    assert cfg.rank == 2 and cfg.deepest_rank == 2
    rows, stats = corrupt(ANCHORS, nlp_en, fake, cfg)
    assert rows["id"].tolist() == ["a-0", "a-2"]  # "Go!" has no noun chunk
    assert rows["rank"].tolist() == [1, 1] and stats["negatives_per_anchor"] == 1.0
    assert all(c[2] == 2 for c in fake.calls)  # 2 beams returned, the 2nd spliced in
    assert rows["negative"].iloc[1] == "b1 are running through b1."


def test_each_generation_fills_one_blank(nlp_en):
    fake = _FakeT5()
    corrupt(ANCHORS, nlp_en, fake, _seq(num_return_sequences=1))
    inputs = [m for call in fake.calls for m in call[0]]
    assert len(fake.calls) == 3  # a step per chunk of the longest sentence (three)
    assert all([x.group(0) for x in SENTINEL_RE.finditer(m)] == [BLANK] for m in inputs)


def test_sequential_negatives_are_written_stripped_as_the_script_writes_them(nlp_en):
    class Spaced(_FakeT5):  # fills with a leading and a trailing space
        def fill_one(self, masked, *args):
            beams = super().fill_one(masked, *args)
            return [[Candidate(c.target, c.score, span=f" {c.span} ") for c in b] for b in beams]

    rows, _ = corrupt(ANCHORS.iloc[[2]], nlp_en, Spaced(), _seq(num_return_sequences=1))
    assert rows["negative"].tolist() == ["b1  are running through  b1 ."]
    assert rows["fills"].iloc[0] == [" b1 ", " b1 "]  # kept unstripped, as the script


# -- the QAbot variant (gen_forsup_contra_qa.py) --


def _nouns(*spans):
    return [Noun(f"n{a}", a, b) for a, b in spans]


def test_the_qabot_merge_joins_adjacent_chunks_as_the_script():
    merged = merge_adjacent(_nouns((0, 1), (1, 2), (4, 5)), n_tokens=8)
    assert merged == [Noun("n0n1", 0, 2), Noun("n4", 4, 5)]
    # of three adjacent chunks, the script keeps only the last two, joined
    assert merge_adjacent(_nouns((0, 1), (1, 2), (2, 3)), 8) == [Noun("n1n2", 1, 3)]
    # a chunk that ends the sentence is not merged
    assert merge_adjacent(_nouns((0, 1), (1, 2)), 2) == _nouns((0, 1), (1, 2))
    assert merge_adjacent(_nouns((2, 3)), 8) == _nouns((2, 3))


def test_the_qabot_targets_take_the_word_after_a_bare_task_and_a_number_after_a_chunk():
    toks = [Token(t, p, 0) for t, p in
            [("課題", "NOUN"), ("3", "NUM"), ("の", "ADP"), ("問題", "NOUN"), ("2", "NUM"),
             ("を", "ADP"), ("解く", "VERB")]]  # fmt: skip
    nouns = [Noun("課題", 0, 1), Noun("問題", 3, 4)]
    assert qabot_targets(nouns, toks) == [("3", 1, 2), ("問題2", 3, 5)]
    assert qabot_targets([Noun("課題", 6, 7)], toks) == [("課題", 6, 7)]  # nothing after


def test_the_qabot_span_rule_and_rank(nlp_en):
    assert step_max_length("ab", "qabot", 15) == 5 and step_max_length("abc", "qabot", 15) == 15
    assert step_max_length("ab", "main", 15) == 15
    fake = _FakeT5()
    cfg = _seq(variant="qabot", keep_rank=None, num_beams=200, num_return_sequences=1)
    rows, _ = corrupt(ANCHORS.iloc[[0]], nlp_en, fake, cfg)
    assert rows["rank"].tolist() == [7] and all(c[2] == 8 for c in fake.calls)
    assert rows["negative"].iloc[0] == "b7 sat on b7 in b7."
    # spaCy's chunks "The cat", "the mat", "the afternoon sun": none adjacent, none short
    assert [c[3] for c in fake.calls] == [[6]] * 3


def test_a_bad_variant_is_a_one_line_error_naming_it():
    with pytest.raises(ParamsError, match="corrupt.variant") as err:
        CorruptConfig.from_params({**asdict(_seq()), "variant": "qa"})
    assert "\n" not in str(err.value)


@pytest.fixture(scope="module")
def nlp_ja():
    from paracl.parts.filler.chunks import load_pipeline

    return load_pipeline("ja")


def test_ginza_targets_of_both_scripts(nlp_ja):
    doc = nlp_ja("今回の課題3について、jsではなくhtmlで提出してはダメでしょうか?")
    assert doc_targets(doc, "main") == [("今回", (0, 2)), ("課題", (3, 5))]
    assert doc_targets(doc, "qabot") == [("今回", (0, 2)), ("3", (5, 6))]  # after 課題


def test_a_causal_fill_stops_at_the_span_cap_and_is_kept(tiny_gpt2):
    cfg = _seq(num_samples=4, quantize=False)
    filler = CausalFiller(tiny_gpt2, CPU, cfg.sampling(), seed=1)
    m = blank_first("The cat sat on the big mat.", "the big mat")
    assert filler.plan(m).capped == [False] and filler.plan(m).budget[0] > 1
    assert filler.plan(m, 1).budget == [1] and filler.plan(m, 1).capped == [True]
    (res,) = filler.fill([m], caps=[1])
    assert all(h.truncated == 0 for h in res.hyps)  # the script keeps a span cut there
