"""dvc.yaml's train_contrastive and evaluate stages follow train_contrastive.runs: one run
per method and seed (params.expand_runs), each item depending on its run and its method's
entry only; a method's own training settings; the entries' errors; and the project copy
the dvc tests run on (what git tracks, never a run's outputs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from stage_helpers import PAPER_METHODS, copy_project, dep_paths, expand_stages, load_stage
from test_pipeline_dvc import dvc

from paracl.core.errors import InputError
from paracl.core.params import ParamsError
from paracl.core.params import load_params as read_own_keys
from paracl.parts.losses import LOSSES
from paracl.parts.runs import expand_runs
from paracl.schema import load_params, with_runs
from paracl.stages.train_contrastive.training.methods import method_spec, run_config

REPO = Path(__file__).resolve().parents[2]


def _pipeline() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())


def _params(**methods: dict | None) -> dict:
    """params.yaml with these methods added (None removes one), its runs rewritten."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for name, entry in methods.items():
        if entry is None:
            params["train_contrastive"]["methods"].pop(name)
        else:
            params["train_contrastive"]["methods"][name] = entry
    return with_runs(params)


def test_one_stage_per_run_depending_on_its_run_and_method_entry():
    stage = _pipeline()["stages"]["train_contrastive"]
    assert stage["foreach"] == "${train_contrastive.runs}"
    do = stage["do"]
    assert "${item.input}" in do["deps"]
    # theta reaches a method only through its input; another method's entry never does,
    # nor the list of runs or seeds (adding a seed or a method retrains nothing else)
    for other in ("theta", "train_contrastive.methods", "train_contrastive.runs", "train_contrastive.seeds"):  # fmt: skip
        assert other not in do["params"]
    assert "train_contrastive.runs.${key}" in do["params"]
    assert "train_contrastive.methods.${item.method}" in do["params"]
    assert do["outs"][0] == "models/encoders/${key}"  # then its full metrics record


def test_evaluated_runs_are_the_trained_ones():
    params = _params(ams=PAPER_METHODS["ams"] | {"seeds": [1, 2]})
    stages = expand_stages(_pipeline(), params)
    trained = {n.split("@")[1] for n in stages if n.startswith("train_contrastive@")}
    evaluated = {n.split("@")[1].split("-")[0] for n in stages if n.startswith("evaluate@")}
    assert trained == evaluated == set(params["train_contrastive"]["runs"])
    assert {"ams_s1", "ams_s2", "ppdb"} <= trained  # one seed: the method's own name
    assert "models/encoders/ams_s2" in dep_paths(stages["evaluate@ams_s2-unsup_sts_en"]["deps"])


def test_a_continued_run_depends_on_the_encoder_of_its_own_seed():
    params = _params(jcse_two_stage=PAPER_METHODS["jcse_two_stage"])
    stage = expand_stages(_pipeline(), params)["train_contrastive@jcse_two_stage"]
    assert "models/encoders/jcse" in dep_paths(stage["deps"])  # jcse's output: runs after it
    params["train_contrastive"]["seeds"] = [1, 2]
    stages = expand_stages(_pipeline(), with_runs(params))
    assert "models/encoders/jcse_s2" in dep_paths(stages["train_contrastive@jcse_two_stage_s2"]["deps"])  # fmt: skip


