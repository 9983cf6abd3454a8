"""Masking noun chunks with sentinels and reassembling T5's fills (no model needed)."""

import pytest

from paracl.parts.filler.masking import mask_spans, parse_fills, reassemble

TEXT = "The quick brown fox jumps over the lazy dog near the river bank."
SPANS = [(0, 19), (31, 43), (49, 63)]


def test_mask_numbers_sentinels_from_zero_left_to_right():
    m = mask_spans(TEXT, SPANS)
    assert m.masked == "<extra_id_0> jumps over <extra_id_1> near <extra_id_2>."
    assert m.chunks == ("The quick brown fox", "the lazy dog", "the river bank")


def test_overlapping_and_touching_spans_are_merged():
    m = mask_spans("abc def ghi", [(4, 7), (0, 3), (2, 5)])
    assert m.masked == "<extra_id_0> ghi"
    assert m.chunks == ("abc def",)


def test_bad_span_and_sentinel_in_text_are_errors():
    with pytest.raises(ValueError, match="outside"):
        mask_spans("short", [(2, 99)])
    with pytest.raises(ValueError, match="sentinel"):
        mask_spans("a <extra_id_0> b", [(0, 1)])


def test_round_trip_with_original_chunks_gives_the_anchor():
    m = mask_spans(TEXT, SPANS)
    target = "".join(f"<extra_id_{i}> {c}" for i, c in enumerate(m.chunks)) + " <extra_id_3>"
    fills = parse_fills(target, 3)
    assert (fills.n_missing, fills.n_extra) == (0, 0)
    assert reassemble(m, fills) == TEXT


def test_reassembly_puts_each_fill_in_its_own_blank():
    m = mask_spans(TEXT, SPANS)
    fills = parse_fills("<extra_id_0> A red cat<extra_id_1> a wall <extra_id_2> the station", 3)
    out = reassemble(m, fills)
    assert out == "A red cat jumps over a wall near the station."


def test_fills_out_of_order_go_to_their_numbered_blank():
    m = mask_spans(TEXT, SPANS)
    fills = parse_fills("<extra_id_1> B <extra_id_0> A <extra_id_2> C", 3)
    assert reassemble(m, fills) == "A jumps over B near C."


def test_missing_fill_keeps_original_chunk_or_drops():
    m = mask_spans(TEXT, SPANS)
    fills = parse_fills("<extra_id_0> A cat <extra_id_2> the sea", 3)
    assert fills.n_missing == 1 and fills.fills[1] is None
    assert reassemble(m, fills, "original") == "A cat jumps over the lazy dog near the sea."
    assert reassemble(m, fills, "drop") is None


def test_empty_fill_counts_as_missing():
    fills = parse_fills("<extra_id_0> <extra_id_1> x", 2)
    assert fills.fills == (None, "x") and fills.n_missing == 1


def test_extra_and_repeated_sentinels_are_counted_and_discarded():
    m = mask_spans(TEXT, SPANS)
    fills = parse_fills(
        "junk <extra_id_0> A <extra_id_1> B <extra_id_0> again <extra_id_2> C <extra_id_3> D "
        "<extra_id_7> E",
        3,
    )
    assert fills.fills == ("A", "B", "C")
    assert fills.n_extra == 3  # repeated 0, 3 with text, 7
    assert reassemble(m, fills) == "A jumps over B near C."


def test_closing_sentinel_without_text_is_not_extra():
    assert parse_fills("<extra_id_0> A <extra_id_1>", 1).n_extra == 0
    assert parse_fills("<extra_id_0> A <extra_id_1> B", 1).n_extra == 1


def test_no_sentinel_at_all_is_all_missing():
    fills = parse_fills("some text without blanks", 2)
    assert fills.n_missing == 2 and fills.n_extra == 0


def test_japanese_round_trip_without_spaces():
    text = "猫は午後の日差しの中でマットの上に座っていた。"
    m = mask_spans(text, [(0, 1), (11, 14)])
    assert m.masked == "<extra_id_0>は午後の日差しの中で<extra_id_1>の上に座っていた。"
    fills = parse_fills("<extra_id_0>犬<extra_id_1>ソファ<extra_id_2>", 2)
    assert reassemble(m, fills) == "犬は午後の日差しの中でソファの上に座っていた。"
