"""The learning curve: steps from the runs' training metrics, one line per family, the
CLI's files, and the presets' lengths."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml
from stage_helpers import squeezed

from paracl import presets
from paracl.cli import main
from paracl.learning_curve import family, points, steps

REPO = Path(__file__).resolve().parents[2]

RUN_STEPS = {"simcse_unsup_8": 8, "simcse_unsup_64": 64, "simcse_unsup_32_all": 32}
AVG = {"simcse_unsup_64": (52.0, 1.0), "simcse_unsup_8": (40.0, 0.5),
       "simcse_unsup_32_all": (48.0, 2.0)}  # fmt: skip
SEEDS = (1, 2)
SUMMARY = {
    "methods": {
        "none": {"avg": 30.0, "avg_std": None, "runs": {"none": 30.0}},
        **{m: {"avg": a, "avg_std": sd, "runs": {f"{m}_s{s}": 0.0 for s in SEEDS}}
           for m, (a, sd) in AVG.items()},
    }
}  # fmt: skip


@pytest.fixture
def train_dir(tmp_path) -> Path:
    """metrics/train/<run>.json of two seeds per method, as train_contrastive writes them."""
    out = tmp_path / "train"
    out.mkdir()
    for method, n in RUN_STEPS.items():
        for s in SEEDS:
            (out / f"{method}_s{s}.json").write_text(json.dumps({"steps": n, "seed": s}))
    return out


def test_steps_are_what_the_runs_took(train_dir):
    assert steps(SUMMARY["methods"]["simcse_unsup_8"], train_dir) == 8
    (train_dir / "simcse_unsup_8_s2.json").write_text(json.dumps({"steps": 5}))
    with pytest.raises(ValueError, match=r"took \[5, 8\] steps"):
        steps(SUMMARY["methods"]["simcse_unsup_8"], train_dir)


def test_the_family_drops_the_steps_part_only():
    assert family("simcse_unsup_8", 8) == "simcse_unsup"
    assert family("ppdb_32_all", 32) == "ppdb_all"
    assert family("ppdb", 8) == "ppdb"  # not named by its length: a line of its own


def test_points_by_family_then_steps_without_the_base(train_dir):
    rows = points(SUMMARY, train_dir)
    assert [(r["family"], r["steps"], r["value"]) for r in rows] == [
        ("simcse_unsup", 8, 40.0),
        ("simcse_unsup", 64, 52.0),
        ("simcse_unsup_all", 32, 48.0),
    ]


def test_cli_writes_the_csv_and_the_plot(tmp_path, train_dir, capsys):
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(SUMMARY))
    out = tmp_path / "out"
    args = ["--summary", str(summary), "--train-dir", str(train_dir), "--out-dir", str(out)]
    assert main(["learning-curve", *args]) == 0
    rows = list(csv.DictReader((out / "learning_curve.csv").open()))
    assert [(r["family"], r["steps"]) for r in rows][0] == ("simcse_unsup", "8")
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # another run's committed lines drawn beside these (learning-curve-en-all's check)
    other = tmp_path / "other.csv"
    other.write_text("family,method,steps,avg,avg_std\nppdb,ppdb_8,8,41.5,0.3\n"
                     "simcse_unsup,simcse_unsup_8,8,99.0,\n")  # fmt: skip
    assert main(["learning-curve", *args, "--merge", str(other)]) == 0
    rows = list(csv.DictReader((out / "learning_curve.csv").open()))
    assert ("ppdb", "8", "41.5") in [(r["family"], r["steps"], r["avg"]) for r in rows]
    assert "99.0" not in {r["avg"] for r in rows}  # a family this summary has stays its own
    summary.write_text(json.dumps({"methods": {"none": {"avg": 30.0}}}))
    assert main(["learning-curve", *args]) == 1
    assert "no trained method with an avg" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["learning-curve-en-all"]])
def test_the_presets_draw_8_to_64_steps_per_family(tmp_path, extra):
    params = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", params)
    for name in ["effect-en", "learning-curve-en", *extra]:
        presets.apply_preset(presets.load_preset(name, REPO / "presets"), params)
    train = yaml.safe_load(params.read_text())["train_contrastive"]
    by_family: dict[str, list[int]] = {}
    for method, entry in train["methods"].items():
        if entry["loss"] != "none":  # max_examples / batch: the steps each run takes
            n = entry.get("max_examples", train["max_examples"]) // train["batch_size"]
            by_family.setdefault(family(method, n), []).append(n)
    expected = {"simcse_unsup": [8, 16, 32, 64], "ppdb": [8, 16, 32, 64]}
    if extra:  # a session of its own: the top-4 runs are committed, not rerun
        expected = {"simcse_unsup_all": [8, 32], "ppdb_all": [8, 32]}
    assert by_family == expected


def test_a_committed_curve_renders_as_a_table_and_a_plot(train_dir, tmp_path):
    """results/<name>/learning_curve.csv (the CLI's CSV, committed) renders in the docs as
    a table of steps × family with the base as step 0, and its plot is drawn."""
    from paracl import report
    from paracl.learning_curve import read_csv, table, write_csv

    root = tmp_path / "repo"
    (root / "results" / "lc").mkdir(parents=True)
    (root / "results" / "lc" / "summary.json").write_text(json.dumps(SUMMARY))
    rows = points(SUMMARY, train_dir)
    write_csv(rows, root / "results" / "lc" / "learning_curve.csv")
    assert read_csv(root / "results" / "lc" / "learning_curve.csv") == rows
    text = squeezed(table(rows, 30.0))
    assert "| 0 (none) | 30.0 | 30.0 |" in text and "| 8 | 40.0 ± 0.5 |  |" in text
    page = root / "docs" / "results" / "methods.md"
    page.parent.mkdir(parents=True)
    block = squeezed(report.render_block(root, page, "lc", "curve"))
    assert "| 64 | 52.0 ± 1.0 |  |" in block and "](../img/lc-curve.png)" in block
    (root / "docs" / "img").mkdir()
    assert root / "docs" / "img" / "lc-curve.png" in report.draw_plots(root)
    assert (root / "docs" / "img" / "lc-curve.png").stat().st_size > 1000
