"""A seeded sample of the corpus, streamed: what roundtrip, corrupt, adapt_filler and
generate_paraphrases draw their `max_sentences` from.

Why positions instead of `read_parquet(...).sample(...)`: the corpus may be far larger
than memory. The row count comes from the Parquet metadata (with a `lang` filter, from
one pass over the `lang` column); `numpy.random.default_rng(seed).choice(rows, n,
replace=False)` picks positions; a second pass streams the wanted columns and keeps the
rows at those positions, in corpus order. The driver holds the picked positions (8 bytes
each), never a column of the whole corpus; with no cap, nothing but the batch in flight.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from paracl.core import schemas
from paracl.core.io import iter_batches, row_count


def sample_positions(rows: int, n: int | None, seed: int) -> np.ndarray | None:
    """Sorted positions of a seeded sample of n of `rows`; None to keep every row."""
    if n is None or rows <= n:
        return None
    return np.sort(np.random.default_rng(seed).choice(rows, size=n, replace=False))


def iter_sample(
    path: str | Path,
    n: int | None,
    seed: int,
    lang: str | None = None,
    columns: tuple[str, ...] = ("id", "text"),
    batch_size: int = 10_000,
) -> Iterator[pd.DataFrame]:
    """`columns` of a seeded sample of at most n corpus rows (of `lang`, if given),
    streamed in corpus order."""
    if lang is None:
        rows = row_count(path) if n is not None else 0
    else:
        rows = sum(
            int((b["lang"] == lang).sum())
            for b in iter_batches(path, batch_size, schemas.CORPUS, ["lang"])
        )
    picked = sample_positions(rows, n, seed)
    read = list(columns) + (["lang"] if lang is not None and "lang" not in columns else [])
    seen = 0
    for batch in iter_batches(path, batch_size, schemas.CORPUS, read):
        if lang is not None:
            batch = batch[batch["lang"] == lang]
        start, seen = seen, seen + len(batch)
        if picked is not None:  # the picked positions inside [start, seen)
            lo, hi = np.searchsorted(picked, [start, seen])
            batch = batch.iloc[picked[lo:hi] - start]
        if len(batch):
            yield batch[list(columns)].reset_index(drop=True)


def sample_corpus(
    path: str | Path, n: int | None, seed: int, lang: str | None = None
) -> pd.DataFrame:
    """iter_sample's rows as one frame (for stages that train on the whole sample)."""
    frames = list(iter_sample(path, n, seed, lang))
    if not frames:
        return pd.DataFrame({"id": pd.Series([], dtype=str), "text": pd.Series([], dtype=str)})
    return pd.concat(frames, ignore_index=True)
