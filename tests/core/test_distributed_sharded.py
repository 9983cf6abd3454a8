"""map_shards: the same artifact bytes on every engine, resume after a crash, empty input."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from paracl.core.distributed.sharded import (
    Engine,
    Shard,
    map_shards,
    parquet_shards,
    stream_shards,
)
from paracl.core.errors import InputError
from paracl.core.io import read_parquet, write_parquet

IN_SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string())])
OUT_SCHEMA = pa.schema([("id", pa.int64()), ("upper", pa.string()), ("shard", pa.int64())])


@dataclass(frozen=True)
class Shout:
    """A shard job that depends only on the rows, the index and its set-up state."""

    suffix: str

    def setup(self) -> str:
        return self.suffix  # as a model would be loaded

    def process(self, suffix: str, shard: Shard) -> pd.DataFrame:
        frame = shard.rows
        return pd.DataFrame(
            {
                "id": frame["id"],
                "upper": [t.upper() + suffix for t in frame["text"]],
                "shard": shard.index,
            }
        )


class Marked(Shout):
    """Each shard's rows marked with the set-up state that processed them."""

    def setup(self) -> str:
        return uuid.uuid4().hex


class Broken(Shout):
    """A job whose model does not load."""

    def setup(self) -> str:
        raise InputError("models/x: not a model directory")


class FailsAt2(Shout):
    def process(self, suffix: str, shard: Shard) -> pd.DataFrame:
        if shard.index == 2:
            raise InputError(f"shard {shard.index}: bad row")
        return super().process(suffix, shard)


class Dies(Shout):
    """A worker killed mid-run (out of memory, SIGKILL)."""

    def process(self, suffix: str, shard: Shard) -> pd.DataFrame:
        if shard.index == 1:
            os._exit(3)
        return super().process(suffix, shard)


@pytest.fixture()
def corpus(tmp_path) -> Path:
    frame = pd.DataFrame({"id": range(23), "text": [f"sentence {i}" for i in range(23)]})
    path = tmp_path / "in.parquet"
    write_parquet(frame, path, IN_SCHEMA)
    return path


def run(corpus: Path, out: Path, engine: Engine, model: bool = False, job=Shout("!")) -> dict:
    return map_shards(
        job,
        parquet_shards(corpus, 5, IN_SCHEMA),
        out=out,
        schema=OUT_SCHEMA,
        key="k1",
        engine=engine,
        metadata={"stage": "test"},
        model=model,
    )


def test_stream_shards_cuts_by_rows_not_by_read_batches():
    frames = [pd.DataFrame({"x": range(i, i + n)}) for i, n in [(0, 3), (3, 9), (12, 1)]]
    shards = list(stream_shards(frames, 5))
    assert [len(s) for s in shards] == [5, 5, 3]
    assert pd.concat(shards)["x"].tolist() == list(range(13))


def test_local_pool_writes_the_inline_bytes(corpus, tmp_path):
    inline = run(corpus, tmp_path / "a.parquet", Engine(workers=1))
    pool = run(corpus, tmp_path / "b.parquet", Engine(workers=2))
    assert inline == pool
    assert [s["rows"] for s in inline["shards"]] == [5, 5, 5, 5, 3]
    out = read_parquet(tmp_path / "a.parquet", OUT_SCHEMA)
    assert out["upper"].tolist()[:2] == ["SENTENCE 0!", "SENTENCE 1!"]
    assert out["shard"].tolist()[-1] == 4
    manifest = json.loads((tmp_path / "a.parquet" / "_manifest.json").read_text())
    assert manifest["rows"] == 23


@pytest.mark.parametrize("workers", [1, 2])
def test_each_worker_sets_the_job_up_once(corpus, tmp_path, workers):
    run(corpus, tmp_path / "out.parquet", Engine(workers=workers), job=Marked(""))
    marks = read_parquet(tmp_path / "out.parquet", OUT_SCHEMA)["upper"]
    states = {u[-32:] for u in marks}
    assert len(states) == workers  # 5 shards, round robin: every worker took some


@pytest.mark.parametrize("workers", [1, 2])
def test_errors_reach_the_driver_as_raised_and_publish_nothing(corpus, tmp_path, workers):
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="^models/x: not a model directory$"):
        run(corpus, out, Engine(workers=workers), job=Broken(""))
    assert not list(tmp_path.glob("out.parquet*"))  # set up before anything is written
    with pytest.raises(InputError, match="^shard 2: bad row$"):
        run(corpus, out, Engine(workers=workers), job=FailsAt2(""))
    assert not out.exists()
    resumed = run(corpus, out, Engine(workers=workers), job=Shout(""))
    assert resumed == run(corpus, tmp_path / "clean.parquet", Engine(), job=Shout(""))


def test_a_local_worker_that_dies_is_an_error_not_a_hang(corpus, tmp_path):
    with pytest.raises(RuntimeError, match=r"worker process died \(exit code 3\)"):
        run(corpus, tmp_path / "out.parquet", Engine(workers=2), job=Dies(""))


def test_crashed_run_resumes_and_recomputes_only_missing_shards(corpus, tmp_path, monkeypatch):
    out = tmp_path / "out.parquet"
    calls: list[int] = []
    real = Shout.process

    def crash_at_3(job, state, shard):
        calls.append(shard.index)
        if shard.index == 3:
            raise RuntimeError("killed")
        return real(job, state, shard)

    monkeypatch.setattr(Shout, "process", crash_at_3)
    with pytest.raises(RuntimeError, match="killed"):
        run(corpus, out, Engine(workers=1))
    assert not out.exists()  # nothing half-published
    assert calls == [0, 1, 2, 3]
    calls.clear()

    def counting(job, state, shard):
        calls.append(shard.index)
        return real(job, state, shard)

    monkeypatch.setattr(Shout, "process", counting)
    resumed = run(corpus, out, Engine(workers=1))
    assert calls == [3, 4]
    monkeypatch.setattr(Shout, "process", real)
    clean = run(corpus, tmp_path / "clean.parquet", Engine(workers=1))
    assert resumed == clean


def test_other_key_never_reuses_stale_shards(corpus, tmp_path):
    out = tmp_path / "out.parquet"
    run(corpus, out, Engine())
    again = map_shards(
        Shout("?"),
        parquet_shards(corpus, 5, IN_SCHEMA),
        out=out,
        schema=OUT_SCHEMA,
        key="k2",
        engine=Engine(),
    )
    assert read_parquet(out, OUT_SCHEMA)["upper"].iloc[0] == "SENTENCE 0?"
    assert again["rows"] == 23


def test_empty_input_gives_an_empty_artifact_with_the_schema(tmp_path):
    path = tmp_path / "empty.parquet"
    write_parquet(pd.DataFrame({"id": [], "text": []}), path, IN_SCHEMA)
    manifest = run(path, tmp_path / "out.parquet", Engine())
    assert manifest["rows"] == 0
    assert read_parquet(tmp_path / "out.parquet", OUT_SCHEMA).empty


@pytest.mark.ray
@pytest.mark.parametrize("model", [False, True], ids=["tasks", "actors"])
def test_ray_writes_the_local_bytes(corpus, tmp_path, local_ray, model):
    local = run(corpus, tmp_path / "local.parquet", Engine(workers=1), model=model)
    engine = Engine(executor="ray", workers=2, model_workers=2, gpus_per_model_worker=1)
    on_ray = run(corpus, tmp_path / "ray.parquet", engine, model=model)
    assert on_ray == local
