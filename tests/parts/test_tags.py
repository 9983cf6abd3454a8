"""Tagging: symbol stripping, sentence BLEU, the 48 <SIM><BLEU> bins, balanced splits,
the tag grammar, the tag stage's streaming pass and the Figure 3 measure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from paracl.core import schemas
from paracl.core.errors import InputError
from paracl.core.io import write_parquet
from paracl.core.params import ParamsError
from paracl.parts.tags import adherence as tag_adherence
from paracl.parts.tags import heatmap, tagging, text
from paracl.parts.tags.tagging import bleu_tag, sim_tag
from paracl.stages import tag as scoring


def test_strip_symbols_keeps_letters_digits_spaces_commas_periods():
    assert text.strip_symbols("Hello, world! (It's) 3.5 #1 — ok?") == "Hello, world Its 3.5 1 ok"
    assert text.strip_symbols('  a\t"b"  c  ') == "a b c"
    assert text.strip_symbols("Zürich's café, 2020.") == "Zürichs café, 2020."


def test_strip_symbols_japanese_keeps_kana_kanji_and_japanese_comma_period():
    assert text.strip_symbols("「猫」は、マットの上に座った！", "ja") == "猫は、マットの上に座った"
    assert text.strip_symbols("東京（とうきょう）。", "ja") == "東京とうきょう。"


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
    mask = text.long_enough(["one two three four", "a b c"], ["w x y z", "a b c d"], "en", 4)
    assert mask.tolist() == [True, False]
    assert text.word_count("「猫は」マットの上。", "ja") == 4  # 9 characters left / 2
    m = heatmap.percent_matrix(np.array([95.0, 95.0, 5.0]), np.array([15.0, 15.0, 99.0]))
    assert m[9, 1] == pytest.approx(200 / 3) and m[0, 9] == pytest.approx(100 / 3)


def test_sts_readers_parse_and_name_bad_lines(tmp_path, mirror):
    from paracl.parts import sts_scorer

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


def test_parse_tags_takes_one_sim_then_one_bleu_tag():
    assert tagging.parse_tags("<SIM95><BLEU20>") == ("<SIM95>", "<BLEU20>")
    assert tagging.parse_tags("<SIM70> <BLEU0_5>") == ("<SIM70>", "<BLEU0_5>")
    for bad in ("<BLEU20><SIM95>", "<SIM95>", "<SIM95><BLEU20><BLEU10>", "<SIM96><BLEU20>", "x"):
        with pytest.raises(ParamsError, match=r"^params.yaml: 'generate_paraphrases.tags' entry"):
            tagging.parse_tags(bad)
    with pytest.raises(ParamsError, match=r"^--tags 'x' must be one SIM tag"):
        tagging.parse_tags("x", source="--tags")


def _scored_rows(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    sim, bleu = rng.uniform(50, 100, n), rng.uniform(0, 60, n)
    df = tagging.add_tags(
        pd.DataFrame(
            {"id": [f"s{i // 3}" for i in range(n)], "text": "t", "sim": sim, "bleu": bleu}
        )
    )
    df["paraphrase"] = [f"p{i}" for i in range(n)]
    df["candidate"] = np.arange(n, dtype=np.int32) % 3
    df["dropped"] = [("empty" if i % 7 == 0 else None) for i in range(n)]
    df["heatmap"] = [i % 5 != 0 for i in range(n)]
    return df


def test_scored_summary_does_not_depend_on_batch_sizes():
    """The heatmap sample and the counts of one shard are the same read in any batches."""
    parts = [_scored_rows(40), _scored_rows(25)]
    results = []
    for size in (7, 100):
        summary = scoring.ScoredSummary(seed=3, heatmap_max=20)
        for part, frame in enumerate(parts):
            for start in range(0, len(frame), size):
                summary.add(part, frame.iloc[start : start + size])
        results.append(summary)
    a, b = results
    np.testing.assert_array_equal(a.heatmap_pairs()[0], b.heatmap_pairs()[0])
    assert len(a.heatmap_pairs()[0]) == 20
    assert a.dropped == b.dropped and a.n_scored == b.n_scored
    whole = pd.concat(parts, ignore_index=True)
    scored = whole[whole["dropped"].isna()]
    assert a.n_good == len(tagging.high_quality(scored)) == len(a.good)
    assert a.sim_sum == pytest.approx(scored["sim"].sum())


def test_tag_adherence_per_requested_pair(tmp_path):
    rows = pd.DataFrame(
        {
            "id": ["a", "b", "a", "b"],
            "text": ["one two three four five"] * 4,
            "paraphrase": ["w x y z q", "too short", "w x y z q", "w x y z q"],
            "tags": ["<SIM95><BLEU20>"] * 2 + ["<SIM80><BLEU0_5>"] * 2,
            "sim": [96.0, 80.0, 82.0, 83.0],
            "bleu": [21.0, 22.0, 5.0, 50.0],
            "n_input_tokens": np.array([5, 5, 5, 0], dtype=np.int32),
            "n_output_tokens": np.array([5, 2, 6, 5], dtype=np.int32),
        }
    )
    write_parquet(rows, tmp_path / "generated.parquet", schemas.GENERATED_PARAPHRASES)
    requested = [("<SIM95>", "<BLEU20>"), ("<SIM80>", "<BLEU0_5>"), ("<SIM70>", "<BLEU10>")]
    per_tag, panels = tag_adherence.measure(tmp_path / "generated.parquet", requested, "en", 4)
    first = per_tag["<SIM95><BLEU20>"]
    assert (first["n"], first["hit_rate"], first["sim_mean"]) == (2, 0.5, 88.0)
    assert first["length_ratio"] == {"min": 0.4, "max": 1.0, "mean": 0.7}
    assert per_tag["<SIM80><BLEU0_5>"]["length_ratio"]["max"] == 1.2  # n_input 0 left out
    assert per_tag["<SIM70><BLEU10>"]["n"] == 0 and per_tag["<SIM70><BLEU10>"]["hit_rate"] is None
    assert panels["<SIM95><BLEU20>"][0].tolist() == [96.0]  # the short pair is not drawn
    heatmap.write_csv_dir(panels, tmp_path / "plots")
    (tmp_path / "plots" / "stale.csv").write_text("x")
    heatmap.write_csv_dir(panels, tmp_path / "plots")
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "SIM70_BLEU10.csv",
        "SIM80_BLEU0_5.csv",
        "SIM95_BLEU20.csv",
    ]


def test_a_paraphrase_under_four_tokens_has_bleu_zero_as_in_the_paper():
    # the round-trip paper's footnote 12: plain sentence BLEU is 0 below 4 words
    assert tagging.sentence_bleu("the cat sat", "the cat sat") == 0.0
    assert tagging.sentence_bleu("the cat sat down", "the cat sat down") == pytest.approx(100.0)
