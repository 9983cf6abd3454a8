"""The whole default DAG under `dvc repro` on the smoke preset (presets/smoke.yaml, tiny
models): every stage runs and leaves its outputs, `dvc status` is clean, a second clean
checkout reproduces every Parquet artifact and metrics file byte for byte, and a run
killed in the middle of a stage finishes, on `dvc repro`, with those same bytes.

The two checkouts run at the same time (each `dvc repro` runs its stages one after the
other, mostly on one core), which keeps the module near one pipeline's wall time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from smoke_helpers import smoke_project, snapshot
from stage_helpers import dep_paths, expand_stages, squeezed
from test_pipeline_dvc import dvc

from paracl.core.io import read_parquet

REPO = Path(__file__).resolve().parents[2]


def expected_outputs(project: Path) -> list[str]:
    """Every out/metric path of every stage in the project, foreach/matrix expanded with
    its params as dvc expands them (train_contrastive's runs, evaluate's runs x tasks, a
    foreach over an empty list or mapping: none)."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    pipeline = yaml.safe_load((project / "dvc.yaml").read_text())
    return [
        path
        for stage in expand_stages(pipeline, params).values()
        for path in dep_paths(stage.get("outs")) + dep_paths(stage.get("metrics"))
    ]


def start_repro(project: Path, log: Path) -> subprocess.Popen:
    """`dvc repro` in its own process group (so SIGKILL reaches the stage it runs)."""
    # Two checkouts share a small CPU: one torch thread per stage (a stage's own `threads`
    # param still wins). torch's default pool oversubscribes the cores: train_sts_scorer
    # took 97 s with it, 64 s with one thread (same scores), measured 2025-11-25 on 2 cores.
    env = os.environ | {"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "dvc", "repro"],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def finish(proc: subprocess.Popen, log: Path) -> None:
    assert proc.wait() == 0, log.read_text()[-6000:]


def kill_during_roundtrip(proc: subprocess.Popen, project: Path, log: Path) -> None:
    """SIGKILL the whole run once roundtrip has written its first (not last) shard."""
    shards = project / "data/roundtrip"
    deadline = time.monotonic() + 300
    try:
        while not list(shards.glob("candidates.parquet.partial-*/part-*.parquet")):
            assert proc.poll() is None, (
                "dvc repro ended before roundtrip wrote a shard\n" + (log.read_text()[-4000:])
            )
            assert time.monotonic() < deadline, "roundtrip wrote no shard in time"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass
class Runs:
    first: Path  # an uninterrupted `dvc repro`
    resumed: Path  # a fresh checkout: `dvc repro` killed in roundtrip, then `dvc repro`
    killed_before_output: bool  # the kill came before roundtrip published its output
    logs: tuple[Path, Path]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, mirror) -> Runs:
    base = tmp_path_factory.mktemp("smoke")
    models = base / "tiny-models"
    first = smoke_project(base / "first", models)
    second = smoke_project(base / "second", models)
    logs = (base / "first.log", base / "second.log")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARACL_DATA_MIRROR", str(mirror))
        proc_first = start_repro(first, logs[0])
        try:
            proc_second = start_repro(second, logs[1])
            kill_during_roundtrip(proc_second, second, logs[1])
            killed_before_output = not (second / "data/roundtrip/candidates.parquet").exists()
            finish(start_repro(second, logs[1]), logs[1])
            finish(proc_first, logs[0])
        finally:
            if proc_first.poll() is None:
                os.killpg(proc_first.pid, signal.SIGKILL)
                proc_first.wait()
    return Runs(first, second, killed_before_output, logs)


def test_repro_runs_every_stage_and_leaves_a_clean_status(runs):
    project = runs.first
    missing = [p for p in expected_outputs(project) if not (project / p).exists()]
    assert not missing, f"outputs not written: {missing}"
    status = dvc("status", cwd=project)
    assert status.returncode == 0 and "up to date" in status.stdout, status.stdout
    summary = squeezed((project / "metrics/summary.md").read_text())
    assert "| jcse |" in summary and "| none |" in summary, summary
    hashes = snapshot(project)
    assert_default_paths(project, summary)
    assert any(k.startswith("data/negatives/") for k in hashes)
    assert sum(k.startswith("data/roundtrip/candidates.parquet/part-") for k in hashes) > 1


def assert_default_paths(project: Path, summary: str) -> None:
    """The smoke run takes the default's code paths (issue 30): a causal-LM filler and a
    prompted causal-LM translator, and every default method trained on rows and scored
    on every default task (no "n/a" cell)."""
    defaults = yaml.safe_load((REPO / "params.yaml").read_text())
    for method in defaults["train_contrastive"]["methods"]:
        row = next((r for r in summary.splitlines() if r.startswith(f"| {method} |")), "")
        assert row and "n/a" not in row, f"{method} not trained and scored:\n{summary}"
    filler = json.loads((project / "metrics/adapt_filler.json").read_text())
    assert filler["filler"] == "causal_lm" and filler["adapted"], filler
    for name in ("data/roundtrip/tagged.parquet", "data/paraphraser/generated.parquet"):
        assert len(read_parquet(project / name)) > 0, f"{name} is empty"  # file or shard dir


def test_a_killed_run_resumes_to_the_same_bytes_on_a_fresh_checkout(runs):
    """Reproducibility and resume at once. Every stage of the second checkout ran in
    its own fresh process, so its bytes equal the first run's only if every stage is
    deterministic; roundtrip's only if its resume reuses the finished shards correctly."""
    assert runs.killed_before_output
    assert "resumed: " in runs.logs[1].read_text()  # roundtrip reused the killed run's shards
    status = dvc("status", cwd=runs.resumed)
    assert status.returncode == 0 and "up to date" in status.stdout, status.stdout
    expected, got = snapshot(runs.first), snapshot(runs.resumed)
    differ = sorted(k for k in expected.keys() | got.keys() if expected.get(k) != got.get(k))
    assert not differ, f"not byte-identical to the uninterrupted run: {differ}"
