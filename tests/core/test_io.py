"""Atomic writes and schema-checked reads (resumable shards: test_distributed_shards.py)."""

import json

import pandas as pd
import pyarrow as pa
import pytest

from paracl.core import io
from paracl.core.io import ArtifactError

SCHEMA = pa.schema([("id", pa.string()), ("n", pa.int32())])


def frame(n: int, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {"id": [f"s{i}" for i in range(start, start + n)], "n": range(start, start + n)}
    )


def test_write_then_read_round_trip_with_metadata(tmp_path):
    path = tmp_path / "a" / "x.parquet"
    io.write_parquet(frame(3), path, SCHEMA, metadata={"stand_in": True})
    back = io.read_parquet(path, SCHEMA)
    assert back["id"].tolist() == ["s0", "s1", "s2"]
    assert io.read_metadata(path) == {"stand_in": True}
    assert [p.name for p in path.parent.iterdir()] == ["x.parquet"]  # no temp files left


def test_same_frame_gives_same_bytes(tmp_path):
    io.write_parquet(frame(5), tmp_path / "a.parquet", SCHEMA)
    io.write_parquet(frame(5), tmp_path / "b.parquet", SCHEMA)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "x.json"
    io.write_json({"ok": 1}, path)
    with pytest.raises(RuntimeError):
        with io.atomic_path(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert json.loads(path.read_text()) == {"ok": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def test_read_names_file_and_column_on_schema_mismatch(tmp_path):
    path = tmp_path / "x.parquet"
    other = pa.schema([("id", pa.string()), ("n", pa.string())])
    io.write_parquet(pd.DataFrame({"id": ["a"], "n": ["b"]}), path, other)
    with pytest.raises(ArtifactError, match=r"x.parquet: column 'n' is string, expected int32"):
        io.read_parquet(path, SCHEMA)
    with pytest.raises(ArtifactError, match="not found"):
        io.read_parquet(tmp_path / "missing.parquet", SCHEMA)
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(ArtifactError, match="not a readable Parquet file"):
        io.read_parquet(tmp_path / "junk.parquet", SCHEMA)


def test_iter_batches_streams_all_rows(tmp_path):
    path = tmp_path / "x.parquet"
    io.write_parquet(frame(25), path, SCHEMA)
    sizes = [len(b) for b in io.iter_batches(path, batch_size=10, schema=SCHEMA)]
    assert sizes == [10, 10, 5]


def test_fingerprint_is_order_independent_for_dicts():
    assert io.fingerprint({"a": 1, "b": 2}) == io.fingerprint({"b": 2, "a": 1})
    assert io.fingerprint({"a": 1}) != io.fingerprint({"a": 2})


def test_published_files_and_dirs_get_umask_permissions(tmp_path):
    io.write_json({"a": 1}, tmp_path / "x.json")
    with io.atomic_dir(tmp_path / "d") as tmp:
        (tmp / "f").write_text("x")
    mask = io._umask()
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o666 & ~mask
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o777 & ~mask
