"""The corpus's bounded-memory parts: hash-bucket dedup and the windowed checking order,
each against the obvious in-memory version it replaces."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paracl.parts.corpus.dedup import BUCKETS, DigestSpill, is_member, text_digests
from paracl.parts.corpus.order import OrderedCandidates, SplitIndex, check_keys, windows


def test_spilled_dedup_keeps_the_first_occurrence_like_a_set(tmp_path):
    rng = np.random.default_rng(0)
    texts = [f"sentence {int(i)}" for i in rng.integers(0, 3000, size=5000)]  # many repeats
    spill = DigestSpill(tmp_path)
    for start in range(0, len(texts), 700):  # shards of uneven size
        spill.add(*text_digests(texts[start : start + 700]))
    dups = spill.duplicates()

    seen, expected = set(), []
    for g, text in enumerate(texts):
        if text in seen:
            expected.append(g)
        seen.add(text)
    assert dups.tolist() == expected
    assert len({int(h) >> 58 for h in text_digests(texts)[0]}) == BUCKETS  # all buckets used
    assert not list(tmp_path.iterdir())  # bucket files deleted once read


def test_digests_tell_texts_apart_by_every_byte():
    h1, h2 = text_digests(["a", "b", "a", "é", "e\u0301", ""])
    pairs = list(zip(h1.tolist(), h2.tolist(), strict=True))
    assert pairs[0] == pairs[2]
    assert len(set(pairs)) == 5  # é and e + combining accent are different texts


def test_is_member_matches_numpy_isin():
    rng = np.random.default_rng(1)
    values, members = rng.integers(0, 100, 500), np.unique(rng.integers(0, 100, 40))
    assert (is_member(values, members) == np.isin(values, members)).all()
    assert not is_member(values, np.empty(0, np.int64)).any()


def test_check_keys_are_a_seeded_permutation():
    g = np.arange(100_000)
    keys = check_keys(g, seed=42, shuffled=True)
    assert len(np.unique(keys)) == len(g)  # a bijection: no ties, ever
    assert (check_keys(g, seed=42, shuffled=True) == keys).all()
    assert (check_keys(g, seed=43, shuffled=True) != keys).mean() > 0.99
    assert (check_keys(g, seed=42, shuffled=False) == g).all()
    # uniform: each 1/16 of the key space gets its share
    counts = np.bincount((keys >> np.uint64(60)).astype(int), minlength=16)
    assert counts.min() > 0.9 * len(g) / 16


def _index_and_texts(rows: list[int], duplicates: list[int]):
    texts = [f"text {g}" for g in range(sum(rows))]
    starts = np.concatenate([[0], np.cumsum(rows)])

    def read_texts(shard: int, take: np.ndarray) -> pa.ChunkedArray:
        shard_texts = pa.chunked_array([texts[starts[shard] : starts[shard + 1]]], pa.string())
        return shard_texts.take(take)

    return SplitIndex(rows, np.array(duplicates, np.int64)), texts, read_texts


def test_windows_stream_every_candidate_once_in_key_order():
    rows = [7, 0, 13, 1, 25, 4]  # an empty shard too
    dups = [2, 8, 9, 30, 49]
    index, texts, read_texts = _index_and_texts(rows, dups)
    for shuffled in (False, True):
        keys = check_keys(np.arange(index.total), 5, shuffled)
        expected = sorted((int(keys[g]), texts[g]) for g in range(index.total) if g not in dups)
        slices = list(windows(index, 5, shuffled, 3, 8, read_texts))
        assert len(slices) > 3  # several windows, growing
        got = [(int(k), t) for ks, ts in slices for k, t in zip(ks, ts.to_pylist(), strict=True)]
        assert got == expected
        assert max(len(ks) for ks, _ in slices) <= 16


def test_ordered_candidates_take_across_window_boundaries():
    index, texts, read_texts = _index_and_texts([10, 10, 10], [])
    stream = OrderedCandidates(windows(index, 0, False, 4, 4, read_texts))
    sizes = [3, 5, 1, 16, 9, 4]
    taken = [stream.take(n) for n in sizes]
    assert [len(k) for k, _ in taken] == [3, 5, 1, 16, 5, 0]
    assert [t for _, ts in taken for t in ts] == texts