def test_runs_are_methods_times_seeds():
    methods = {
        "none": {"loss": "none", "input": "dev.csv"},
        "ppdb": {"loss": "infonce", "input": "pairs.parquet"},
        "ams": {"loss": "ams", "input": "pairs.parquet", "seeds": [7]},
        "jcse": {"loss": "jcse", "input": "neg.parquet", "seeds": [1, 2]},
        "two": {"loss": "jcse", "input": "models/encoders/jcse/", "data": "nli.tsv", "seeds": [2]},
    }
    assert expand_runs({"methods": methods, "seeds": None}) == {  # the default: one run each
        "none": {"method": "none", "seed": None, "input": "dev.csv"},
        "ppdb": {"method": "ppdb", "seed": None, "input": "pairs.parquet"},
        "ams": {"method": "ams", "seed": 7, "input": "pairs.parquet"},
        "jcse_s1": {"method": "jcse", "seed": 1, "input": "neg.parquet"},
        "jcse_s2": {"method": "jcse", "seed": 2, "input": "neg.parquet"},
        "two": {"method": "two", "seed": 2, "input": "models/encoders/jcse_s2"},
    }
    # shared seeds: every trained method without its own; `none` keeps one run
    runs = expand_runs({"methods": methods, "seeds": [3, 4]})
    assert list(runs) == ["none", "ppdb_s3", "ppdb_s4", "ams", "jcse_s1", "jcse_s2", "two"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seeds": [1, 1]}, r"'train_contrastive\.seeds' must list distinct seeds"),
        ({"seeds": []}, r"'train_contrastive\.seeds' must list distinct seeds"),
        ({"methods": {"ppdb": {"seeds": [2, 2]}}}, r"methods\.ppdb\.seeds' must list distinct"),
        ({"methods": {"none": {"seeds": [1, 2]}}}, r"methods\.none\.seeds': loss none trains"),
        ({"methods": {"ppdb": {"seed": 3}}}, r"methods\.ppdb\.seed' was replaced by seeds: \[3\]"),
        ({"methods": {"two": {"seeds": [3]}}}, r"methods\.two'.*seed 3 continues from jcse's"),
        ({"methods": {"ppdb_s1": {"loss": "infonce", "input": "x", "seeds": [5]}}},
         r"run 'ppdb_s1' is another method's run name too"),
    ],
)  # fmt: skip
def test_bad_seeds_name_the_key(change, message):
    tc = {
        "methods": {
            "none": {"loss": "none", "input": "dev.csv"},
            "jcse": {"loss": "jcse", "input": "neg.parquet", "seeds": [1, 2]},
            "two": {"loss": "jcse", "input": "models/encoders/jcse", "data": "nli.tsv"},
            "ppdb": {"loss": "infonce", "input": "pairs.parquet"},
        },
        "seeds": [1, 2],
    }
    for name, entry in change.get("methods", {}).items():
        tc["methods"][name] = tc["methods"].get(name, {}) | entry
    tc["seeds"] = change.get("seeds", tc["seeds"])
    with pytest.raises(ParamsError, match=message):
        expand_runs(tc)


def test_stale_runs_are_refused_with_the_command_that_rewrites_them(tmp_path):
    from paracl.presets import expand

    path = tmp_path / "params.yaml"
    text = (REPO / "params.yaml").read_text()
    line = "    ppdb: {loss: infonce, input: data/ppdb/pairs.parquet}\n"
    assert line in text
    path.write_text(text.replace(line, line.replace("}", ", seeds: [1, 2]}")))
    with pytest.raises(ParamsError, match=r"runs' is out of date .*ppdb_s1 is missing.*`paracl expand`"):  # fmt: skip
        load_params(path)
    assert expand(path) == [("train_contrastive.runs", ANY, ANY)]
    runs = load_params(path)["train_contrastive"]["runs"]
    assert [runs[r]["seed"] for r in ("ppdb_s1", "ppdb_s2")] == [1, 2] and "ppdb" not in runs
    assert expand(path) == []  # up to date


class _Any:
    def __eq__(self, other) -> bool:
        return True


ANY = _Any()


def test_a_method_sets_shared_training_keys_for_itself(monkeypatch, tmp_path):
    """lr, batch_size, epochs, patience, max_seq_length, freeze_embeddings, train_layers and
    pooling on an entry override the shared key for that method's runs alone, checked as the
    shared key."""
    own = {"lr": 3.0e-5, "batch_size": 512, "epochs": 1, "patience": 5, "max_seq_length": 16,
           "freeze_embeddings": True, "train_layers": 4, "pooling": "cls"}  # fmt: skip
    params = _params(jcse=PAPER_METHODS["jcse"] | own | {"seeds": [1, 2]})
    two = PAPER_METHODS["jcse_two_stage"] | {"seeds": [1, 2]}
    params["train_contrastive"]["methods"]["jcse_two_stage"] = two
    params = with_runs(params)
    seen = {}
    stage = load_stage("train_contrastive")
    monkeypatch.setattr(stage, "run_method", lambda spec, c, r, *paths: seen.update(spec=spec, c=c))
    for run in ("jcse_s2", "jcse_two_stage_s2", "ppdb"):
        monkeypatch.setattr("sys.argv", ["train_contrastive.py", run, "a", "b", "c"])
        stage.main(params)
        cfg, spec = seen["c"], seen["spec"]
        shared = params["train_contrastive"]
        if run == "jcse_s2":
            assert {k: cfg[k] for k in own} == own and spec.seed == 2
        else:  # the other methods keep the shared keys
            assert {k: cfg[k] for k in own} == {k: shared[k] for k in own}
        assert "runs" not in cfg and "seeds" not in cfg  # not this run's: out of its checkpoint key
    assert seen["spec"].seed is None  # ppdb: one run, the top-level seed
    # the continued run starts from the encoder of its own seed
    run = params["train_contrastive"]["runs"]["jcse_two_stage_s2"]
    assert method_spec("jcse_two_stage", two, run).start == "models/encoders/jcse_s2"
    assert run_config(method_spec("ppdb", PAPER_METHODS["ppdb"] | {"lr": 0.5}), {"lr": 1e-5}) == {"lr": 0.5}  # fmt: skip


