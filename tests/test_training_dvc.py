"""dvc.yaml's train_contrastive and evaluate stages follow train_contrastive.methods: one
entry per method, each item depending on its own entry only; the entries' errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from stage_helpers import PAPER_METHODS, dep_paths, expand_stages, load_stage
from test_pipeline_dvc import copy_project, dvc

from paracl.errors import InputError
from paracl.params import ParamsError, load_params
from paracl.training.losses import LOSSES
from paracl.training.methods import method_spec

REPO = Path(__file__).resolve().parents[1]


def _pipeline() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())


def test_one_stage_per_method_depending_on_its_own_entry():
    stage = _pipeline()["stages"]["train_contrastive"]
    assert stage["foreach"] == "${train_contrastive.methods}"
    do = stage["do"]
    assert "${item.input}" in do["deps"]
    # theta reaches a method only through its input; another method's entry never does
    assert "theta" not in do["params"] and "train_contrastive.methods" not in do["params"]
    assert "train_contrastive.methods.${key}" in do["params"]
    assert do["outs"] == ["models/encoders/${key}"]


def test_evaluated_methods_are_the_trained_ones():
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["train_contrastive"]["methods"]["ams"] = PAPER_METHODS["ams"]
    stages = expand_stages(_pipeline(), params)
    trained = {n.split("@")[1] for n in stages if n.startswith("train_contrastive@")}
    evaluated = {n.split("@")[1].split("-")[0] for n in stages if n.startswith("evaluate@")}
    assert trained == evaluated == set(params["train_contrastive"]["methods"])
    assert "models/encoders/ams" in dep_paths(stages["evaluate@ams-unsup_sts_en"]["deps"])


def test_a_continued_method_depends_on_the_encoder_it_starts_from():
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["train_contrastive"]["methods"]["jcse_two_stage"] = PAPER_METHODS["jcse_two_stage"]
    stage = expand_stages(_pipeline(), params)["train_contrastive@jcse_two_stage"]
    assert "models/encoders/jcse" in dep_paths(stage["deps"])  # jcse's output: runs after it


@pytest.mark.parametrize("name", sorted(PAPER_METHODS))
def test_every_paper_method_entry_is_valid(name):
    spec = method_spec(name, PAPER_METHODS[name])
    assert spec.loss == "none" or spec.loss in LOSSES
    assert spec.paper and spec.input == PAPER_METHODS[name]["input"]


def test_default_methods_read_existing_contract_paths():
    methods = load_params(REPO / "params.yaml")["train_contrastive"]["methods"]
    assert list(methods) == ["none", "simcse_unsup", "ppdb", "jcse", "roundtrip", "paraphraser"]
    for name, entry in methods.items():
        assert entry == PAPER_METHODS[name] | entry  # the papers' entries, as the tests use them


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"loss": "jcse", "input": "x", "alhpa": 1.0}, r"unknown key .*jcse\.alhpa.*alpha"),
        ({"loss": "jcse", "input": "x", "alpha": -1.0}, r"jcse'.*alpha must be >= 0"),
        ({"loss": "nope", "input": "x"}, r"jcse\.loss'.*unknown loss 'nope'.*infonce"),
        ({"loss": "none", "input": "x", "alpha": 1.0}, r"loss none takes no params"),
        ({"loss": "ams", "input": "x", "margin": 9.0}, r"margin must be in \[0, pi\]"),
        ({"loss": "ebsim", "input": "x", "aspects": ["rb"]}, r"aspects must be"),
    ],
)
def test_bad_method_entries_name_the_key(entry, message):
    with pytest.raises(ParamsError, match=message):
        method_spec("jcse", entry)


def test_git_repository_without_commits_is_a_clear_error(tmp_path, monkeypatch):
    from paracl.training.run import open_live

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="at least one commit.*git commit"):
        open_live(Path("metrics/train/x"))


def test_stage_refuses_a_method_params_yaml_does_not_have(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["train_contrastive.py", "nope", "a", "b", "c"])
    params = load_params(REPO / "params.yaml")
    with pytest.raises(ParamsError, match="has no 'nope'"):
        load_stage("train_contrastive").main(params)


def test_changing_one_methods_param_reruns_only_that_method(tmp_path: Path) -> None:
    """With dvc itself on a copy of the project (~40 s, nothing trained): fake the
    train_contrastive and evaluate outputs of three methods and `dvc commit` them; then a
    change to jcse's alpha leaves the other methods up to date, and jcse's new encoder
    marks only jcse's evaluations changed."""
    project = copy_project(tmp_path / "project")
    params = load_params(project / "params.yaml")
    every_method = params["train_contrastive"]["methods"]
    # three methods are enough to see "only jcse"; each target costs dvc seconds of hashing
    methods = {name: every_method[name] for name in ("none", "ppdb", "jcse")}
    tasks = params["evaluate"]["tasks"]
    for rel in ["data/raw/stsbenchmark/sts-dev.csv"] + [e["input"] for e in methods.values()]:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("placeholder\n")
    for name in methods:
        (project / f"models/encoders/{name}").mkdir(parents=True)
        (project / f"models/encoders/{name}/weights").write_text(f"{name}\n")
        (project / f"metrics/train/{name}/plots/metrics").mkdir(parents=True)
        (project / f"metrics/train/{name}.json").write_text("{}\n")
        (project / f"metrics/train/{name}/curves.png").write_text("png\n")
        for task in tasks:
            (project / f"metrics/eval/{name}").mkdir(parents=True, exist_ok=True)
            (project / f"metrics/eval/{name}/{task}.json").write_text("{}\n")
    targets = [f"train_contrastive@{n}" for n in methods]
    targets += [f"evaluate@{n}-{t}" for n in methods for t in tasks]
    proc = dvc("commit", "-f", *targets, cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    text = (project / "params.yaml").read_text()
    old = "jcse: {loss: jcse, input: data/negatives/negatives.parquet, alpha: 0.0}"
    assert old in text
    (project / "params.yaml").write_text(text.replace(old, old.replace("0.0", "0.5")))
    changed = _changed(dvc("status", *targets, "--json", cwd=project))
    assert changed == {"train_contrastive@jcse"}

    (project / "models/encoders/jcse/weights").write_text("retrained\n")
    changed = _changed(dvc("status", *targets, "--json", cwd=project))
    assert changed == {"train_contrastive@jcse"} | {f"evaluate@jcse-{t}" for t in tasks}


def _changed(proc: subprocess.CompletedProcess) -> set[str]:
    import json

    assert proc.returncode == 0, proc.stdout + proc.stderr
    return set(json.loads(proc.stdout))
