"""Executors and resumable shards of the corpus stage: an interrupted run resumes from
its finished shards and writes the same bytes as a clean run; Ray tasks give the same
corpus as the local executor."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

from paracl.core.distributed.executor import Done, make_executor
from paracl.core.distributed.shards import ShardCache
from paracl.core.params import ParamsError
from paracl.parts.corpus import pipeline
from paracl.parts.corpus.pipeline import CorpusConfig, cache_key, prepare_corpus

SUBJECTS = ["The old teacher", "A young engineer", "My neighbour", "The small company", "He"]
VERBS = ["visited", "described", "photographed", "praised"]
OBJECTS = ["the new museum near the river", "a famous bridge in the northern city"]
TAILS = ["during the summer of 1998.", "after a long and difficult debate with friends."]
GERMAN = "Der alte Lehrer besuchte gestern das neue Museum in der Nähe des Flusses."


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """80 distinct English lines, a duplicate, a short and a German line."""
    lines = [" ".join(p) for p in itertools.product(SUBJECTS, VERBS, OBJECTS, TAILS)]
    lines[40:40] = [lines[3], "Too short.", GERMAN]
    path = tmp_path_factory.mktemp("src") / "wiki.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def config(source: Path, max_sentences: int | None) -> CorpusConfig:
    return CorpusConfig(str(source), "text", "en", 5, 50, 0.99, max_sentences, 42)


@pytest.mark.parametrize(
    ("phase", "fn_name", "max_sentences"),
    [("split", "split_shard", None), ("langid", "detect_block", 60)],
)
def test_crashed_run_resumes_from_finished_shards(
    source, tmp_path, monkeypatch, phase, fn_name, max_sentences
):
    monkeypatch.setattr(pipeline, "LANGID_BLOCK", 16)  # several langdetect blocks
    monkeypatch.setattr(pipeline, "LANGID_MIN_BLOCK", 4)
    cfg = config(source, max_sentences)
    real = getattr(pipeline, fn_name)
    calls = {"n": 0}

    def counting(task):
        calls["n"] += 1
        if calls["n"] == crash_at:
            raise RuntimeError("simulated crash")
        return real(task)

    monkeypatch.setattr(pipeline, fn_name, counting)
    crash_at = None
    clean = tmp_path / "clean.parquet"
    clean_metrics = prepare_corpus(cfg, clean, shard_size=10)
    clean_calls = calls["n"]
    assert clean_calls >= 4

    out, key = tmp_path / "sentences.parquet", cache_key(cfg, 10)
    calls["n"], crash_at = 0, 3
    with pytest.raises(RuntimeError, match="simulated crash"):
        prepare_corpus(cfg, out, shard_size=10, cache=ShardCache(out, key))
    assert not out.exists()  # nothing half-written
    cached = [n for n in ShardCache(out, key).manifest if n.startswith(phase)]
    assert cached, "no shard of the crashed phase was kept"

    calls["n"], crash_at = 0, None
    cache = ShardCache(out, key)
    resumed_metrics = prepare_corpus(cfg, out, shard_size=10, cache=cache)
    assert cache.loaded >= len(cached)
    assert calls["n"] == clean_calls - len(cached)  # finished shards are not recomputed
    assert resumed_metrics == clean_metrics
    assert out.read_bytes() == clean.read_bytes()


class Square:
    """A job with no state: the square of each task."""

    def setup(self) -> None:
        return None

    def process(self, state: None, x: int) -> int:
        return x * x


def test_local_executor_is_ordered_lazy_and_takes_known_results():
    tasks = [1, Done(100), 3, 4, Done(-1), 6]
    with make_executor(Square(), "local", workers=2) as ex:
        assert list(ex.map(tasks, in_flight=3)) == [1, 100, 9, 16, -1, 36]
        drawn = []

        def endless():
            for i in itertools.count():
                drawn.append(i)
                yield i

        results = ex.map(endless(), in_flight=3)
        assert [next(results) for _ in range(5)] == [0, 1, 4, 9, 16]
        results.close()
        assert len(drawn) <= 5 + 3  # never more than in_flight ahead of the consumer
    with pytest.raises(ParamsError, match="'executor' must be one of"):
        with make_executor(Square(), "dask"):
            pass


def test_ray_executor_without_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ParamsError, match=r"pip install 'paracl\[ray\]'"):
        with make_executor(Square(), "ray", workers=2):
            pass


@pytest.mark.ray
@pytest.mark.parametrize("max_sentences", [None, 25])
def test_ray_executor_writes_the_local_executors_bytes(source, tmp_path, local_ray, max_sentences):
    cfg = config(source, max_sentences)
    local, remote = tmp_path / "local.parquet", tmp_path / "ray.parquet"
    local_metrics = prepare_corpus(cfg, local, workers=1, shard_size=10)
    cache = ShardCache(remote, cache_key(cfg, 7))
    remote_metrics = prepare_corpus(
        cfg, remote, workers=2, shard_size=7, executor="ray", cache=cache
    )
    assert remote_metrics == local_metrics
    assert remote.read_bytes() == local.read_bytes()
    assert os.listdir(cache.dir)  # the Ray run saved its shards as it went
