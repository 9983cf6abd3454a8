"""Exact-text deduplication with bounded memory: hashes spilled to disk by prefix.

Why not a set of texts: at Wiki-40B scale (~10⁸ sentences) the texts alone are tens of
GB. Instead each sentence is reduced to a 128-bit BLAKE2b digest of its UTF-8 text
(computed by the split workers) and its global index `g` (position among the
length-filtered sentences, in input order). These 24-byte records are appended to
`BUCKETS` files by the digest's first bits; each bucket is then deduplicated on its
own, in memory: about 24 bytes × sentences / `BUCKETS` at a time. Two different texts
share a digest with probability ~n²/2¹²⁹ (≈10⁻²³ for 10⁸ sentences), so "same digest"
stands for "same text".

The result is the sorted array of `g` that are duplicates (every occurrence but the
first in input order), which is all later steps need: O(duplicates) memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

BUCKETS = 64  # a power of two: the bucket is the top bits of the digest
_SHIFT = np.uint64(64 - (BUCKETS.bit_length() - 1))  # keep the top log2(BUCKETS) bits
RECORD = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("g", "<i8")])


def text_digests(texts: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """The 128-bit BLAKE2b digest of each text as two uint64 halves (h1, h2)."""
    blob = b"".join(hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts)
    halves = np.frombuffer(blob, dtype="<u8").reshape(-1, 2)
    return halves[:, 0].copy(), halves[:, 1].copy()


class DigestSpill:
    """(digest, g) records of every sentence, appended to bucket files in `directory`."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._paths = [self.directory / f"bucket-{b:03d}.bin" for b in range(BUCKETS)]
        self._files = [open(p, "wb") for p in self._paths]  # noqa: SIM115 (closed in finish)
        self.rows = 0

    def add(self, h1: np.ndarray, h2: np.ndarray) -> None:
        """Append the next len(h1) sentences (their g continue from the last call)."""
        records = np.empty(len(h1), RECORD)
        records["h1"], records["h2"] = h1, h2
        records["g"] = np.arange(self.rows, self.rows + len(h1))
        self.rows += len(h1)
        bucket = (records["h1"] >> _SHIFT).astype(np.intp)
        records = records[np.argsort(bucket, kind="stable")]
        counts = np.bincount(bucket, minlength=BUCKETS)
        for f, part in zip(self._files, np.split(records, np.cumsum(counts)[:-1]), strict=True):
            if len(part):
                part.tofile(f)

    def duplicates(self) -> np.ndarray:
        """Sorted g of every sentence whose text occurred at a smaller g; closes the
        files and deletes them, one bucket in memory at a time."""
        self.close()
        found = []
        for path in self._paths:
            records = np.fromfile(path, RECORD)
            path.unlink()
            if len(records) < 2:
                continue
            records = records[np.lexsort((records["g"], records["h2"], records["h1"]))]
            repeat = (records["h1"][1:] == records["h1"][:-1]) & (
                records["h2"][1:] == records["h2"][:-1]
            )
            found.append(records["g"][1:][repeat])
        return np.sort(np.concatenate(found)) if found else np.empty(0, np.int64)

    def close(self) -> None:
        for f in self._files:
            f.close()


def is_member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values ∈ sorted_set, elementwise, in O(len(values) · log len(sorted_set))."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values