@pytest.mark.parametrize(
    "own, message",
    [
        ({"lr": 2.0}, r"'train_contrastive\.methods\.ppdb\.lr' must be int or float in \[0\.0, 1\.0\]"),
        ({"batch_size": 1}, r"methods\.ppdb\.batch_size' must be int >= 2"),
        ({"pooling": "max"}, r"methods\.ppdb\.pooling' must be one of 'mean'"),
        ({"freeze_embeddings": "yes"}, r"methods\.ppdb\.freeze_embeddings' must be bool"),
        ({"train_layers": 0}, r"methods\.ppdb\.train_layers' must be int >= 1 \(or null\)"),
        ({"precision": "fp8"}, r"methods\.ppdb\.precision' must be one of 'auto', 'bf16'"),
    ],
)  # fmt: skip
def test_bad_method_settings_are_refused_as_the_shared_key_is(own, message, tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(_params(ppdb=PAPER_METHODS["ppdb"] | own)))
    with pytest.raises(ParamsError, match=message):
        load_params(path)
    with pytest.raises(ParamsError, match=message):  # the stage, reading its own keys
        read_own_keys(load_stage("train_contrastive").Params, path)


@pytest.mark.parametrize("name", sorted(PAPER_METHODS))
def test_every_paper_method_entry_is_valid(name):
    spec = method_spec(name, PAPER_METHODS[name])
    assert spec.loss == "none" or spec.loss in LOSSES
    assert spec.paper and spec.input == PAPER_METHODS[name]["input"]


def test_default_methods_read_existing_contract_paths():
    methods = load_params(REPO / "params.yaml")["train_contrastive"]["methods"]
    assert list(methods) == [
        "none", "simcse_unsup", "ppdb", "jcse", "roundtrip", "paraphraser_bleu20"
    ]  # fmt: skip
    for name, entry in methods.items():
        assert entry == PAPER_METHODS[name] | entry  # the papers' entries, as the tests use them


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"loss": "jcse", "input": "x", "hard_neg": 1.0}, r"unknown key .*hard_neg.*hard_negat"),
        ({"loss": "jcse", "input": "x", "alpha": 1.0}, r"jcse\.alpha' was replaced by hard_neg"),
        ({"loss": "jcse", "input": "x", "hard_negative_weight": "e"}, r"must be a number"),
        ({"loss": "infonce", "input": "x", "tags": "<SIM95><BLEU21>"}, r"jcse\.tags'.*BLEU"),
        ({"loss": "ebsim", "input": "x", "tags": "<SIM95><BLEU20>"}, r"does not read"),
        ({"loss": "nope", "input": "x"}, r"jcse\.loss'.*unknown loss 'nope'.*infonce"),
        ({"loss": "none", "input": "x", "alpha": 1.0}, r"loss none takes no params"),
        ({"loss": "ams", "input": "x", "margin": 9.0}, r"margin must be in \[0, pi\]"),
        ({"loss": "ebsim", "input": "x", "aspects": ["rb"]}, r"aspects must be"),
        ({"loss": "infonce", "input": "x", "paraphrased": ["premise"]}, r"jcse\.paraphrased'"),
        ({"loss": "infonce", "input": "x", "paraphrased": []}, r"jcse\.paraphrased' must"),
        ({"loss": "infonce", "input": "x", "with_original": "yes"}, r"with_original' must"),
        ({"loss": "ebsim", "input": "x", "with_original": True}, r"does not read paraphrase"),
    ],
)
def test_bad_method_entries_name_the_key(entry, message):
    with pytest.raises(ParamsError, match=message):
        method_spec("jcse", entry)


def test_git_repository_without_commits_is_a_clear_error(tmp_path, monkeypatch):
    from paracl.stages.train_contrastive import open_live

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


