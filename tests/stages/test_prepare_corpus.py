"""The corpus pipeline end to end on small written fixtures: filters and their counts,
the reproducible cap, determinism across workers, the stage script and its errors."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from stage_helpers import stage_argv

from paracl.core import schemas
from paracl.core.errors import InputError
from paracl.core.io import read_parquet
from paracl.core.params import ParamsError, RunSettings
from paracl.parts.corpus import pipeline
from paracl.parts.corpus.pipeline import CorpusConfig, prepare_corpus, split_shard
from paracl.parts.corpus.readers import Document

REPO = Path(__file__).resolve().parents[2]

SUBJECTS = ["The old teacher", "A young engineer", "My neighbour", "The small company"]
VERBS = ["visited", "described", "photographed"]
OBJECTS = [
    "the new museum near the river",
    "a famous bridge in the northern part of the city",
    "the annual report about public transport",
]
TAILS = ["during the summer of 1998.", "after a long and difficult debate with friends."]

ENGLISH = [" ".join(p) for p in itertools.product(SUBJECTS, VERBS, OBJECTS, TAILS)]  # 72
SHORT = "It rained."
LONG = "The " + " ".join(["very"] * 48) + " long sentence ends here."
GERMAN = "Der alte Lehrer besuchte gestern das neue Museum in der Nähe des Flusses."
FRENCH = "Le vieux professeur a visité le nouveau musée près de la rivière hier soir."


def english_corpus(path: Path) -> Path:
    """72 distinct English sentences plus one each: short, long, duplicate, de, fr;
    one undecodable line and a cut-off last line."""
    lines = ENGLISH[:10] + [SHORT, LONG, ENGLISH[3], GERMAN, FRENCH] + ENGLISH[10:]
    body = "\n".join(lines).encode() + b"\n\xc3\x28 bad bytes\n" + b"A cut-off li"
    path.write_bytes(body)
    return path


def config(source: Path, **overrides) -> CorpusConfig:
    cfg = CorpusConfig(
        source=str(source),
        format="text",
        lang="en",
        min_words=5,
        max_words=50,
        langdetect_threshold=0.99,
        max_sentences=None,
        seed=42,
    )
    return replace(cfg, **overrides)


def run(cfg: CorpusConfig, out: Path, **kwargs) -> tuple[pd.DataFrame, dict]:
    """Run the pipeline into `out`; return the written sentences and the metrics."""
    metrics = prepare_corpus(cfg, out, **kwargs)
    return read_parquet(out), metrics


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return english_corpus(tmp_path_factory.mktemp("corpus") / "wiki.txt")


@pytest.fixture(scope="module")
def full_run(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "sentences.parquet"
    frame, metrics = run(config(corpus), out, workers=1, shard_size=7)
    return frame, metrics, out.read_bytes()


def test_every_filter_is_counted(full_run, corpus):
    frame, metrics, _ = full_run
    assert metrics["sentences_in"] == 77
    assert metrics["dropped"] == {
        "too_short": 1,
        "too_long": 1,
        "duplicate": 1,
        "langdetect": 2,
        "over_max_sentences": 0,
    }
    assert metrics["kept"] == len(frame) == 72
    assert metrics["input"]["undecodable_lines"] == 1
    assert metrics["input"]["truncated_final_lines"] == 1
    assert metrics["tools"]["tokenizer"].startswith("sacremoses")
    assert list(frame["text"]) == ENGLISH  # input order, first occurrence kept
    assert frame["id"].iloc[10] == "wiki:16-0"  # line 16: ids follow the input lines
    assert set(frame["lang"]) == {"en"}
    assert all(frame["n_words"] == frame["tokens"].map(len))
    assert frame["n_words"].between(6, 49).all()


def test_length_filter_is_strict_and_ids_count_dropped_sentences():
    words = ["w"] * 60
    para = " ".join(
        [
            " ".join(words[:4]) + ".",  # 5 tokens: dropped (not more than 5)
            "Ok " + " ".join(words[:4]) + ".",  # 6 tokens: kept
            "Ok " + " ".join(words[:47]) + ".",  # 49 tokens: kept
            "Ok " + " ".join(words[:48]) + ".",  # 50 tokens: dropped (not fewer than 50)
        ]
    )
    records, counts = split_shard(([Document("d:0", "T", [para])], "en", 5, 50))
    assert counts == {"sentences": 4, "too_short": 1, "too_long": 1}
    assert [(r[0], r[1], r[2], len(r[4])) for r in records] == [
        ("d:0", "T", 1, 6),
        ("d:0", "T", 2, 49),
    ]


def test_cap_is_a_reproducible_sample(corpus, full_run, tmp_path):
    frame, _, _ = full_run
    a, meta_a = run(config(corpus, max_sentences=10), tmp_path / "a.parquet", workers=1)
    b, _ = run(config(corpus, max_sentences=10), tmp_path / "b.parquet", workers=1)
    c, _ = run(config(corpus, max_sentences=10, seed=1), tmp_path / "c.parquet", workers=1)
    assert a.equals(b) and len(a) == 10
    assert set(a["id"]) <= set(frame["id"])
    assert list(a["id"]) == [i for i in frame["id"] if i in set(a["id"])]  # input order
    assert set(a["id"]) != set(c["id"])
    assert meta_a["dropped"]["over_max_sentences"] == 74 - meta_a["langdetect_checked"]


def test_output_bytes_do_not_depend_on_workers_or_shards(corpus, full_run, tmp_path, monkeypatch):
    _, metrics_1, bytes_1 = full_run
    out = {name: tmp_path / f"{name}.parquet" for name in ("a", "b", "c", "capped_1", "capped_2")}
    metrics_2 = prepare_corpus(config(corpus), out["a"], workers=2, shard_size=3)
    capped = config(corpus, max_sentences=20)
    prepare_corpus(capped, out["capped_1"], workers=1, shard_size=50)
    # tiny row groups and langdetect windows: their boundaries fall inside the shards
    monkeypatch.setattr(pipeline, "ROW_GROUP", 4)
    monkeypatch.setattr(pipeline, "WINDOW", 4)
    monkeypatch.setattr(pipeline, "MAX_WINDOW", 8)
    prepare_corpus(config(corpus), out["b"], workers=2, shard_size=2)
    prepare_corpus(config(corpus), out["c"], workers=1, shard_size=50)
    prepare_corpus(capped, out["capped_2"], workers=2, shard_size=2)
    assert metrics_1 == metrics_2
    assert out["a"].read_bytes() == bytes_1
    assert out["b"].read_bytes() == out["c"].read_bytes()
    assert pq.ParquetFile(out["b"]).metadata.num_row_groups == 18  # 72 rows / 4
    assert read_parquet(out["b"]).equals(read_parquet(out["a"]))
    assert read_parquet(out["capped_1"]).equals(read_parquet(out["capped_2"]))


def test_japanese_jaquad_run(tmp_path):
    contexts = [
        "東大寺は奈良県奈良市にある華厳宗の大本山の寺院である。"
        "奈良時代には中心堂宇の大仏殿のほか、東西二つの七重塔を含む大伽藍が整備された。\n\n短い。",
        "金閣寺は京都市北区にある臨済宗相国寺派の寺院で、正式には鹿苑寺という。"
        "彼は「美しい。本当に美しい。」と言って、しばらくその場を離れなかった。",
    ]
    data = {"data": [{"title": "寺院", "paragraphs": [{"context": c} for c in contexts]}]}
    (tmp_path / "a.json").write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    cfg = config(tmp_path, format="jaquad", lang="ja")
    frame, metrics = run(cfg, tmp_path / "out" / "sentences.parquet", workers=1)
    assert list(frame["text"]) == [
        "東大寺は奈良県奈良市にある華厳宗の大本山の寺院である。",
        "奈良時代には中心堂宇の大仏殿のほか、東西二つの七重塔を含む大伽藍が整備された。",
        "金閣寺は京都市北区にある臨済宗相国寺派の寺院で、正式には鹿苑寺という。",
        "彼は「美しい。本当に美しい。」と言って、しばらくその場を離れなかった。",
    ]
    assert list(frame["id"]) == ["a:0-0", "a:0-1", "a:0-3", "a:0-4"]
    assert set(frame["title"]) == {"寺院"} and set(frame["lang"]) == {"ja"}
    assert list(frame["tokens"].iloc[0][:3]) == ["東大寺", "は", "奈良"]
    assert metrics["dropped"]["too_short"] == 1  # 短い。
    assert "IPAdic" in metrics["tools"]["dictionary"]


def test_wrong_language_is_a_clear_error(corpus, tmp_path):
    out = tmp_path / "sentences.parquet"
    with pytest.raises(InputError, match="no sentence survived.*Is the input in 'ja'"):
        prepare_corpus(config(corpus, lang="ja"), out, workers=1)
    assert not out.exists() and not list(tmp_path.iterdir())  # nothing half-written


def test_word_bounds_that_admit_nothing_are_a_params_error():
    section = {
        "input": {"en": {"source": "x", "format": "text"}},
        "min_words": 5,
        "max_words": 6,
        "langdetect_threshold": 0.99,
        "max_sentences": None,
    }
    run = RunSettings(seed=1, lang="en", device="cpu", precision="fp32")
    with pytest.raises(ParamsError, match="prepare_corpus.min_words"):
        CorpusConfig.from_params(section, run)


def _run_stage(workdir: Path, **section) -> subprocess.CompletedProcess:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["prepare_corpus"].update(section)
    (workdir / "params.yaml").write_text(yaml.safe_dump(params))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    script, *paths = stage_argv("prepare_corpus", params)
    return subprocess.run(
        [sys.executable, str(REPO / script), *paths],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_stage_script_writes_artifact_and_metrics(tmp_path):
    (tmp_path / "data/raw").mkdir(parents=True)
    english_corpus(tmp_path / "data/raw/wiki.txt")
    source = {
        "en": {"source": "data/raw/wiki.txt", "format": "text"},
        "ja": {"source": "x", "format": "jaquad"},
    }
    done = _run_stage(tmp_path, input=source, workers=2, shard_size=10, max_sentences=30)
    assert done.returncode == 0, done.stderr
    frame = read_parquet(tmp_path / "data/corpus/sentences.parquet", schemas.CORPUS)
    metrics = json.loads((tmp_path / "metrics/corpus.json").read_text())
    assert len(frame) == metrics["kept"] == 30


def test_stage_script_bad_input_is_one_clean_line(tmp_path):
    (tmp_path / "data/own/corpus").mkdir(parents=True)
    (tmp_path / "data/own/corpus/plain.txt").write_text("Just text.\n")
    source = {
        "en": {"source": "data/own/corpus/plain.txt", "format": "wiki40b"},
        "ja": {"source": "x", "format": "jaquad"},
    }
    done = _run_stage(tmp_path, input=source)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "error: data/own/corpus/plain.txt:1: not Wiki-40B text format" in done.stderr
    assert not (tmp_path / "data/corpus/sentences.parquet").exists()


def test_a_source_dvc_does_not_hash_for_the_stage_is_refused_naming_the_param(tmp_path):
    """A source outside data/raw and data/own/corpus (the stage's dvc.yaml deps) could
    change without the stage rerunning: one line says where to put it."""
    english_corpus(tmp_path / "mine.txt")
    source = {
        "en": {"source": "mine.txt", "format": "text"},
        "ja": {"source": "x", "format": "jaquad"},
    }
    done = _run_stage(tmp_path, input=source)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        "'prepare_corpus.input.en.source': mine.txt is not under data/raw or data/own/corpus"
        in done.stderr
    )
    assert not (tmp_path / "data/corpus/sentences.parquet").exists()
