"""Helpers for the whole-pipeline smoke tests: a fresh project copy with the smoke preset
applied and the tiny models built, and byte snapshots of its artifacts."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import yaml

from paracl.presets import merge_preset
from paracl.testing.tiny_models import build_tiny_model

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "presets" / "smoke.yaml"
# Directories the smoke preset names as models (relative to the project root).
TINY_MODELS = {"llama": "models/tiny/llama", "bert": "models/tiny/bert"}


def apply_smoke_preset(project: Path) -> dict:
    """Merge presets/smoke.yaml into the project's params.yaml (its runs rewritten, as
    `paracl preset` does); return the result."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    params = merge_preset(params, yaml.safe_load(SMOKE.read_text()))
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return params


def build_smoke_models(project: Path, cache: Path) -> None:
    """The tiny Llama/BERT the preset names, built once into `cache`, copied per project."""
    for arch, rel in TINY_MODELS.items():
        built = cache / arch
        if not built.is_dir():
            build_tiny_model(arch, built)
        shutil.copytree(built, project / rel)


def smoke_project(dest: Path, model_cache: Path) -> Path:
    """A fresh copy of the project (git repo, no stage outputs) set up for the smoke run."""
    from stage_helpers import copy_project

    dest.mkdir(parents=True)
    copy_project(dest)  # tracked files only: no output of a run in the work tree
    # Outputs a commit may hold (metrics/*.json) must not leak into the run either; data/own
    # is the user's folder (its README), a dep of prepare_corpus, not an output.
    for out in ("data", "models", "metrics"):
        for path in sorted((dest / out).glob("*")):
            if path.name != ".gitkeep" and path != dest / "data/own":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    apply_smoke_preset(dest)
    build_smoke_models(dest, model_cache)
    # A checkout has a commit; dvclive (train_contrastive's curves) fails in an empty repo.
    git = ["git", "-c", "user.name=paracl", "-c", "user.email=paracl@localhost"]
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "smoke"], cwd=dest, check=True, capture_output=True)
    return dest


def snapshot(project: Path) -> dict[str, str]:
    """sha256 of every Parquet file under data/ (shard dirs too) and metrics/**/*.json."""
    files = [*project.glob("data/**/*.parquet"), *project.glob("metrics/**/*.json")]
    return {
        str(p.relative_to(project)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(files)
        if p.is_file()
    }
