"""The Japanese path end to end: `lang: ja` (presets/ja.yaml over the smoke preset, tiny
models) through the whole DAG under `dvc repro`.

Every stage must run on its Japanese inputs (JaQuAD corpus, Sudachi synonyms, GiNZA noun
chunks, JSTS dev, the Japanese tasks) and leave its outputs; the artifacts must hold
Japanese text, the PPDB pairs real Sudachi substitutions, and the summary every method
and Japanese task. Slow (a whole `dvc repro`, a few minutes on 2 cores)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from smoke_helpers import REPO, merge_preset, smoke_project
from test_pipeline_dvc import dvc
from test_smoke_pipeline import expected_outputs, finish, start_repro

from paracl.parts.evaluation.tasks import get_task
from paracl.schema import validate_all
from paracl.stages.evaluate import PI, UNSUP

JA_PRESET = REPO / "presets" / "ja.yaml"
# The smoke preset fetches English sources only; the Japanese path reads these too.
JA_SOURCES = ["wiki-ja", "sudachi-synonyms", "jsick", "pawsx"]
KANA_OR_KANJI = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def japanese_smoke_params(params: dict) -> dict:
    """The smoke params with presets/ja.yaml merged over them and the Japanese sources."""
    params = merge_preset(params, yaml.safe_load(JA_PRESET.read_text()))
    params["fetch"]["sources"] = sorted(set(params["fetch"]["sources"]) | set(JA_SOURCES))
    return params


def japanese(texts) -> bool:
    """Every text has kana or kanji."""
    return all(KANA_OR_KANJI.search(t) for t in texts)


@pytest.fixture(scope="module")
def project(tmp_path_factory, mirror) -> Path:
    base = tmp_path_factory.mktemp("japanese")
    dest = smoke_project(base / "ja", base / "tiny-models")
    params = japanese_smoke_params(yaml.safe_load((dest / "params.yaml").read_text()))
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
    git = ["git", "-c", "user.name=paracl", "-c", "user.email=paracl@localhost"]
    subprocess.run([*git, "commit", "-qam", "ja"], cwd=dest, check=True, capture_output=True)
    log = base / "repro.log"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARACL_DATA_MIRROR", str(mirror))
        finish(start_repro(dest, log), log)
    return dest


def test_the_ja_preset_selects_the_japanese_path():
    """presets/ja.yaml over params.yaml is valid and every job and dev file is Japanese."""
    params = merge_preset(
        yaml.safe_load((REPO / "params.yaml").read_text()), yaml.safe_load(JA_PRESET.read_text())
    )
    validate_all(params)
    assert params["lang"] == "ja"
    assert params["train_contrastive"]["methods"]["none"]["input"].startswith("data/raw/jglue/jsts")
    tasks = params["evaluate"]["tasks"]
    assert tasks and all(UNSUP.get(t, PI.get(t)) == "ja" or get_task(t).lang == "ja" for t in tasks)


@pytest.mark.slow
def test_lang_ja_runs_every_stage_on_japanese_data(project):
    missing = [p for p in expected_outputs(project) if not (project / p).exists()]
    assert not missing, f"outputs not written: {missing}"
    status = dvc("status", cwd=project)
    assert status.returncode == 0 and "up to date" in status.stdout, status.stdout

    corpus = pd.read_parquet(project / "data/corpus/sentences.parquet")
    assert len(corpus) and set(corpus["lang"]) == {"ja"} and japanese(corpus["text"])

    pairs = pd.read_parquet(project / "data/ppdb/pairs.parquet")
    assert len(pairs), "no Sudachi substitution survived"
    assert japanese(pairs["paraphrase"]) and (pairs["paraphrase"] != pairs["text"]).all()
    for _, row in pairs.iterrows():  # each pair is the sentence with its rules applied
        for source, target in zip(row["rule_sources"], row["rule_targets"], strict=True):
            assert source in row["text"] and target in row["paraphrase"]
    ppdb = json.loads((project / "metrics/ppdb.json").read_text())
    assert ppdb["dictionary"]["format"] == "sudachi" and ppdb["lang"] == "ja"

    negatives = pd.read_parquet(project / "data/negatives/negatives.parquet")
    assert len(negatives) and japanese(negatives["text"])
    assert json.loads((project / "metrics/negatives.json").read_text())["chunker"] == "ja_ginza"

    params = yaml.safe_load((project / "params.yaml").read_text())
    tasks = params["evaluate"]["tasks"]
    summary = json.loads((project / "metrics/summary.json").read_text())
    text = json.dumps(summary)
    assert all(task in text for task in tasks), text[:2000]
    for method in params["train_contrastive"]["methods"]:
        for task in tasks:
            job = json.loads((project / f"metrics/eval/{method}/{task}.json").read_text())
            assert job, f"empty metrics for {method}/{task}"


def test_train_contrastive_depends_on_the_dev_set_of_every_lang():
    """Under lang: ja train_contrastive scores on JSTS dev: dvc must track that file too
    (it once listed only STS-B dev, so a changed JSTS file reran nothing)."""
    from paracl.core.languages import codes
    from paracl.stages.train_contrastive.training.dev import DEV_SETS

    stage = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["train_contrastive"]
    assert {"en", "ja"} <= set(DEV_SETS) == set(codes())
    assert all(
        any(dev.startswith(d + "/") for d in stage["do"]["deps"]) for dev in DEV_SETS.values()
    )


def test_standin_t5_tokenizer_builds_on_more_kanji_than_pieces(tmp_path):
    """A Japanese corpus has more distinct characters than the stand-in has pieces (the
    smoke preset's 300; the default 10,000 JaQuAD sentences have 3,122 for 3,000 pieces):
    the Unigram trainer failed. Now the rare ones map to <unk> and the common ones stay."""
    from transformers import AutoTokenizer

    from paracl.testing.standins import build_standin_t5

    kanji = [chr(0x4E00 + i) for i in range(600)]
    texts = [f"これは{kanji[i % 600]}{kanji[(7 * i) % 600]}の文です。" for i in range(400)]
    info = build_standin_t5(texts, tmp_path, vocab_size=300, d_model=16, num_layers=1)
    assert "map to <unk>" in info["note"]
    tok = AutoTokenizer.from_pretrained(tmp_path)
    ids = tok("これは文です。")["input_ids"]
    assert tok.unk_token_id not in ids and tok.decode(ids, skip_special_tokens=True) == (
        "これは文です。"
    )
    assert tok.unk_token_id in tok(kanji[599] * 3)["input_ids"]
