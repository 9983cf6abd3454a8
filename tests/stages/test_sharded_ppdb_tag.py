"""Sharded ppdb_substitute, rank_fluency and tag: same bytes on every engine, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from stage_helpers import crash_then_resume, run_stage

from paracl.core import schemas
from paracl.core.distributed.sharded import CountedShards, group_shards, prepend
from paracl.core.distributed.shards import ShardCache
from paracl.core.io import read_parquet, to_table, write_parquet
from paracl.schema import load_params
from paracl.stages import ppdb_substitute as substitute
from paracl.stages import rank_fluency as fluency
from paracl.stages import tag as scoring

REPO = Path(__file__).resolve().parents[2]
LOCAL = {
    "executor": "local",
    "ray_address": None,
    "workers": 1,
    "model_workers": 1,
    "gpus_per_model_worker": 1.0,
}
RAY = {**LOCAL, "executor": "ray", "workers": 2}  # CPU stage: 2 Ray tasks in flight
# model stages: one Ray actor (another process, its own model load; several actors in
# order are covered by tests/core/test_distributed_sharded.py), to keep the test short
RAY_ACTOR = {**LOCAL, "executor": "ray", "model_workers": 1}
WORDS = ["big", "dog", "cat", "red", "small", "house", "runs", "film", "the", "a"]


def manifest(path: str | Path) -> dict:
    return json.loads((Path(path) / "_manifest.json").read_text())


# ---------------------------------------------------------------- grouping


def test_group_shards_keeps_groups_whole_whatever_the_read_batches():
    ids = ["a"] * 3 + ["b"] * 1 + ["c"] * 4 + ["d"] * 2 + ["e"] * 1
    frame = pd.DataFrame({"id": ids, "x": range(len(ids))})
    expected = None
    for batch in (1, 2, 3, 5, 100):
        frames = [frame.iloc[i : i + batch] for i in range(0, len(frame), batch)]
        counted = CountedShards(group_shards(frames, 4), key="id")
        cut = [s["id"].tolist() for s in counted]
        assert cut == (expected or cut)
        expected = cut
        assert (counted.groups, counted.rows) == (5, len(ids))
    assert expected == [["a"] * 3 + ["b"], ["c"] * 4, ["d"] * 2 + ["e"]]
    frames = [frame.iloc[i : i + 3] for i in range(0, len(frame), 3)]
    capped = CountedShards(group_shards(frames, 4, max_groups=3), key="id")
    assert pd.concat(list(capped))["id"].tolist() == ["a"] * 3 + ["b"] + ["c"] * 4
    assert (capped.groups, capped.rows) == (3, 8)
    assert list(group_shards([], 4)) == []


def test_counted_shards_count_rows_and_key_runs_and_prepend_puts_back():
    frames = [
        pd.DataFrame({"id": ["a", "a", "b"]}),
        pd.DataFrame({"id": []}),
        pd.DataFrame({"id": ["b", "c"]}),
    ]
    shards = CountedShards(frames, key="id")
    first = next(shards)
    assert [len(s) for s in prepend(first, shards)] == [3, 0, 2]
    assert (shards.groups, shards.rows, shards.shards) == (4, 5, 3)  # a run per shard
    assert CountedShards(iter(frames)).groups == 0  # no key: rows and shards only


# ---------------------------------------------------------------- ppdb_substitute


def _corpus(n: int) -> pd.DataFrame:
    tokens = [[WORDS[(i * 3 + k) % len(WORDS)] for k in range(5)] + ["."] for i in range(n)]
    frame = pd.DataFrame(
        {
            "id": [f"d{i:03d}-0" for i in range(n)],
            "doc_id": [f"d{i:03d}" for i in range(n)],
            "title": "",
            "text": [" ".join(t[:-1]) + "." for t in tokens],
            "tokens": tokens,
            "n_words": [len(t) for t in tokens],
            "lang": "en",
        }
    )
    frame["n_words"] = frame["n_words"].astype("int32")
    return frame


def _ppdb_params(root: Path, engine: dict) -> dict:
    return {
        **load_params(REPO / "params.yaml"),  # run_stage expands every dvc.yaml stage
        "lang": "en",
        "theta": 0.1,
        "seed": 0,
        "device": "cpu",
        **engine,
        "ppdb_substitute": {
            "dictionary": {
                lang: {"format": "tsv", "path": str(root / "dict.tsv")} for lang in ("en", "ja")
            },
            "max_phrase_words": {"en": 6, "ja": 7},
            "max_substitutions": 1,
            "max_candidates": 3,
            "shard_size": 7,
        },
    }


@pytest.fixture()
def ppdb_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rules = ["big\tlarge\t0.6", "dog\thound\t0.5", "cat\tkitten\t0.4", "the film\tthis movie\t0.7"]
    (tmp_path / "dict.tsv").write_text("\n".join(rules) + "\n", encoding="utf-8")
    write_parquet(_corpus(30), "data/corpus/sentences.parquet", schemas.CORPUS)
    return tmp_path


@pytest.mark.ray
def test_ppdb_substitute_local_and_ray_tasks_write_the_same_bytes(ppdb_dir, local_ray):
    results = {}
    for name, engine in (("local", LOCAL), ("ray", RAY)):
        run_stage("ppdb_substitute", _ppdb_params(ppdb_dir, engine))
        results[name] = (
            manifest("data/ppdb/candidates.parquet"),
            Path("metrics/ppdb_substitute.json").read_text(),
        )
    assert results["local"] == results["ray"]
    man, metrics = results["local"]
    assert len(man["shards"]) == 5 and man["rows"] > 0  # 30 sentences / 7
    assert json.loads(metrics)["sentences"] == 30


def test_ppdb_substitute_resumes_after_a_crash(ppdb_dir):
    params = _ppdb_params(ppdb_dir, LOCAL)
    run_stage("ppdb_substitute", params)
    clean = manifest("data/ppdb/candidates.parquet")
    calls = crash_then_resume(
        substitute.SubstituteJob, "process", lambda: run_stage("ppdb_substitute", params), 2
    )
    assert calls == [2, 3, 4]  # shards 0 and 1 were kept
    assert manifest("data/ppdb/candidates.parquet") == clean


# ---------------------------------------------------------------- rank_fluency


def _fluency_params(model: Path, engine: dict, max_sentences: int | None = None) -> dict:
    return {
        **load_params(REPO / "params.yaml"),  # run_stage expands every dvc.yaml stage
        "seed": 0,
        "lang": "en",
        "device": "cpu",
        **engine,
        "rank_fluency": {
            "model": {"en": str(model), "ja": str(model)},
            "batch_size": 4,
            "max_batch_tokens": {"en": 512, "ja": 512},
            "max_sentences": max_sentences,
            "shard_size": 5,
        },
    }


@pytest.fixture()
def fluency_dir(tmp_path, monkeypatch) -> Path:
    """Sharded candidates as ppdb_substitute writes them (3 candidates per sentence)."""
    monkeypatch.chdir(tmp_path)
    rows = []
    for i in range(8):
        text = f"the {WORDS[i]} sat on the mat ."
        for k in range(3):
            cand = f"the {WORDS[(i + k + 1) % len(WORDS)]} sat on the {WORDS[k]} ."
            rows.append((f"s{i}", text, cand))
    frame = pd.DataFrame(rows, columns=["id", "text", "candidate"])
    frame["rule_sources"] = [["x"]] * len(frame)
    frame["rule_targets"] = [["y"]] * len(frame)
    frame["rule_probs"] = [[0.5]] * len(frame)
    frame["n_candidates"] = 3
    # two input shards that split no sentence: read like one file downstream
    out = ShardCache("data/ppdb/candidates.parquet", "fixture")
    for part, half in enumerate((frame.iloc[:12], frame.iloc[12:])):
        out.put(f"part-{part:05d}", to_table(half, schemas.PPDB_CANDIDATES, {"theta": 0.3}))
    out.publish(["part-00000", "part-00001"])
    write_rules()
    return tmp_path


def write_rules() -> None:
    """The rule table rank_fluency also reads (for ppdb_substitute's metrics)."""
    rules = schemas.PPDB_RULES.empty_table().to_pandas()
    write_parquet(rules, "data/ppdb/rules.parquet", schemas.PPDB_RULES, {"metrics": {}})


@pytest.mark.ray
def test_rank_fluency_local_and_ray_actors_write_the_same_bytes(fluency_dir, tiny_gpt2, local_ray):
    run_stage("rank_fluency", _fluency_params(tiny_gpt2, LOCAL, max_sentences=7))
    local = manifest("data/ppdb/pairs.parquet")
    pairs = read_parquet("data/ppdb/pairs.parquet", schemas.PPDB_PAIRS)
    assert pairs["id"].tolist() == [f"s{i}" for i in range(7)]  # capped on the driver
    assert [s["rows"] for s in local["shards"]] == [2, 2, 2, 1]  # 6 candidates = 2 sentences
    metrics = json.loads(Path("metrics/ppdb.json").read_text())
    assert (metrics["sentences_scored"], metrics["candidates_scored"]) == (7, 21)
    run_stage("rank_fluency", _fluency_params(tiny_gpt2, RAY_ACTOR, max_sentences=7))
    assert manifest("data/ppdb/pairs.parquet") == local
    assert json.loads(Path("metrics/ppdb.json").read_text()) == metrics


def test_rank_fluency_resumes_after_a_crash(fluency_dir, tiny_gpt2):
    params = _fluency_params(tiny_gpt2, LOCAL)
    run_stage("rank_fluency", params)
    clean = manifest("data/ppdb/pairs.parquet")
    calls = crash_then_resume(
        fluency.RankJob, "process", lambda: run_stage("rank_fluency", params), 1
    )
    assert calls == [1, 2, 3]
    assert manifest("data/ppdb/pairs.parquet") == clean


# ---------------------------------------------------------------- tag


def _tag_params(engine: dict) -> dict:
    return {
        **load_params(REPO / "params.yaml"),  # run_stage expands every dvc.yaml stage
        "seed": 0,
        "lang": "en",
        "device": "cpu",
        **engine,
        "tag": {
            "dev_per_share": 1,
            "test_per_share": 1,
            "train_per_share": None,
            "batch_size": 8,
            "heatmap_min_words": 2,
            "heatmap_max_pairs": 5,
            "shard_size": 6,
        },
    }


@pytest.fixture()
def tag_dir(tmp_path, monkeypatch, tiny_bert) -> Path:
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    CrossEncoder(str(tiny_bert), num_labels=1, max_length=64).save_pretrained("models/sts_scorer")
    rows = []
    for i in range(6):
        text = f"the {WORDS[i]} sat on the mat near the {WORDS[i + 1]} ."
        paras = [
            f"a {WORDS[i]} was on the mat by the {WORDS[i + 2]} .",
            "!!",  # empty after symbol removal
            f"a {WORDS[i]} was on the mat by the {WORDS[i + 2]} .",  # duplicate
            f"the {WORDS[i + 3]} sat .",
        ]
        rows += [(f"s{i}", k, text, "", p, "greedy", "greedy") for k, p in enumerate(paras)]
    cols = ["id", "candidate", "text", "pivot", "paraphrase", "forward", "backward"]
    frame = pd.DataFrame(rows, columns=cols)
    frame["candidate"] = frame["candidate"].astype("int32")
    write_parquet(frame, "data/roundtrip/candidates.parquet", schemas.ROUNDTRIP_CANDIDATES)
    return tmp_path


def _tag_outputs() -> tuple:
    return (
        manifest("data/roundtrip/scored.parquet"),
        Path("data/roundtrip/tagged.parquet").read_bytes(),
        Path("metrics/roundtrip/tag.json").read_text(),
        Path("metrics/roundtrip/heatmaps/candidates.csv").read_text(),
    )


@pytest.mark.ray
def test_tag_local_and_ray_actors_write_the_same_bytes(tag_dir, local_ray):
    run_stage("tag", _tag_params(LOCAL))
    local = _tag_outputs()
    metrics = json.loads(local[2])
    assert (metrics["n_candidates"], metrics["n_empty"], metrics["n_duplicates"]) == (24, 6, 6)
    assert metrics["n_scored"] == 12 and metrics["heatmap_pairs"] == 5
    assert [s["rows"] for s in local[0]["shards"]] == [8, 8, 8]  # 2 sentences of 4
    scored = read_parquet("data/roundtrip/scored.parquet", schemas.ROUNDTRIP_SCORED)
    assert scored["dropped"].fillna("").tolist()[:4] == ["", "empty", "duplicate", ""]
    assert scored["sim"].notna().sum() == 12
    run_stage("tag", _tag_params(RAY_ACTOR))
    assert _tag_outputs() == local


def test_tag_resumes_after_a_crash(tag_dir):
    calls = crash_then_resume(
        scoring.ScoreJob,
        "process",
        lambda: run_stage("tag", _tag_params(LOCAL)),
        2,
        "data/roundtrip/scored.parquet",
    )
    assert calls == [2]
    resumed = _tag_outputs()
    run_stage("tag", _tag_params(LOCAL))
    assert _tag_outputs() == resumed


class _FakeScorer:
    """A cross-encoder stand-in whose scores spread over the tag cells (no model load)."""

    def predict(self, pairs, batch_size=32, show_progress_bar=False):
        return [0.7 + (len(a) * 7 + len(b) * 13) % 30 / 100 for a, b in pairs]


def test_tag_split_and_heatmap_from_the_scored_shards(tag_dir, monkeypatch):
    """The driver's streaming pass gives the split an in-memory run gives."""
    from paracl.parts.tags import tagging

    monkeypatch.setattr(scoring.ScoreJob, "setup", lambda job: _FakeScorer())
    params = _tag_params(LOCAL)
    params["tag"].update(heatmap_max_pairs=100, heatmap_min_words=0)
    run_stage("tag", params)
    scored = read_parquet("data/roundtrip/scored.parquet", schemas.ROUNDTRIP_SCORED)
    good = scored[scored["sim_tag"].notna() & scored["bleu_tag"].notna()]
    assert len(good) > 2
    expected, _ = tagging.balanced_split(good.reset_index(drop=True), {"dev": 1, "test": 1}, 0)
    tagged = read_parquet("data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)
    cols = ["id", "paraphrase", "sim", "split"]
    assert tagged[cols].values.tolist() == expected[cols].values.tolist()
    metrics = json.loads(Path("metrics/roundtrip/tag.json").read_text())
    assert metrics["n_high_quality"] == len(good) and metrics["heatmap_pairs"] == 12
    assert metrics["sim_mean"] == pytest.approx(scored["sim"].mean())
    csv = pd.read_csv("metrics/roundtrip/heatmaps/candidates.csv")
    assert len(csv) == 12 and set(csv["sim_bin"]) <= {"70-80", "80-90", "90-100"}
