"""The DVC pipeline itself: the DAG's shape, which stages θ reaches, and a real
`dvc repro` of the foundation stages on a temporary copy of the project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stage_helpers import copy_project  # the files git tracks (no run's outputs)

REPO = Path(__file__).resolve().parents[2]


def load_stages() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def _paths(entries) -> set[str]:
    return {str(next(iter(e)) if isinstance(e, dict) else e) for e in entries or []}


def _uses_param(stage: dict, name: str) -> bool:
    for entry in stage.get("params", []) or []:
        keys = [entry] if isinstance(entry, str) else [k for v in entry.values() for k in v]
        if any(k == name or k.startswith(name + ".") for k in keys):
            return True
    return False


def downstream_of_param(param: str) -> set[str]:
    """Stages that rerun when `param` changes: those that use it, and everything after."""
    stages = {n: s.get("do", s) for n, s in load_stages().items()}
    produced = {n: _paths(s.get("outs")) for n, s in stages.items()}
    hit = {n for n, s in stages.items() if _uses_param(s, param)}
    grew = True
    while grew:
        grew = False
        hit_outs = set().union(*(produced[n] for n in hit)) if hit else set()
        for name, stage in stages.items():
            deps = _paths(stage.get("deps"))
            depends = any(
                d == o or d.startswith(o.rstrip("/") + "/") for d in deps for o in hit_outs
            )
            if name not in hit and depends:
                hit.add(name)
                grew = True
    return hit


def test_theta_reaches_no_stage_upstream_of_the_dictionary():
    affected = downstream_of_param("theta")
    assert "fetch" not in affected and "prepare_corpus" not in affected
    stages = load_stages()
    if "ppdb_substitute" in stages:
        assert "ppdb_substitute" in affected
        assert not affected & {"roundtrip", "tag", "corrupt"} & set(stages)


def test_every_stage_script_and_package_dep_exists():
    for name, stage in load_stages().items():
        body = stage.get("do", stage)
        script = body["cmd"].split()[1]
        assert (REPO / script).is_file(), f"{name}: {script} missing"
        for dep in _paths(body.get("deps")):
            if dep.startswith(("src/", "stages/")) and "${" not in dep:
                assert (REPO / dep).exists(), f"{name}: dep {dep} missing"


# --- a real dvc repro on a temporary copy ------------------------------------------


def dvc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def tiny_params(dest: Path, **changes) -> None:
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["fetch"]["sources"] = ["wiki-en"]
    params["prepare_corpus"].update(max_sentences=60, workers=1, shard_size=500)
    for key, value in changes.items():
        params[key] = value
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture
def project(tmp_path, mirror, monkeypatch) -> Path:
    monkeypatch.setenv("PARACL_DATA_MIRROR", str(mirror))
    dest = copy_project(tmp_path / "project")
    tiny_params(dest)
    return dest


def test_dvc_dag_shows_fetch_then_prepare_corpus(project):
    proc = dvc("dag", "--md", "prepare_corpus", cwd=project)
    assert proc.returncode == 0, proc.stderr
    nodes = dict(re.findall(r'(node\d+)\["([^"]+)"\]', proc.stdout))
    edges = {(nodes[a], nodes[b]) for a, b in re.findall(r"(node\d+)-->(node\d+)", proc.stdout)}
    assert ("fetch", "prepare_corpus") in edges, proc.stdout


def test_repro_builds_the_corpus_and_is_reproducible(project):
    import pyarrow.parquet as pq

    from paracl.core import schemas

    proc = dvc("repro", "prepare_corpus", cwd=project)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    artifact = project / "data/corpus/sentences.parquet"
    table = pq.read_table(artifact)
    assert table.schema.names[: len(schemas.CORPUS.names)] == schemas.CORPUS.names
    assert 0 < table.num_rows <= 60
    first = artifact.read_bytes()
    metrics = (project / "metrics/corpus.json").read_text()

    status = dvc("status", "prepare_corpus", cwd=project)
    assert "up to date" in status.stdout, status.stdout

    # A forced rerun from scratch gives byte-identical outputs.
    proc = dvc("repro", "-f", "prepare_corpus", cwd=project)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert artifact.read_bytes() == first
    assert (project / "metrics/corpus.json").read_text() == metrics


def test_repro_stops_on_a_bad_param_without_touching_outputs(project):
    tiny_params(project, seed=-1)  # a run-wide key: every stage checks it
    proc = dvc("repro", "fetch", cwd=project)
    assert proc.returncode != 0
    assert "'seed' must be int >= 0, got -1" in proc.stdout + proc.stderr
    assert not (project / "data/raw").exists()
