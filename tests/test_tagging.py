"""Tagging: symbol stripping, sentence BLEU, the 48 <SIM><BLEU> bins, balanced splits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from paracl.errors import InputError
from paracl.roundtrip import heatmap, tagging
from paracl.roundtrip.tagging import bleu_tag, sim_tag


def test_strip_symbols_keeps_letters_digits_spaces_commas_periods():
    assert tagging.strip_symbols("Hello, world! (It's) 3.5 #1 — ok?") == "Hello, world Its 3.5 1 ok"
    assert tagging.strip_symbols('  a\t"b"  c  ') == "a b c"
    assert tagging.strip_symbols("Zürich's café, 2020.") == "Zürichs café, 2020."


def test_strip_symbols_japanese_keeps_kana_kanji_and_japanese_comma_period():
    assert (
        tagging.strip_symbols("「猫」は、マットの上に座った！", "ja") == "猫は、マットの上に座った"
    )
    assert tagging.strip_symbols("東京（とうきょう）。", "ja") == "東京とうきょう。"


def test_sentence_bleu_known_pairs():
    # identical after stripping and lower-casing → 100
    assert tagging.sentence_bleu(
        "The cat SAT on the mat!", "the cat sat on the mat"
    ) == pytest.approx(100.0)
    # STS-B's first pair (sacrebleu 13a, effective order, exp smoothing)
    assert tagging.sentence_bleu(
        "An air plane is taking off.", "A plane is taking off."
    ) == pytest.approx(61.4788, abs=1e-3)
    # nothing in common
    assert tagging.sentence_bleu("dogs bark loudly", "a cat sleeps") == pytest.approx(0.0, abs=1e-6)


def test_sentence_bleu_japanese_is_mecab_tokenized():
    score = tagging.sentence_bleu("猫がマットの上に座った。", "猫はマットの上に座っていた。", "ja")
    assert score == pytest.approx(42.5008, abs=1e-3)  # with ja-mecab; char-free 13a would be 0


@pytest.mark.parametrize(
    "sim,expected",
    [
        (69.9, None),
        (70.0, None),  # high quality is SIM > 70
        (70.01, "<SIM70>"),
        (74.99, "<SIM70>"),
        (75.0, "<SIM75>"),
        (89.99, "<SIM85>"),
        (95.0, "<SIM95>"),
        (100.0, "<SIM95>"),
        (100.5, None),
    ],
)
def test_sim_bins(sim, expected):
    assert sim_tag(sim) == expected


@pytest.mark.parametrize(
    "bleu,expected",
    [
        (0.0, "<BLEU0_5>"),
        (5.0, "<BLEU0_5>"),
        (9.99, "<BLEU0_5>"),
        (10.0, "<BLEU10>"),
        (14.99, "<BLEU10>"),
        (15.0, "<BLEU15>"),
        (40.0, "<BLEU40>"),
        (45.0, "<BLEU40>"),  # high quality is BLEU <= 45
        (45.01, None),
        (100.0, None),
        (-1.0, None),
    ],
)
def test_bleu_bins(bleu, expected):
    assert bleu_tag(bleu) == expected


def test_there_are_48_cells_and_14_tags():
    assert len(tagging.CELLS) == 48
    assert len(set(tagging.ALL_TAGS)) == 14


def _cell_frame(per_cell: int, skip: set[tuple[str, str]] = frozenset(), short: dict | None = None):
    """Pairs in every cell: SIM/BLEU values at the cell's lower edge + 1."""
    rows = []
    for s, b in tagging.CELLS:
        if (s, b) in skip:
            continue
        n = (short or {}).get((s, b), per_cell)
        sim = float(s[4:-1]) + 1
        bleu = 1.0 if b == "<BLEU0_5>" else float(b[5:-1]) + 1
        for i in range(n):
            rows.append(
                {"id": f"{s}{b}-{i}", "text": "t", "paraphrase": f"p{i}", "sim": sim, "bleu": bleu}
            )
    return tagging.add_tags(pd.DataFrame(rows))


def test_add_tags_on_cell_frame_lands_in_the_intended_cells():
    df = _cell_frame(1)
    assert len(tagging.high_quality(df)) == 48
    assert set(zip(df["sim_tag"], df["bleu_tag"], strict=True)) == set(tagging.CELLS)


def test_balanced_split_counts_with_double_bleu0_5():
    df = _cell_frame(12)
    sampled, counts = tagging.balanced_split(df, {"dev": 1, "test": 1, "train": 3}, seed=0)
    by_cell = {(c["sim_tag"], c["bleu_tag"]): c for c in counts}
    assert len(counts) == 48
    for (_s, b), c in by_cell.items():
        w = 2 if b == "<BLEU0_5>" else 1
        assert (c["dev"], c["test"], c["train"]) == (w, w, 3 * w)
    sizes = sampled["split"].value_counts().to_dict()
    # 6 SIM tags × (7 single + 1 double share) = 54 shares
    assert sizes == {"dev": 54, "test": 54, "train": 162}
    assert not sampled.duplicated(["id", "paraphrase"]).any()
    assert tagging.summarize_cells(counts) == {"n_cells": 48, "empty_cells": [], "short_cells": []}