def test_changing_one_methods_param_reruns_only_its_runs(tmp_path: Path) -> None:
    """With dvc itself on a copy of the project (~40 s, nothing trained): fake the
    train_contrastive and evaluate outputs of none, ppdb and jcse (seeds 1 and 2) and `dvc
    commit` them. Then a change to jcse's loss param marks jcse's two runs alone; a setting
    on ppdb's entry (its own lr) marks ppdb alone; a new shared seed leaves the existing
    runs up to date (an entry's own `seeds` is its param: a seed added there retrains its
    runs); and one run's new encoder marks only that run's evaluations changed.
    (jcse_s2's stage is changed too there: its out differs from the committed one.)"""
    project = copy_project(tmp_path / "project")
    params = yaml.safe_load((project / "params.yaml").read_text())
    every_method = params["train_contrastive"]["methods"]
    # three methods are enough to see "only jcse"; each target costs dvc seconds of hashing
    methods = {name: every_method[name] for name in ("none", "ppdb", "jcse")}
    methods["ppdb"] = methods["ppdb"] | {"seeds": [1]}  # its own seed: one run, named ppdb
    params["train_contrastive"].update(methods=methods, seeds=[1, 2])  # jcse's seeds
    _write(project, params)
    runs = load_params(project / "params.yaml")["train_contrastive"]["runs"]
    assert list(runs) == ["none", "ppdb", "jcse_s1", "jcse_s2"]
    tasks = params["evaluate"]["tasks"][:1]  # one task's evaluations show "only that run's"
    for rel in ["data/raw/stsbenchmark/sts-dev.csv"] + [e["input"] for e in methods.values()]:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("placeholder\n")
    targets = [name for run in runs for name in _fake_outputs(project, run, tasks)]
    proc = dvc("commit", "-f", *targets, cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    weight = methods["jcse"]["hard_negative_weight"]
    methods["jcse"]["hard_negative_weight"] = 0.5  # a loss param: both of jcse's seeds
    _write(project, params)
    changed = _changed(dvc("status", *targets, "--json", cwd=project))
    assert changed == {"train_contrastive@jcse_s1", "train_contrastive@jcse_s2"}

    methods["jcse"]["hard_negative_weight"] = weight  # back as committed
    methods["ppdb"]["lr"] = 1.0e-5  # a method's own training setting: that method alone
    params["train_contrastive"]["seeds"] = [1, 2, 3]  # a new seed: jcse's others stay as they are
    _write(project, params)
    assert list(load_params(project / "params.yaml")["train_contrastive"]["runs"])[-1] == "jcse_s3"
    (project / "models/encoders/jcse_s2/weights").write_text("retrained\n")
    changed = _changed(dvc("status", *targets, "--json", cwd=project))
    retrained = {f"evaluate@jcse_s2-{t}" for t in tasks}  # a new encoder: its evaluations
    assert changed == {"train_contrastive@ppdb", "train_contrastive@jcse_s2"} | retrained


def _write(project: Path, params: dict) -> None:
    """params.yaml with its runs rewritten, as `paracl expand` would."""
    (project / "params.yaml").write_text(yaml.safe_dump(with_runs(params), sort_keys=False))


def _fake_outputs(project: Path, run: str, tasks: list[str]) -> list[str]:
    """Stand-ins for the outputs of train_contrastive@<run> and its evaluations; their
    stage names."""
    (project / f"models/encoders/{run}").mkdir(parents=True)
    (project / f"models/encoders/{run}/weights").write_text(f"{run}\n")
    # exist_ok: a clone holds the committed default run's metrics of the same names
    (project / f"metrics/train/{run}/plots/metrics").mkdir(parents=True, exist_ok=True)
    (project / f"metrics/train/{run}.json").write_text("{}\n")
    (project / f"metrics/train/{run}.key.json").write_text("{}\n")
    (project / f"metrics/train/{run}/curves.png").write_text("png\n")
    (project / f"metrics/eval/{run}").mkdir(parents=True, exist_ok=True)
    for task in tasks:
        (project / f"metrics/eval/{run}/{task}.json").write_text("{}\n")
    return [f"train_contrastive@{run}"] + [f"evaluate@{run}-{t}" for t in tasks]


def test_the_project_copy_holds_what_git_tracks_and_no_run_output(tmp_path):
    """After `dvc repro` the work tree holds outputs no .gitignore hides (metrics/train/...
    /plots/metrics): the copy the dvc tests run on leaves them out. It takes the tracked
    files as the work tree has them (uncommitted edits included), and a new module."""
    src = tmp_path / "src"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
    src.mkdir()
    subprocess.run([*git, "init", "-q"], cwd=src, check=True)
    (src / ".gitignore").write_text("/models/*\n")
    for rel in ("params.yaml", "metrics/corpus.json", "gone.txt"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("committed\n")
    subprocess.run([*git, "add", "-A"], cwd=src, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=src, check=True)
    (src / "params.yaml").write_text("edited\n")  # an uncommitted edit of a tracked file
    (src / "gone.txt").unlink()  # tracked, deleted in the work tree
    generated = ["metrics/train/none/plots/metrics/dev/spearman.tsv", "metrics/eval/x.json"]
    for rel in [*generated, "models/encoders/none/weights", "src/paracl/new.py"]:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("a run's output\n")
    dest = copy_project(tmp_path / "copy", source=src)
    files = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if ".git" not in p.parts}
    assert {f for f in files if (dest / f).is_file()} == {
        ".gitignore", "params.yaml", "metrics/corpus.json", "src/paracl/new.py"
    }  # fmt: skip
    assert (dest / "params.yaml").read_text() == "edited\n"
    assert (dest / ".git").is_dir()


def test_no_stage_writes_where_a_project_copy_takes_untracked_files():
    """copy_project takes new, untracked files under CODE_DIRS: no output may live there."""
    from stage_helpers import CODE_DIRS

    stages = expand_stages(_pipeline(), yaml.safe_load((REPO / "params.yaml").read_text()))
    outputs = [p for st in stages.values() for k in ("outs", "metrics", "plots")
               for p in dep_paths(st.get(k))]  # fmt: skip
    assert outputs and not [p for p in outputs if p.split("/")[0] in CODE_DIRS]


def _changed(proc: subprocess.CompletedProcess) -> set[str]:
    import json

    assert proc.returncode == 0, proc.stdout + proc.stderr
    return set(json.loads(proc.stdout))


def _paraphrased_triplets() -> pd.DataFrame:
    """Two triplets as paraphrase_pairs writes them: each column paraphrased (X -> X'),
    its input text beside it (original_<column>)."""

    frame = pd.DataFrame({"anchor": ["a1", "a2"], "positive": ["b1", "b2"],
                          "negative": ["n1", None]})  # fmt: skip
    out = frame.apply(lambda c: c.map(lambda t: t + "'" if isinstance(t, str) else t))
    out["source_row"], out["paraphrased_by"] = [0, 1], "<SIM95><BLEU20>"
    return out.assign(**{f"original_{c}": frame[c] for c in frame.columns})


@pytest.mark.parametrize(
    "paraphrased, with_original, anchors, positives",
    [
        (None, False, ["a1'", "a2'"], ["b1'", "b2'"]),  # every paraphrased column
        (["anchor", "positive"], False, ["a1'", "a2'"], ["b1'", "b2'"]),  # A'B'
        (["anchor"], False, ["a1'", "a2'"], ["b1", "b2"]),  # A'B
        (["positive"], False, ["a1", "a2"], ["b1'", "b2'"]),  # AB'
        (["anchor", "positive"], True, ["a1", "a2", "a1'", "a2'"],
         ["b1", "b2", "b1'", "b2'"]),  # AB + A'B': the originals first, doubled
    ],
)  # fmt: skip
def test_a_paraphrased_pair_file_trains_as_table_4s_variants(
    paraphrased, with_original, anchors, positives
):
    from paracl.stages.train_contrastive.training.data import paraphrase_view, to_examples

    view = paraphrase_view(_paraphrased_triplets(), paraphrased, with_original, "x.parquet")
    examples = to_examples(view, "x.parquet")
    assert examples["anchor"].tolist() == anchors
    assert examples["positive"].tolist() == positives
    assert "original_anchor" not in view and "source_row" not in view
    assert examples["negative"].isna().sum() == (2 if with_original else 1)  # nulls stay


def test_a_view_of_a_file_without_paraphrases_is_refused():
    from paracl.stages.train_contrastive.training.data import paraphrase_view

    frame = pd.DataFrame({"anchor": ["a"], "positive": ["b"]})
    assert paraphrase_view(frame, None, False, "x").equals(frame)  # other inputs as they are
    with pytest.raises(InputError, match="not a paraphrase_pairs output"):
        paraphrase_view(frame, ["anchor"], False, "x")
    with pytest.raises(InputError, match="'negative' was not paraphrased"):
        paraphrase_view(_paraphrased_triplets().drop(columns="original_negative"), ["negative"],
                        False, "x")  # fmt: skip
