"""T5's random span noise mask and the span-corruption (input, target) pairs."""

import numpy as np
import pytest

from paracl.parts.filler.noise import random_spans_noise_mask, span_corrupt


def _spans(mask: np.ndarray) -> list[int]:
    lengths, run = [], 0
    for x in mask:
        if x:
            run += 1
        elif run:
            lengths.append(run)
            run = 0
    return lengths + ([run] if run else [])


def test_density_and_mean_span_length_match_t5_setting():
    rng = np.random.default_rng(0)
    masks = [random_spans_noise_mask(40, 0.15, 3.0, rng) for _ in range(500)]
    assert all(m.sum() == 6 for m in masks)  # round(40 * 0.15)
    assert all(not m[0] for m in masks)  # always starts with a non-noise span
    spans = [s for m in masks for s in _spans(m)]
    assert np.mean(spans) == pytest.approx(3.0)  # 6 noise tokens in round(6/3) = 2 spans


def test_short_sequences_still_get_one_noise_token_and_keep_one():
    rng = np.random.default_rng(0)
    for length in (2, 3, 5):
        m = random_spans_noise_mask(length, 0.15, 3.0, rng)
        assert len(m) == length and 1 <= m.sum() <= length - 1


def test_same_seed_same_mask():
    a = random_spans_noise_mask(50, 0.15, 3.0, np.random.default_rng(7))
    b = random_spans_noise_mask(50, 0.15, 3.0, np.random.default_rng(7))
    assert (a == b).all()


def test_span_corrupt_input_and_target_rebuild_the_sequence():
    ids = list(range(10, 30))
    rng = np.random.default_rng(3)
    mask = random_spans_noise_mask(len(ids), 0.15, 3.0, rng)
    sentinels = [100, 99, 98, 97]
    inp, tgt = span_corrupt(ids, mask, sentinels, eos_id=1)
    assert inp[-1] == 1 and tgt[-1] == 1
    # put every target span back in place of its sentinel
    spans, cur = {}, None
    for t in tgt[:-1]:
        if t in sentinels:
            cur = t
            spans[cur] = []
        else:
            spans[cur].append(t)
    rebuilt = [x for t in inp[:-1] for x in (spans[t] if t in sentinels else [t])]
    assert rebuilt == ids
    assert len(tgt) - 1 - len(spans) == mask.sum()


def test_too_many_spans_for_the_sentinels_is_an_error():
    mask = np.array([0, 1, 0, 1, 0, 1], dtype=bool)
    with pytest.raises(ValueError, match="sentinels"):
        span_corrupt([5, 6, 7, 8, 9, 10], mask, [100, 99], eos_id=1)
