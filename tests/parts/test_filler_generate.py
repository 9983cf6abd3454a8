"""Blank filling with a tiny random T5, the corrupt pipeline, and seeded determinism."""

import pandas as pd
import pytest
import torch
from conftest import part_config

from paracl.core import schemas
from paracl.core.io import read_parquet, write_parquet
from paracl.parts.filler.generate import T5Filler, sentinel_ids
from paracl.parts.filler.pipeline import CorruptConfig, corrupt

CPU = torch.device("cpu")
ANCHORS = pd.DataFrame(
    {
        "id": ["a-0", "a-1", "a-2", "a-3"],
        "text": [
            "The cat sat on the mat in the afternoon sun.",
            "Go!",
            "Two dogs are running through the green field.",
            "The city council approved the new budget on Monday.",
        ],
    }
)


def test_sentinel_ids_of_the_tiny_t5(tiny_t5):
    filler = T5Filler(tiny_t5, CPU)
    assert filler.n_sentinels == 20
    assert len(set(sentinel_ids(filler.tokenizer))) == 20


def test_fill_returns_n_candidates_best_first(tiny_t5):
    filler = T5Filler(tiny_t5, CPU)
    masked = ["The <extra_id_0> sat on <extra_id_1>.", "<extra_id_0> is running."]
    out = filler.fill(masked, [2, 1], num_beams=4, num_return_sequences=3, batch_size=2)
    assert [len(c) for c in out] == [3, 3]
    for cands in out:
        scores = [c.score for c in cands]
        assert scores == sorted(scores, reverse=True)
        assert all("<pad>" not in c.target and "</s>" not in c.target for c in cands)
    with pytest.raises(ValueError, match="num_beams"):
        filler.fill(masked, [2, 1], num_beams=2, num_return_sequences=3)


def test_corrupt_rows_and_counts_are_consistent(tiny_t5, nlp_en, tmp_path):
    filler = T5Filler(tiny_t5, CPU)
    cfg = part_config(
        CorruptConfig, mask_mode="all_at_once", num_beams=4, num_return_sequences=4,
        batch_size=2, max_fill_tokens=3,
    )  # fmt: skip
    rows, stats = corrupt(ANCHORS, nlp_en, filler, cfg)
    assert stats["sentences_in"] == 4 and stats["skipped_no_chunk"] == 1
    assert stats["candidates"] == 3 * 4
    dropped = stats["dropped_identical"] + stats["dropped_duplicate"] + stats["dropped_missing"]
    assert stats["negatives"] == len(rows) == stats["candidates"] - dropped
    assert (rows["negative"] != rows["text"]).all()
    assert not rows.duplicated(["id", "negative"]).any()
    assert set(rows["id"]) <= {"a-0", "a-2", "a-3"}
    for _, r in rows.iterrows():
        assert len(r["chunks"]) == len(r["fills"]) == r["masked"].count("<extra_id_")
    write_parquet(rows, tmp_path / "n.parquet", schemas.NEGATIVES)  # matches the schema
    assert len(read_parquet(tmp_path / "n.parquet", schemas.NEGATIVES)) == len(rows)


def test_same_seed_same_negatives_and_batching_does_not_drop_rows(tiny_t5, nlp_en):
    cfg = part_config(
        CorruptConfig, mask_mode="all_at_once", num_beams=3, num_return_sequences=2,
        batch_size=3, max_fill_tokens=3,
    )  # fmt: skip
    torch.manual_seed(0)
    a, sa = corrupt(ANCHORS, nlp_en, T5Filler(tiny_t5, CPU), cfg)
    torch.manual_seed(0)
    b, sb = corrupt(ANCHORS, nlp_en, T5Filler(tiny_t5, CPU), cfg)
    pd.testing.assert_frame_equal(a, b)
    assert sa == sb


def test_empty_input_gives_empty_frame_of_the_schema(tiny_t5, nlp_en, tmp_path):
    rows, stats = corrupt(
        ANCHORS.iloc[:0], nlp_en, T5Filler(tiny_t5, CPU), part_config(CorruptConfig)
    )
    assert rows.empty and stats["negatives"] == 0 and stats["negatives_per_anchor"] == 0.0
    write_parquet(rows, tmp_path / "e.parquet", schemas.NEGATIVES)