def test_balanced_split_reports_empty_and_short_cells_and_none_takes_rest():
    empty, short = ("<SIM70>", "<BLEU10>"), ("<SIM95>", "<BLEU0_5>")
    df = _cell_frame(5, skip={empty}, short={short: 3})
    sampled, counts = tagging.balanced_split(df, {"dev": 1, "test": 1, "train": None}, seed=0)
    by_cell = {(c["sim_tag"], c["bleu_tag"]): c for c in counts}
    assert by_cell[empty]["available"] == 0 and by_cell[empty]["train"] == 0
    assert (by_cell[short]["dev"], by_cell[short]["test"], by_cell[short]["train"]) == (2, 1, 0)
    assert by_cell[("<SIM80>", "<BLEU20>")]["train"] == 3  # all that is left
    summary = tagging.summarize_cells(counts)
    assert summary["empty_cells"] == ["<SIM70><BLEU10>"]
    assert summary["short_cells"] == ["<SIM70><BLEU10>", "<SIM95><BLEU0_5>"]


def test_balanced_split_keeps_each_source_sentence_in_one_split():
    df = _cell_frame(6)
    df["id"] = [f"s{i % 40}" for i in range(len(df))]  # 40 sources, ~7 paraphrases each
    sampled, counts = tagging.balanced_split(df, {"dev": 1, "test": 1, "train": 2}, seed=0)
    splits_per_source = sampled.groupby("id")["split"].nunique()
    assert (splits_per_source == 1).all()
    assert set(sampled["split"]) == {"dev", "test", "train"}
    # the price: some paraphrases are left out because their source lives in a full split
    assert sum(c["source_elsewhere"] for c in counts) > 0
    for c in counts:
        assert c["dev"] + c["test"] + c["train"] + c["source_elsewhere"] <= c["available"]


def test_balanced_split_is_seeded():
    df = _cell_frame(10)
    a, _ = tagging.balanced_split(df, {"dev": 1, "test": 1, "train": 2}, seed=1)
    b, _ = tagging.balanced_split(
        df.sample(frac=1, random_state=3), {"dev": 1, "test": 1, "train": 2}, seed=1
    )
    c, _ = tagging.balanced_split(df, {"dev": 1, "test": 1, "train": 2}, seed=2)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    assert not a["paraphrase"].equals(c["paraphrase"])


def test_balanced_split_of_empty_frame():
    empty = tagging.add_tags(
        pd.DataFrame({"id": [], "text": [], "paraphrase": [], "sim": [], "bleu": []})
    )
    sampled, counts = tagging.balanced_split(empty, {"dev": 1, "test": 1, "train": None}, seed=0)
    assert len(sampled) == 0 and "split" in sampled.columns
    assert len(tagging.summarize_cells(counts)["empty_cells"]) == 48


def test_score_pairs_strips_before_scoring_and_scales():
    seen = []

    def fake_sts(pairs):
        seen.extend(pairs)
        return np.full(len(pairs), 0.8)

    sim, bleu = tagging.score_pairs(["A plane, taking off!"], ["A plane (taking) off."], fake_sts)
    assert seen == [("A plane, taking off", "A plane taking off.")]
    assert sim.tolist() == pytest.approx([80.0])
    assert 0 < bleu[0] < 100


def test_heatmap_bins_and_min_words():
    assert heatmap.bin_label(0) == "0-10" and heatmap.bin_label(100) == "90-100"
    assert heatmap.bin_label(45) == "40-50"
    mask = heatmap.long_enough(["one two three four", "a b c"], ["w x y z", "a b c d"], "en", 4)
    assert mask.tolist() == [True, False]
    m = heatmap.percent_matrix(np.array([95.0, 95.0, 5.0]), np.array([15.0, 15.0, 99.0]))
    assert m[9, 1] == pytest.approx(200 / 3) and m[0, 9] == pytest.approx(100 / 3)


def test_sts_readers_parse_and_name_bad_lines(tmp_path, mirror):
    from paracl.roundtrip import sts_scorer

    dev = sts_scorer.read_pairs(mirror / "stsbenchmark/original/sts-dev.csv")
    assert len(dev) == 1500 and 0.0 <= min(dev.score) and max(dev.score) <= 1.0
    jsts = sts_scorer.read_pairs(mirror / "jglue/jsts-v1.3/valid-v1.3.json")
    assert len(jsts) == 1457 and max(jsts.score) <= 1.0
    bad = tmp_path / "bad.csv"
    bad.write_text("g\tf\t2012\t1\t5.0\ta\tb\ng\tf\t2012\t2\tfive\ta\tb\n")
    with pytest.raises(InputError, match=r"bad.csv:2: score 'five'"):
        sts_scorer.read_pairs(bad)
    bad.write_text("g\tf\t1\n")
    with pytest.raises(InputError, match=r"bad.csv:1: expected at least 7"):
        sts_scorer.read_pairs(bad)
