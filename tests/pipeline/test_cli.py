"""The paracl command line, and the conventions it keeps: --version, a description and
defaults in every --help, one `error:` line and exit status 1 on bad input, silence on a
closed pipe."""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from paracl.cli import SIGPIPE_EXIT, build_parser, main

REPO = Path(__file__).resolve().parents[2]


def test_where_lists_artifacts_of_dvc_yaml(capsys):
    assert main(["where", "--dvc-yaml", str(REPO / "dvc.yaml")]) == 0
    out = capsys.readouterr().out
    assert "fetch" in out and "data/raw" in out
    assert "prepare_corpus" in out and "data/corpus/sentences.parquet" in out


def test_score_gives_a_cosine(capsys, tiny_bert):
    assert main(["score", str(tiny_bert), "a man is playing .", "a man is playing ."]) == 0
    assert abs(float(capsys.readouterr().out) - 1.0) < 1e-4


def _tagged_paraphraser(tiny_bart, out_dir):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from paracl.parts.paraphraser import add_tag_tokens

    tok = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    add_tag_tokens(tok, model)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


def test_paraphrase_generates_one_line_per_sentence(capsys, tiny_bart, tmp_path):
    model = _tagged_paraphraser(tiny_bart, tmp_path / "paraphraser")
    args = ["paraphrase", "a man is playing a guitar .", "the cat sat on the mat ."]
    assert (
        main([*args, "--tags", "<SIM95><BLEU20>", "--model", str(model), "--num-beams", "2"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2


def test_paraphrase_decodes_with_the_projects_params_unless_a_flag_says_otherwise(
    capsys, tiny_bart, tmp_path, monkeypatch
):
    """generate_paraphrases' decoding keys have one value, in params.yaml: the CLI reads
    them there (a flag overrides one), and outside a project names the flags to pass."""
    from paracl.parts import paraphraser

    model = _tagged_paraphraser(tiny_bart, tmp_path / "paraphraser")
    seen = []
    real = paraphraser.generate
    monkeypatch.setattr(paraphraser, "generate", lambda *a, **k: seen.append(k) or real(*a, **k))
    args = ["paraphrase", "a man .", "--tags", "<SIM95><BLEU20>", "--model", str(model)]
    assert main([*args, "--num-beams", "2"]) == 0
    section = yaml.safe_load((REPO / "params.yaml").read_text())["generate_paraphrases"]
    want = {k: section[k] for k in paraphraser.DECODING} | {"num_beams": 2}
    assert {k: seen[0][k] for k in paraphraser.DECODING} == want
    monkeypatch.chdir(tmp_path)  # no params.yaml here
    assert main([*args, "--params", "params.yaml"]) == 1
    err = capsys.readouterr().err
    assert "params.yaml: not found" in err and "--num-beams, --min-ratio" in err


def test_paraphrase_rejects_bad_tags_and_untagged_models(capsys, tiny_bart, tmp_path):
    model = _tagged_paraphraser(tiny_bart, tmp_path / "paraphraser")
    assert main(["paraphrase", "a man .", "--tags", "<SIM96><BLEU20>", "--model", str(model)]) == 1
    assert "must be one SIM tag" in capsys.readouterr().err
    assert main(["paraphrase", "a man .", "--tags", "<SIM95>", "--model", str(model)]) == 1
    capsys.readouterr()
    assert (
        main(["paraphrase", "a man .", "--tags", "<SIM95><BLEU20>", "--model", str(tiny_bart)]) == 1
    )
    assert "no tag token <SIM95>" in capsys.readouterr().err
    assert (
        main(["paraphrase", "a man .", "--tags", "<SIM95><BLEU20>", "--model", str(tmp_path)]) == 1
    )
    assert "run train_paraphraser" in capsys.readouterr().err


def _record(rev, name, theta, dev_avg, experiments=None):
    """One record shaped as in `dvc exp show --json` (DVC 3)."""
    metrics = {"metrics/summary.json": {"data": {"methods": {"ppdb": {"dev_avg": dev_avg}}}}}
    data = {"rev": rev, "params": {"params.yaml": {"data": {"theta": theta}}}, "metrics": metrics}
    return {"rev": rev, "name": name, "data": data, "error": None, "experiments": experiments}


def _queued(rec):
    """The record of an experiment not yet measured (queued or failed): no metrics."""
    rec["data"]["metrics"] = {}
    return rec


EXP_SHOW = [
    _record("workspace", None, 0.5, 70.0),  # a copy of the last experiment: not counted
    _record(
        "b027",
        "main",
        0.3,
        71.2,
        experiments=[
            {"revs": [_record("91ac", "exp-a", 0.5, 70.0)], "executor": None, "name": "exp-a"},
            {"revs": [_record("04fa", "exp-b", 0.1, 70.8)], "executor": None, "name": "exp-b"},
            {"revs": [_record("77aa", "exp-c", 0.1, 71.6)], "executor": None, "name": "exp-c"},
            {"revs": [_queued(_record("88bb", "exp-d", 0.2, None))], "executor": None,
             "name": "exp-d"},
        ],
    ),
]  # fmt: skip


def test_theta_curve_from_exp_show_json(capsys, tmp_path):
    import csv
    import json

    from paracl.theta_curve import points

    assert {p["name"] for p in points(EXP_SHOW)} == {"main", "exp-a", "exp-b", "exp-c"}
    exp = tmp_path / "exp.json"
    exp.write_text(json.dumps(EXP_SHOW))
    out = tmp_path / "metrics"
    assert main(["theta-curve", "--input", str(exp), "--out-dir", str(out)]) == 0
    rows = list(csv.DictReader((out / "theta_curve.csv").open()))
    assert [r["theta"] for r in rows] == ["0.1", "0.3", "0.5"]  # exp-d is not measured yet
    assert float(rows[0]["dev_avg"]) == 71.2 and rows[0]["n_experiments"] == "2"
    assert rows[0]["experiments"] == "exp-b exp-c"
    assert [float(r["dev_avg"]) for r in rows[1:]] == [71.2, 70.0]
    assert (out / "theta_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "theta=0.3" in capsys.readouterr().out


def test_theta_curve_leaves_out_a_baseline_measured_under_other_params(tmp_path):
    """A sweep on top of an uncommitted preset: the commit's own summary (the default
    pipeline's, with a ppdb row) is no θ = 0.3 point; a baseline with the sweep's params is."""
    from paracl.theta_curve import points

    def sweep(base_model_of_commit):
        exp = _record("e1", "exp-a", 0.1, 40.0)
        exp["data"]["params"]["params.yaml"]["data"]["base_model"] = "SmolLM2"
        base = _record("c0", "main", 0.3, 73.9, experiments=[
            {"revs": [exp], "executor": None, "name": "exp-a"}])  # fmt: skip
        base["data"]["params"]["params.yaml"]["data"]["base_model"] = base_model_of_commit
        return [base]

    assert [p["name"] for p in points(sweep("all-MiniLM-L6-v2"))] == ["exp-a"]
    assert sorted(p["name"] for p in points(sweep("SmolLM2"))) == ["exp-a", "main"]


def test_theta_curve_without_the_dev_metric_names_the_experiment(capsys, tmp_path):
    """A sweep measured without fine-tuned tasks (the effect presets before the dev choice:
    test `avg` only) chooses nothing: a one-line error naming the experiment and the
    metric; a test score is refused as the metric to choose on."""
    import json

    def effect(rev, name, theta, avg, std):
        rec = _record(rev, name, theta, None)
        ppdb = rec["data"]["metrics"]["metrics/summary.json"]["data"]["methods"]["ppdb"]
        ppdb.update({"avg": avg, "avg_std": std})
        del ppdb["dev_avg"]  # scores.json leaves out what the run has not got
        return rec

    exp = tmp_path / "exp.json"
    exp.write_text(json.dumps([effect("a1", "main", 0.3, 38.3, 1.4)]))
    out = tmp_path / "metrics"
    assert main(["theta-curve", "--input", str(exp), "--out-dir", str(out)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "experiment main (θ 0.3, |D| all) has no ppdb.dev_avg" in err
    assert main(["theta-curve", "--input", str(exp), "--out-dir", str(out), "--metric", "avg"]) == 1
    err = capsys.readouterr().err
    assert "--metric avg" in err and "never on test" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def _sized(rec, size):
    """The record with ppdb's |D| set as the sweep sets it (its max_examples)."""
    params = rec["data"]["params"]["params.yaml"]["data"]
    params |= {"train_contrastive": {"max_examples": 1024, "methods": {"ppdb": {
        "loss": "infonce", **({} if size is None else {"max_examples": size})}}},
        "rank_fluency": {"max_sentences": 1024}}  # fmt: skip
    return rec


def test_theta_curve_chooses_theta_and_size_on_dev_never_on_test(capsys, tmp_path):
    """PPDB §4.2 / Figure 2: θ and |D| maximise the dev average. Here test peaks at
    (0.3, 1024) and dev at (0.5, 512): the choice is (0.5, 512), in the CSV and the JSON,
    with test written beside it. |D| is ppdb's max_examples (the committed baseline at
    the preset's 1,024 is a point too: only θ and |D| differ from its experiments)."""
    import csv
    import json

    # (theta, |D|) -> (dev, test): the test argmax is not the dev argmax
    table = {
        (0.1, 512): (60.0, 50.0),
        (0.1, 1024): (61.0, 51.0),
        (0.3, 512): (61.5, 52.0),
        (0.3, 1024): (62.0, 55.0),
        (0.5, 512): (63.0, 49.0),
        (0.5, 1024): (62.5, 50.5),
    }
    exps = []
    for i, ((theta, size), (dev, test)) in enumerate(sorted(table.items())):
        if (theta, size) == (0.3, 1024):
            continue  # the baseline commit's point
        rec = _sized(_record(f"e{i}", f"exp-{i}", theta, dev), size)
        ppdb = rec["data"]["metrics"]["metrics/summary.json"]["data"]["methods"]["ppdb"]
        ppdb |= {"dev_avg_std": 0.5, "avg": test, "avg_std": 0.7}
        exps.append({"revs": [rec], "executor": None, "name": f"exp-{i}"})
    base = _sized(_record("c0", "main", 0.3, 62.0, experiments=exps), None)  # 1,024: the cap
    base["data"]["metrics"]["metrics/summary.json"]["data"]["methods"]["ppdb"]["avg"] = 55.0
    exp, out = tmp_path / "exp.json", tmp_path / "metrics"
    exp.write_text(json.dumps([base]))
    assert main(["theta-curve", "--input", str(exp), "--out-dir", str(out)]) == 0
    rows = list(csv.DictReader((out / "theta_curve.csv").open()))
    assert [(float(r["theta"]), int(r["size"])) for r in rows] == sorted(table)  # |D| swept
    assert [(r["theta"], r["size"]) for r in rows if r["chosen"] == "1"] == [("0.5", "512")]
    assert {(r["theta"], r["size"], r["avg"]) for r in rows} >= {("0.3", "1024", "55.0")}
    chosen = json.loads((out / "theta_choice.json").read_text())
    assert (chosen["theta"], chosen["size"], chosen["chosen_on"]) == (0.5, 512, "dev_avg")
    assert (chosen["dev_avg"], chosen["avg"]) == (63.0, 49.0)  # test: reported beside it
    assert chosen["size_param"] == "train_contrastive.methods.ppdb.max_examples"
    assert chosen["grid"] == {"theta": [0.1, 0.3, 0.5], "size": [512, 1024]}
    assert chosen["not_measured"] == []
    assert (
        "theta=0.5  |D|=512  dev_avg=63.00 ± 0.50  avg=49.00 ± 0.70  (n=1)  <- chosen on dev"
        in (capsys.readouterr().out)
    )


def test_theta_curve_joins_sweeps_saved_in_different_sessions(capsys, tmp_path):
    """A sweep run in two checkouts: each `--input` adds its experiments; a file that is
    missing or not JSON is a one-line error naming it."""
    import csv
    import json

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps([_record("a1", "main", 0.3, 71.0)]))
    second.write_text(json.dumps([_queued(_record("c3", "main", 0.5, None, experiments=[
        {"revs": [_record("d4", "exp-e", 0.5, 69.0)], "executor": None, "name": "exp-e"},
    ]))]))  # fmt: skip
    out = tmp_path / "metrics"
    args = ["theta-curve", "--input", str(first), "--input", str(second), "--out-dir", str(out)]
    assert main(args) == 0
    rows = list(csv.DictReader((out / "theta_curve.csv").open()))
    assert [(r["theta"], r["dev_avg"]) for r in rows] == [("0.3", "71.0"), ("0.5", "69.0")]
    capsys.readouterr()
    assert main(["theta-curve", "--input", str(tmp_path / "gone.json")]) == 1
    assert "gone.json" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["theta-curve", "--input", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert "bad.json: not valid JSON" in err and len(err.strip().splitlines()) == 1


def test_theta_curve_without_experiments_fails_clearly(capsys, tmp_path):
    exp = tmp_path / "exp.json"
    exp.write_text("[]")
    assert main(["theta-curve", "--input", str(exp), "--out-dir", str(tmp_path)]) == 1
    assert "dvc exp run --queue" in capsys.readouterr().err
    assert not (tmp_path / "theta_curve.csv").exists()


def test_preset_command_is_wired(capsys, tmp_path):
    import shutil

    params = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", params)
    before = params.read_bytes()
    args = ["preset", "paper-en", "--params", str(params), "--presets-dir", str(REPO / "presets")]
    assert main([*args, "--dry-run"]) == 0
    assert "train_contrastive.base_model" in capsys.readouterr().out
    assert params.read_bytes() == before


# -- a newcomer's mistakes: each answered by one line that says what to do ----------------


def test_a_preset_outside_a_checkout_says_it_is_not_a_paracl_project(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["preset", "ja"]) == 1
    assert capsys.readouterr().err == (
        f"error: {tmp_path}: not a paracl project (no params.yaml, no presets/): run paracl "
        "in your paracl checkout\n"
    )


def _preset_args(tmp_path: Path) -> list[str]:
    import shutil

    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    return ["--params", str(tmp_path / "params.yaml"), "--presets-dir", str(REPO / "presets")]


def test_a_misspelt_preset_gets_a_did_you_mean(capsys, tmp_path):
    assert main(["preset", "effect_en", *_preset_args(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("did you mean `paracl preset effect-en`?\n"), err
    assert main(["preset", "zzz", *_preset_args(tmp_path)]) == 1  # nothing close: the list
    assert "preset not found (known: default" not in capsys.readouterr().err


def test_a_layered_preset_without_its_base_warns_and_with_it_does_not(capsys, tmp_path):
    args = _preset_args(tmp_path)
    assert main(["preset", "effect-en-finetune", *args, "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "warning: effect-en-finetune goes on top of effect-en, whose "
    ), err
    assert "run `paracl preset effect-en` first, then `paracl preset effect-en-finetune`" in err
    assert main(["preset", "effect-en", *args]) == 0
    capsys.readouterr()
    assert main(["preset", "effect-en-finetune", *args]) == 0
    assert capsys.readouterr().err == ""


def test_score_before_dvc_repro_names_the_stage_that_trains_the_encoder(
    capsys, tmp_path, monkeypatch
):
    import shutil

    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["score", "models/encoders/ppdb", "a .", "b ."]) == 1
    assert capsys.readouterr().err == (
        "error: models/encoders/ppdb: not built yet: `dvc repro train_contrastive@ppdb` trains it\n"
    )


def test_version_is_the_installed_packages(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"paracl {version('paracl')}\n"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_has_a_description_and_every_option_help_and_default():
    commands = _subcommands()
    assert len(commands) == 9
    for name, parser in commands.items():
        assert parser.description and len(parser.description) > 20, name
        text = parser.format_help()
        for action in parser._actions:
            assert action.help, f"paracl {name} {action.dest}: no help"
            if action.option_strings and action.default not in (None, argparse.SUPPRESS):
                assert f"(default: {action.default})" in " ".join(text.split()), (name, action)


def test_preset_list_shows_each_presets_purpose_and_time(capsys, tmp_path):
    from paracl.presets import describe

    assert main(["preset", "--list", "--presets-dir", str(REPO / "presets")]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = sorted(p.stem for p in (REPO / "presets").glob("*.yaml"))
    assert [line.split()[0] for line in lines] == names
    purpose, time = describe(REPO / "presets" / "ja.yaml")
    assert f"{purpose}  [{time}]" in lines[names.index("ja")]
    (tmp_path / "new.yaml").write_text("# purpose: a preset without its time\nlang: ja\n")
    assert main(["preset", "--list", "--presets-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path / 'new.yaml'}: no '# time: ...' line in its header comment\n"


# Each command with a bad argument, and the culprit its one error line must name.
BAD = {
    "where": (["--dvc-yaml", "nosuch.yaml"], "nosuch.yaml"),
    "models": None,  # takes no argument: only a usage error (below)
    "score": (["models/encoders/nosuch", "a", "b"], "models/encoders/nosuch"),
    "paraphrase": (["a .", "--tags", "<SIM96><BLEU20>"], "--tags"),
    "preset": (["nosuch"], "not a paracl project"),  # run outside a checkout
    "expand": (["--params", "nosuch.yaml"], "nosuch.yaml"),
    "theta-curve": (["--input", "nosuch.json"], "nosuch.json"),
    "learning-curve": (["--summary", "nosuch.json"], "nosuch.json"),
    "report": (["--check", "--root", "nosuch"], "nosuch"),
}


def test_the_table_of_bad_arguments_covers_every_command():
    assert set(BAD) == set(_subcommands())


@pytest.mark.parametrize("command", [c for c, bad in BAD.items() if bad], ids=str)
def test_bad_input_is_one_error_line_and_exit_status_1(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # every culprit is missing here
    args, culprit = BAD[command]
    assert main([command, *args]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    assert culprit in captured.err and "Traceback" not in captured.err + captured.out


@pytest.mark.parametrize("command", list(BAD), ids=str)
def test_a_usage_error_is_argparses_exit_status_2(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--no-such-option"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: paracl") and "Traceback" not in err
    assert re.match(r"paracl( \S+)?: error: ", err.splitlines()[-1]), err  # the last line says why


def test_where_names_the_line_of_a_malformed_dvc_yaml(capsys, tmp_path):
    (tmp_path / "dvc.yaml").write_text("stages: [a\n")
    assert main(["where", "--dvc-yaml", str(tmp_path / "dvc.yaml")]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith(f"error: {tmp_path / 'dvc.yaml'}:2:1: not valid YAML")
        and err.count("\n") == 1
    )


def test_a_closed_pipe_is_silent():
    """`paracl where | head -1`: the reader is gone before paracl writes (its read end is
    closed at once): no BrokenPipeError traceback, the status a shell gives `cat` (141)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "paracl", "where", "--dvc-yaml", str(REPO / "dvc.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == SIGPIPE_EXIT
    assert err == b""


def test_report_check_says_what_it_checked_or_which_files_are_stale(capsys, tmp_path):
    import shutil

    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "README.md").write_text("# x\n")  # no report block
    assert main(["report", "--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: stale, run `paracl report`: {tmp_path}/docs/reference/params.md\n"
    assert main(["report", "--no-plots", "--root", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["report", "--check", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("checked 0 report blocks in 0 pages and docs/reference/params.md: all")
