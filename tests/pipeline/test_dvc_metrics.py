"""What dvc.yaml declares as metrics stays small, so `dvc metrics show/diff` and `dvc exp
show` lead with the summary's scores and a few key figures per stage.

DVC makes every number of a declared metrics file a column of `dvc exp show` and a line of
`dvc metrics diff`. The stages' full records (provenance, per-set and per-tag tables) are
plain outputs; `metrics:` names each stage's `<name>.key.json` (paracl.core.key_figures) and the
summary's metrics/scores.json. The check runs dvc itself on a throwaway repo holding the
project's dvc.yaml and params.yaml and, at the declared paths, what the stages' own writers
make of the committed default run's records; no stage runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from stage_helpers import REPO, dep_paths, expand_stages, load_stage
from test_pipeline_dvc import dvc
from test_stage_deps import expand_stages as expand_with_every_foreach

from paracl.core.io import read_json, write_json
from paracl.core.key_figures import SUFFIX, key_path, write_metrics
from paracl.stages.summary import scores

SCORES = "metrics/scores.json"
SUMMARY = "metrics/summary.json"
# The default run declares 41 numbers: 6 methods x (Avg., 2 columns) + 5 differences to
# none, and 18 key figures. Every param and dep is a column of `dvc exp show` too (about
# 320 columns), which `--only-changed` leaves out; the metrics themselves must stay few.
MAX_METRICS = 50
MAX_CHANGED_COLUMNS = 20  # `dvc exp show --only-changed` after a θ experiment


def default_stages() -> dict[str, dict]:
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    return expand_stages(pipeline, yaml.safe_load((REPO / "params.yaml").read_text()))


def key_figures(stage: dict) -> tuple[str, ...]:
    """The figures the stage's script copies into its key file (train_contrastive's come
    from its library, paracl.stages.train_contrastive)."""
    script = Path(stage["cmd"].split()[1]).stem
    return load_stage(script).KEY_FIGURES


def test_every_declared_metric_is_key_figures_beside_a_record_or_the_scores():
    for name, stage in expand_with_every_foreach().items():
        outs = dep_paths(stage.get("outs"))
        for path in dep_paths(stage.get("metrics")):
            if path == SCORES:
                assert name == "summary" and SUMMARY in outs, name
                continue
            assert path.endswith(SUFFIX), f"{name}: {path} is not a key-figures file"
            record = path.removesuffix(SUFFIX) + ".json"
            assert key_path(record) == Path(path)
            assert record in outs, f"{name}: declares {path} but not its record {record}"


def write_declared_metrics(root: Path, changes: dict[str, dict] | None = None) -> int:
    """Write every metrics file the default pipeline declares under `root`, as the stages
    would from the committed run's records (metrics/ of the repo), each record updated
    by `changes` ({record path: {key: value}}); return how many were written."""
    changes = changes or {}
    written = 0
    for stage in default_stages().values():
        for path in dep_paths(stage.get("metrics")):
            if path == SCORES:
                summary = read_json(REPO / SUMMARY)
                for method, row in changes.get(SUMMARY, {}).items():
                    summary["methods"][method].update(row)
                write_json(scores(summary), root / SCORES)
            else:
                record_path = path.removesuffix(SUFFIX) + ".json"
                record = read_json(REPO / record_path) | changes.get(record_path, {})
                write_metrics(record, root / record_path, key_figures(stage))
            written += 1
    return written


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _numbers(node) -> list[str]:
    if isinstance(node, dict):
        return [f"{k}.{n}" if n else k for k, v in node.items() for n in _numbers(v)]
    return [""] if isinstance(node, (int, float)) else []


def test_dvc_shows_few_metrics_and_the_summary_averages_first(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("dvc.yaml", "params.yaml"):
        (root / name).write_bytes((REPO / name).read_bytes())
    git("init", "-q", cwd=root)
    assert dvc("init", "-q", cwd=root).returncode == 0
    assert write_declared_metrics(root) > 10
    git("add", "-A", cwd=root)
    git("commit", "-qm", "the default run's metrics", cwd=root)

    proc = dvc("metrics", "show", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    files = json.loads(proc.stdout)[""]["data"]
    assert all("error" not in f for f in files.values()), files
    shown = [f"{path}:{key}" for path, f in files.items() for key in _numbers(f["data"])]
    assert len(shown) <= MAX_METRICS, shown
    methods = read_json(REPO / SUMMARY)["methods"]
    assert {f"{SCORES}:{m}.avg" for m in methods} <= set(shown)
    assert f"{SCORES}:ppdb.pi_en" in shown and "metrics/train/ppdb.key.json:dev_spearman" in shown

    # A θ experiment in the workspace: theta and what ppdb's records say under it
    params = yaml.safe_load((root / "params.yaml").read_text())
    (root / "params.yaml").write_text(yaml.safe_dump(params | {"theta": 0.4}, sort_keys=False))
    write_declared_metrics(
        root,
        {
            "metrics/ppdb_substitute.json": {"rules_kept_theta": 13331, "candidates": 24399},
            SUMMARY: {"ppdb": {"avg": methods["ppdb"]["avg"] - 0.28}},
        },
    )
    proc = dvc("exp", "show", "--only-changed", "--csv", cwd=root)
    assert proc.returncode == 0, proc.stderr
    columns = proc.stdout.splitlines()[0].split(",")
    assert len(columns) <= MAX_CHANGED_COLUMNS, columns
    assert {"theta", "ppdb.avg", "rules_kept_theta", "candidates"} <= set(columns), columns


def test_theta_curve_reads_the_scores_and_a_sweep_saved_before_them():
    """`paracl theta-curve` takes ppdb's score from metrics/scores.json; an exp-show file
    saved when summary.json was the declared metric (results/*/exp-show-*.json) still
    reads."""
    from paracl import theta_curve as tc

    def record(rev: str, theta: float, path: str, data: dict) -> dict:
        params = {"params.yaml": {"data": {"theta": theta}}}
        metrics = {path: {"data": data}}
        return {"rev": rev, "data": {"rev": rev, "params": params, "metrics": metrics}}

    row = {"avg": 73.6, "avg_std": 0.4, "vs_none": {"diff": 0.1}}
    new = record("a1", 0.4, SCORES, {"ppdb": row, "none": {"avg": 73.5}})
    old = record("b2", 0.2, SUMMARY, {"methods": {"ppdb": {"avg": 73.9, "avg_std": 0.2}}})
    points = tc.points([{"rev": "main", "data": {}, "experiments": [new, old]}], metric="avg")
    assert [(p["theta"], p["value"], p["std"]) for p in points] == [
        (0.4, 73.6, 0.4),
        (0.2, 73.9, 0.2),
    ]
    assert tc.summary_of(new)["methods"]["ppdb"]["vs_none"] == {"diff": 0.1}  # report's Δ
