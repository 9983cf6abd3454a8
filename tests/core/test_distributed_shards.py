"""ShardCache, the one resume rule of every sharded stage: a shard is reused iff its file
matches its manifest line under the same key; `publish` makes the shards the artifact."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from paracl.core import io
from paracl.core.distributed.shards import ShardCache
from paracl.core.io import ArtifactError

SCHEMA = pa.schema([("id", pa.string()), ("n", pa.int32())])


def table(n: int, start: int = 0) -> pa.Table:
    frame = pd.DataFrame(
        {"id": [f"s{i}" for i in range(start, start + n)], "n": range(start, start + n)}
    )
    return io.to_table(frame, SCHEMA)


def test_a_rerun_reuses_finished_shards_and_publishes_the_clean_bytes(tmp_path):
    out = tmp_path / "art"
    ShardCache(out, "k1").put("part-00000", table(2))
    # "crash" here; a rerun with the same key sees shard 0 as done
    rerun = ShardCache(out, "k1")
    assert rerun.has("part-00000") and not rerun.has("part-00001")
    rerun.put("part-00001", table(2, start=2))
    manifest = rerun.publish(["part-00000", "part-00001"])
    assert manifest["rows"] == 4 and len(manifest["shards"]) == 2
    assert io.read_parquet(out, SCHEMA)["n"].tolist() == [0, 1, 2, 3]
    assert sorted(p.name for p in out.iterdir()) == [
        "_manifest.json",
        "part-00000.parquet",
        "part-00001.parquet",
    ]
    assert not list(tmp_path.glob("art.partial-*"))

    clean = ShardCache(tmp_path / "clean", "k1")
    clean.put("part-00000", table(2))
    clean.put("part-00001", table(2, start=2))
    assert clean.publish(["part-00000", "part-00001"]) == manifest


def test_damaged_or_unlisted_shards_are_recomputed_not_trusted(tmp_path):
    out = tmp_path / "x.parquet"
    cache = ShardCache(out, "key1")
    cache.put("langid-0", table(2))
    assert ShardCache(out, "key1").get("langid-0").equals(table(2))
    (cache.dir / "langid-0.parquet").write_bytes(b"garbage")
    assert ShardCache(out, "key1").get("langid-0") is None  # checksum no longer matches
    io.write_parquet(table(1).to_pandas(), cache.dir / "langid-1.parquet", SCHEMA)
    assert not ShardCache(out, "key1").has("langid-1")  # a file with no manifest line


def test_another_key_drops_the_stale_shards_at_its_first_write(tmp_path):
    out = tmp_path / "art"
    ShardCache(out, "old").put("part-00000", table(2))
    fresh = ShardCache(out, "new")
    assert not fresh.has("part-00000")
    # nothing touched before the first write: a run that fails first leaves no trace
    assert (tmp_path / "art.partial-old").exists()
    assert not (tmp_path / "art.partial-new").exists()
    fresh.put("part-00001", table(2))
    assert not (tmp_path / "art.partial-old").exists()
    with pytest.raises(ArtifactError, match="shard 0 of 2 was never written"):
        fresh.publish(["part-00000", "part-00001"])
