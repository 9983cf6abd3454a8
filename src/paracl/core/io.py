"""Parquet and JSON IO that never leaves a half-written artifact behind.

Every write goes to a temporary file in the destination's directory and is renamed
into place only when complete (rename is atomic on POSIX). A crash mid-write leaves
the old file, or nothing, never a truncated one. Reads check the artifact's schema
and name the file when it does not match.

Reads never end in a pyarrow traceback: a missing, empty, cut-off or foreign file (or
a shard directory that disagrees with its manifest) raises ArtifactError naming the
file. Streaming reads check every shard's footer and schema before the first batch, so
a stage fails on a damaged input before it has written anything.

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

from paracl.core.errors import UserError


class ArtifactError(UserError, ValueError):
    """An input artifact is missing, unreadable or does not have the expected schema."""


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


def read_json(path: str | Path) -> Any:
    """A JSON input (a manifest, another stage's metrics, a model's info file), or
    ArtifactError naming it when it is missing, empty, cut off or not JSON."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _not_found(path) from None
    except OSError as err:  # a directory, no permission, ...
        raise ArtifactError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not data.strip():
        raise ArtifactError(f"{path}: empty file, expected JSON")
    try:
        return json.loads(data)
    except UnicodeDecodeError:
        raise ArtifactError(f"{path}: binary data, expected JSON") from None
    except json.JSONDecodeError as err:  # cut off, or another text format
        raise ArtifactError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None


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


def _not_found(path: Path) -> ArtifactError:
    return ArtifactError(f"{path}: not found (did the stage that writes it run?)")


def _unreadable(part: Path, err: Exception) -> ArtifactError:
    """pyarrow's reason on one line: 'Parquet magic bytes not found', 'file size is 0', …"""
    reason = " ".join(str(err).split()) or type(err).__name__
    return ArtifactError(f"{part}: not a readable Parquet file ({reason})")


def _manifest_files(manifest: Path) -> list[str]:
    """The shard file names a `_manifest.json` lists, in order."""
    shards = read_json(manifest)
    try:
        return [str(s["file"]) for s in shards["shards"]]
    except (KeyError, TypeError):
        raise ArtifactError(f"{manifest}: not a shard manifest (no 'shards' list)") from None


def _parquet_files(path: Path) -> list[Path]:
    """A file, or a shard directory's parts in order. A directory with a manifest (every
    directory map_shards publishes) must hold exactly the shards it lists: a copy that
    lost or gained a shard would otherwise be read as a smaller or larger artifact."""
    if not path.exists():
        raise _not_found(path)
    if not path.is_dir():
        return [path]
    parts = sorted(path.glob("part-*.parquet"))
    manifest = path / "_manifest.json"
    if not manifest.exists():
        return parts
    listed = _manifest_files(manifest)
    have = {p.name for p in parts}
    for name in listed:
        if name not in have:
            raise ArtifactError(f"{path / name}: listed in {manifest.name} but missing")
    extra = sorted(have - set(listed))
    if extra:
        raise ArtifactError(f"{path / extra[0]}: a shard that {manifest.name} does not list")
    return [path / name for name in listed]


def _open(part: Path, schema: pa.Schema | None = None) -> pq.ParquetFile:
    """A Parquet file's reader (its footer read and, with `schema`, checked)."""
    try:
        pf = pq.ParquetFile(part)
    except (pa.ArrowException, OSError) as err:
        raise _unreadable(part, err) from None
    if schema is not None:
        check_schema(pf.schema_arrow, schema, str(part))
    return pf


def _batches(
    part: Path, pf: pq.ParquetFile, batch_size: int, columns: list[str] | None
) -> Iterator[pa.RecordBatch]:
    """pf's record batches; a damaged page or column chunk names the file."""
    batches = pf.iter_batches(batch_size=batch_size, columns=columns)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(part, err) from None
        yield batch


def read_parquet(
    path: str | Path, schema: pa.Schema | None = None, columns: list[str] | None = None
) -> pd.DataFrame:
    """Read a Parquet file or shard directory, checking it against `schema`."""
    path = Path(path)
    frames = []
    for part in _parquet_files(path):
        pf = _open(part, schema)
        try:
            frames.append(pf.read(columns=columns).to_pandas())
        except (pa.ArrowException, OSError) as err:
            raise _unreadable(part, err) from None
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
    meta = _open(files[0]).schema_arrow.metadata or {}
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
    parts = _parquet_files(Path(path))
    for part in parts:  # every footer and schema first: fail before the first batch
        _open(part, schema)
    for index, part in enumerate(parts):
        for batch in _batches(part, _open(part), batch_size, columns):
            yield index, batch.to_pandas()


def check_parquet(path: str | Path, schema: pa.Schema | None = None) -> int:
    """Check an input artifact before a stage starts work (present, every footer
    readable, every shard of `schema`); return its rows."""
    return sum(_open(part, schema).metadata.num_rows for part in _parquet_files(Path(path)))


def row_count(path: str | Path) -> int:
    """Rows of a Parquet file or shard directory, from the footers alone."""
    return check_parquet(path)


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
        raise _not_found(path)
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
