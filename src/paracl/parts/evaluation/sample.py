"""The one seeded evaluation sample: a stratified random draw of at most `cap` rows.

Why not the first rows: evaluation files are ordered (STS-B test by genre, so its first
200 pairs are all image captions; STS12 by subset), so a prefix scores one genre. A cap
draws a random sample instead, stratified where a set has strata (STS-B's genre, the
subsets of an STS year, a PI set's label), with proportional allocation: each stratum
keeps its share of the set, so the sample's mix is the set's.

The draw is a pure function of (rows, strata, cap, seed): every method is scored on the
same pairs, and `record` says which ones were taken (a short hash of the row positions)
so that two runs can be checked to have scored the same sample.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd


def allocate(sizes: dict[str, int], cap: int) -> dict[str, int]:
    """Proportional allocation of `cap` rows over strata of `sizes` (largest remainder:
    the rounding leftovers go to the strata with the largest fractional parts, ties to
    the larger stratum, then by name)."""
    total = sum(sizes.values())
    exact = {k: cap * n / total for k, n in sizes.items()}
    take = {k: int(np.floor(v)) for k, v in exact.items()}
    order = sorted(sizes, key=lambda k: (-(exact[k] - take[k]), -sizes[k], k))
    for k in order[: cap - sum(take.values())]:
        take[k] += 1
    return take


def row_hash(positions: np.ndarray) -> str:
    """A short hash of the chosen row positions (0-based, in the set's file order)."""
    text = ",".join(str(int(p)) for p in positions)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sample_rows(
    df: pd.DataFrame, cap: int | None, seed: int, by: str | None = None
) -> tuple[pd.DataFrame, dict]:
    """At most `cap` rows of `df` (all when cap is None or >= len), stratified by column
    `by` (None: one stratum), in file order; and the record of the sample taken."""
    n = len(df)
    strata = df[by].astype(str).to_numpy() if by is not None else np.full(n, "all")
    names, counts = np.unique(strata, return_counts=True)
    sizes = dict(zip(names.tolist(), counts.tolist(), strict=True))
    if cap is None or cap >= n:
        positions = np.arange(n)
        take = sizes
    else:
        take = allocate(sizes, cap)
        rng = np.random.default_rng(seed)
        picked = [
            rng.choice(np.flatnonzero(strata == name), size=take[name], replace=False)
            for name in sorted(sizes)
        ]
        positions = np.sort(np.concatenate(picked))
    record = {
        "seed": seed,
        "cap": cap,
        "pairs": int(len(positions)),
        "of": n,
        "stratified_by": by,
        "strata": {k: {"pairs": int(take[k]), "of": int(sizes[k])} for k in sorted(sizes)},
        "rows_sha256": row_hash(positions),
    }
    return df.iloc[positions].reset_index(drop=True), record
