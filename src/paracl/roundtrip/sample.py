"""A seeded sample of the corpus, streamed: what sharded model stages feed to map_shards.

Why two passes instead of `read_parquet(...).sample(...)`: the corpus may be far larger
than memory. The first pass reads the `id` column alone and draws the sample exactly as
`DataFrame.sample(n, random_state=seed)` would on the id-sorted corpus (so the same
sentences are picked as by the earlier in-memory code); the second pass streams
(id, text) and keeps the picked rows, in corpus order. The driver holds the id column
(one string per sentence) while it draws, then only the picked ids; with no cap it
holds nothing but the batch in flight.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from paracl import schemas
from paracl.io import iter_batches


def seeded_ids(path: str | Path, n: int | None, seed: int) -> set[str] | None:
    """The ids `corpus.sort_values("id").sample(n, random_state=seed)` picks; None when
    there is no cap or the corpus has at most n sentences (keep all)."""
    if n is None:
        return None
    ids = pd.concat(
        [b["id"] for b in iter_batches(path, schema=schemas.CORPUS, columns=["id"])]
        or [pd.Series([], dtype=object)],
        ignore_index=True,
    )
    if len(ids) <= n:
        return None
    ordered = ids.sort_values(kind="stable").to_numpy()
    picked = np.random.RandomState(seed).choice(len(ordered), size=n, replace=False)
    return set(ordered[picked].tolist())


def sampled_sentences(
    path: str | Path, n: int | None, seed: int, batch_size: int = 10_000
) -> Iterator[pd.DataFrame]:
    """(id, text) of the seeded sample of at most n sentences, streamed in corpus order."""
    keep = seeded_ids(path, n, seed)
    for batch in iter_batches(path, batch_size, schemas.CORPUS, ["id", "text"]):
        if keep is not None:
            batch = batch[batch["id"].isin(keep)]
        if len(batch):
            yield batch.reset_index(drop=True)
