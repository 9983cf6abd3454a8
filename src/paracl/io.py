"""Parquet and JSON IO that never leaves a half-written artifact behind.

Every write goes to a temporary file in the destination's directory and is renamed
into place only when complete (rename is atomic on POSIX). A crash mid-write leaves
the old file, or nothing, never a truncated one. Reads check the artifact's schema
and name the file when it does not match.

Large artifacts are directories of shards (`part-00000.parquet`, …) with a
`_manifest.json` listing each shard's rows and sha256: a rerun keeps finished shards
and the manifest makes the final output deterministic.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


class ArtifactError(ValueError):
    """An input artifact is missing or does not have the expected schema."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publishable(path: Path, mode: int) -> None:
    """mkstemp/mkdtemp make owner-only entries; give the result the usual permissions."""
    os.chmod(path, mode & ~_umask())


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; move it onto `path` on success only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _publishable(tmp_path, 0o666)
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a temporary directory; it replaces `path` (whole) on success only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        _publishable(tmp, 0o777)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def write_json(obj: Any, path: str | Path) -> None:
    """Write JSON atomically, keys sorted, so equal content gives equal bytes."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def to_table(df: pd.DataFrame, schema: pa.Schema, metadata: dict | None = None) -> pa.Table:
    """Convert a frame to a table with exactly `schema`'s columns, in its order."""
    missing = [n for n in schema.names if n not in df.columns]
    if missing:
        raise ArtifactError(f"frame lacks columns {missing} of the schema")
    table = pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)
    if metadata:
        meta = dict(table.schema.metadata or {})
        meta[b"paracl"] = json.dumps(metadata, sort_keys=True, ensure_ascii=False).encode()
        table = table.replace_schema_metadata(meta)
    return table


def write_parquet(
    df: pd.DataFrame, path: str | Path, schema: pa.Schema, metadata: dict | None = None
) -> None:
    """Write one Parquet file atomically. `metadata` is stored under the key 'paracl'."""
    table = to_table(df, schema, metadata)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def check_schema(actual: pa.Schema, expected: pa.Schema, where: str) -> None:
    """Raise ArtifactError naming `where` if a column is missing or has another type."""
    for field in expected:
        idx = actual.get_field_index(field.name)
        if idx < 0:
            raise ArtifactError(
                f"{where}: column '{field.name}' is missing (has: {', '.join(actual.names)})"
            )
        if not actual.field(idx).type.equals(field.type):
            raise ArtifactError(
                f"{where}: column '{field.name}' is {actual.field(idx).type}, expected {field.type}"
            )


def _parquet_files(path: Path) -> list[Path]:
    """A file, or a shard directory's parts in order."""
    if path.is_dir():
        return sorted(path.glob("part-*.parquet"))
    return [path]


def read_parquet(
    path: str | Path, schema: pa.Schema | None = None, columns: list[str] | None = None
) -> pd.DataFrame:
    """Read a Parquet file or shard directory, checking it against `schema`."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    frames = []
    for part in _parquet_files(path):
        try:
            pf = pq.ParquetFile(part)
        except (pa.ArrowInvalid, OSError) as err:
            raise ArtifactError(f"{part}: not a readable Parquet file: {err}") from None
        if schema is not None:
            check_schema(pf.schema_arrow, schema, str(part))
        frames.append(pf.read(columns=columns).to_pandas())
    if not frames:
        if schema is None:
            raise ArtifactError(f"{path}: no shards found")
        return schema.empty_table().to_pandas()
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def read_metadata(path: str | Path) -> dict:
    """The 'paracl' metadata a stage stored in a Parquet file (first shard of a dir)."""
    files = _parquet_files(Path(path))
    if not files:
        return {}
    meta = pq.read_schema(files[0]).metadata or {}
    raw = meta.get(b"paracl")
    return json.loads(raw) if raw else {}


def iter_parts(
    path: str | Path,
    batch_size: int = 10_000,
    schema: pa.Schema | None = None,
    columns: list[str] | None = None,
) -> Iterator[tuple[int, pd.DataFrame]]:
    """(shard index, record batch) of a Parquet file or shard directory, streamed; only
    `columns` if given. The index lets driver-side reductions follow shard boundaries."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    for index, part in enumerate(_parquet_files(path)):
        pf = pq.ParquetFile(part)
        if schema is not None:
            check_schema(pf.schema_arrow, schema, str(part))
        for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
            yield index, batch.to_pandas()


def row_count(path: str | Path) -> int:
    """Rows of a Parquet file or shard directory, from the footers alone."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    return sum(pq.ParquetFile(part).metadata.num_rows for part in _parquet_files(path))


def iter_batches(
    path: str | Path,
    batch_size: int = 10_000,
    schema: pa.Schema | None = None,
    columns: list[str] | None = None,
) -> Iterator[pd.DataFrame]:
    """Stream a Parquet file or shard directory in record batches (bounded memory)."""
    for _, batch in iter_parts(path, batch_size, schema, columns):
        yield batch


def input_checksum(path: str | Path) -> str:
    """What a resume key fingerprints for an input: a file's sha256; for a shard
    directory the sha256 of its `_manifest.json` (which lists every shard's checksum);
    for any other directory (a model) the fingerprint of every file's sha256."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (did the stage that writes it run?)")
    if (path / "_manifest.json").is_file():
        return sha256_file(path / "_manifest.json")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return fingerprint([(str(p.relative_to(path)), sha256_file(p)) for p in files])
    return sha256_file(path)


def fingerprint(*parts: Any) -> str:
    """A short stable hash of JSON-able parts (params, input checksums)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


class ShardedWriter:
    """Write an artifact as a directory of Parquet shards, resumable across crashes.

    Shards are written atomically into `<path>.partial-<key>/` as they finish; `done(i)`
    tells a rerun which shards to skip. `key` must fingerprint everything the shards
    depend on (params, input checksums; see `fingerprint`), so that a rerun with other
    params never reuses stale shards. `finalize()` writes the manifest and moves the
    directory onto `path` in one rename.
    """

    def __init__(self, path: str | Path, schema: pa.Schema, key: str, metadata: dict | None = None):
        self.path = Path(path)
        self.schema = schema
        self.metadata = metadata
        self.partial = self.path.with_name(f"{self.path.name}.partial-{key}")
        for stale in self.path.parent.glob(f"{self.path.name}.partial-*"):
            if stale != self.partial:
                shutil.rmtree(stale)
        self.partial.mkdir(parents=True, exist_ok=True)

    def shard_path(self, index: int) -> Path:
        return self.partial / f"part-{index:05d}.parquet"

    def done(self, index: int) -> bool:
        return self.shard_path(index).exists()

    def write(self, index: int, df: pd.DataFrame) -> None:
        write_parquet(df, self.shard_path(index), self.schema, self.metadata)

    def finalize(self, n_shards: int) -> dict:
        """Check all shards exist, write `_manifest.json`, publish the directory."""
        shards = []
        for i in range(n_shards):
            part = self.shard_path(i)
            if not part.exists():
                raise ArtifactError(f"{part}: shard {i} of {n_shards} was never written")
            shards.append(
                {
                    "file": part.name,
                    "rows": pq.ParquetFile(part).metadata.num_rows,
                    "sha256": sha256_file(part),
                }
            )
        manifest = {"shards": shards, "rows": sum(s["rows"] for s in shards)}
        write_json(manifest, self.partial / "_manifest.json")
        if self.path.exists():
            shutil.rmtree(self.path) if self.path.is_dir() else self.path.unlink()
        os.replace(self.partial, self.path)
        return manifest
