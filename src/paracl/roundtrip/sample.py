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
import pyarrow as pa
import pyarrow.parquet as pq

from paracl import schemas
from paracl.io import ArtifactError, check_schema, fingerprint, sha256_file


def parquet_files(path: str | Path) -> list[Path]:
    """A Parquet file, or a shard directory's parts in order."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    return sorted(path.glob("part-*.parquet")) if path.is_dir() else [path]


def input_checksum(path: str | Path) -> str:
    """What a shard key fingerprints for an input: a file's sha256; for a shard
    directory the sha256 of its `_manifest.json` (which lists every shard's checksum);
    for any other directory (a model) the fingerprint of every file's sha256."""
    path = Path(path)
    if (path / "_manifest.json").is_file():
        return sha256_file(path / "_manifest.json")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return fingerprint([(str(p.relative_to(path)), sha256_file(p)) for p in files])
    return sha256_file(path) if path.is_file() else str(path)


def iter_columns(
    path: str | Path, columns: list[str], batch_size: int = 10_000
) -> Iterator[pd.DataFrame]:
    """Stream only `columns` of a corpus file or shard dir (checked against CORPUS)."""
    expected = schemas.CORPUS
    for part in parquet_files(path):
        pf = pq.ParquetFile(part)
        check_schema(pf.schema_arrow, pa.schema([expected.field(c) for c in columns]), str(part))
        for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
            yield batch.to_pandas()


def seeded_ids(path: str | Path, n: int | None, seed: int) -> set[str] | None:
    """The ids `corpus.sort_values("id").sample(n, random_state=seed)` picks; None when
    there is no cap or the corpus has at most n sentences (keep all)."""
    if n is None:
        return None
    ids = pd.concat(
        [b["id"] for b in iter_columns(path, ["id"])] or [pd.Series([], dtype=object)],
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
    for batch in iter_columns(path, ["id", "text"], batch_size):
        if keep is not None:
            batch = batch[batch["id"].isin(keep)]
        if len(batch):
            yield batch.reset_index(drop=True)
