"""Which sentences langdetect checks, in what order, streamed in windows of bounded size.

With `max_sentences` set, candidates are checked in a seeded random order and checking
stops at the cap: the first k survivors of a random order are a uniform, reproducible
sample of all survivors. A permutation of all candidates would cost 8 bytes each and a
list of their texts far more, so instead every length-filtered sentence gets a key,
`splitmix64(g + splitmix64(seed))` of its global index g, and candidates are checked in
ascending key order. splitmix64 is a bijection of 64-bit integers, so keys are unique and
look uniformly random. Without a cap the key is g itself: input order.

Unique keys make the bookkeeping tiny: "checked" is exactly "key <= the last key
checked", so the kept set is that, minus the duplicates and langdetect's rejects.

Windows: the key range is cut into slices of about `size` candidates each (doubling
slice by slice up to `largest`, so a run that needs far more than the first slice does
not pay one pass over the split shards per small slice); one slice's texts are read from
the split shards (only their `text` column) and sorted by key, so at most one slice of
texts is in memory at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paracl.parts.corpus.dedup import is_member

KEY_SPACE = 1 << 64


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (Steele et al. 2014), elementwise on uint64 (wrapping)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def check_keys(g: np.ndarray, seed: int, shuffled: bool) -> np.ndarray:
    """Each sentence's place in the checking order (uint64, unique per g)."""
    x = np.asarray(g).astype(np.uint64)
    if not shuffled:
        return x
    offset = splitmix64(np.array([seed % KEY_SPACE], np.uint64))
    return splitmix64(x + offset)


@dataclass
class SplitIndex:
    """Where the length-filtered sentences lie: split shard i holds the sentences
    g = starts[i] … starts[i+1]-1 (input order); `duplicates` are the sorted g that
    dedup dropped. O(shards + duplicates) memory."""

    rows: list[int]
    duplicates: np.ndarray

    def __post_init__(self) -> None:
        self.starts = np.concatenate([[0], np.cumsum(self.rows, dtype=np.int64)])

    @property
    def total(self) -> int:
        return int(self.starts[-1])

    @property
    def candidates(self) -> int:
        return self.total - len(self.duplicates)

    def shard_range(self, shard: int) -> np.ndarray:
        start = int(self.starts[shard])
        return np.arange(start, start + self.rows[shard], dtype=np.int64)


# read_texts(shard, rows) -> those rows' texts; the split shards live in a ShardCache
TextReader = Callable[[int, np.ndarray], pa.ChunkedArray]


def windows(
    index: SplitIndex,
    seed: int,
    shuffled: bool,
    size: int,
    largest: int,
    read_texts: TextReader,
) -> Iterator[tuple[np.ndarray, pa.ChunkedArray]]:
    """(keys, texts) of all candidates in ascending key order, one slice at a time."""
    if index.candidates == 0:
        return
    space = KEY_SPACE if shuffled else index.total
    starts = index.starts
    lo = 0
    while lo < space:
        # key units per candidate: 2⁶⁴ / candidates (shuffled), ~1 (input order)
        step = -(-space * size // index.candidates) if shuffled else size
        hi = min(lo + step, space)
        if shuffled:
            shards = range(len(index.rows))
        else:  # input order: only the shards overlapping [lo, hi)
            first = int(np.searchsorted(starts, lo, side="right")) - 1
            shards = range(first, int(np.searchsorted(starts, hi, side="left")))
        keys, texts = [], []
        for shard in shards:
            g = index.shard_range(shard)
            k = check_keys(g, seed, shuffled)
            in_slice = k >= np.uint64(lo)
            if hi < KEY_SPACE:
                in_slice &= k < np.uint64(hi)
            rows = np.flatnonzero(in_slice)
            rows = rows[~is_member(g[rows], index.duplicates)]
            if len(rows):
                keys.append(k[rows])
                texts.extend(read_texts(shard, rows).chunks)
        if keys:
            k = np.concatenate(keys)
            order = np.argsort(k)
            yield k[order], pa.chunked_array(texts, pa.string()).take(order)
        lo = hi
        size = min(size * 2, largest)


class OrderedCandidates:
    """The windows as one stream: `take(n)` gives the next n (keys, texts)."""

    def __init__(self, slices: Iterator[tuple[np.ndarray, pa.ChunkedArray]]):
        self._slices = slices
        self._keys = np.empty(0, np.uint64)
        self._texts = pa.chunked_array([], pa.string())
        self._pos = 0

    def take(self, n: int) -> tuple[np.ndarray, list[str]]:
        while len(self._keys) - self._pos < n:
            nxt = next(self._slices, None)
            if nxt is None:
                break
            self._keys = np.concatenate([self._keys[self._pos :], nxt[0]])
            self._texts = pa.chunked_array(
                self._texts.slice(self._pos).chunks + nxt[1].chunks, pa.string()
            )
            self._pos = 0
        keys = self._keys[self._pos : self._pos + n]
        texts = self._texts.slice(self._pos, len(keys)).to_pylist()
        self._pos += len(keys)
        return keys, texts
