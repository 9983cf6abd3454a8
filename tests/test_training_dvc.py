"""dvc.yaml's train_contrastive stage matches params.yaml and the stage script; its errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from stage_helpers import load_stage

from paracl.params import load_params
from paracl.stage import InputError
from paracl.training.methods import METHODS

REPO = Path(__file__).resolve().parents[1]


def _stage() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["train_contrastive"]


def test_one_stage_per_method_with_only_its_input():
    stage = _stage()
    assert stage["foreach"] == "${train_contrastive.methods}"
    do = stage["do"]
    assert do["cmd"] == "python stages/train_contrastive.py ${key}"
    data_deps = [d for d in do["deps"] if d.startswith("data/")]
    # the method's own input plus the STS dev file of each lang (STS-B, JSTS) it is scored on
    dev = ["data/raw/stsbenchmark/sts-dev.csv", "data/raw/jglue/jsts-v1.3/valid-v1.3.json"]
    assert "${item}" in do["deps"] and data_deps == dev
    # theta only reaches a method through data/ppdb/pairs.parquet
    assert "theta" not in do["params"] and "train_contrastive.methods" not in do["params"]
    assert do["outs"] == ["models/encoders/${key}"]


def test_default_methods_are_known_and_read_existing_contract_paths():
    methods = load_params(REPO / "params.yaml")["train_contrastive"]["methods"]
    assert list(methods) == ["none", "simcse_unsup", "ppdb", "jcse"]
    assert set(methods) <= set(METHODS)
    assert methods["ppdb"] == "data/ppdb/pairs.parquet"
    assert methods["jcse"] == "data/negatives/negatives.parquet"
    assert methods["simcse_unsup"] == "data/corpus/sentences.parquet"


def test_git_repository_without_commits_is_a_clear_error(tmp_path, monkeypatch):
    stage = load_stage("train_contrastive")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="at least one commit.*git commit"):
        stage.open_live(Path("metrics/train/x"))
