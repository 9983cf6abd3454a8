"""Every stage's dvc.yaml deps cover the library code it runs, by folder.

DVC reruns a stage only when a dep changes, so a stage that imports a module no dep covers
keeps its cached outputs after a fix to that module. A stage's deps are its module
(src/paracl/stages/<stage>.py), the folders of src/paracl/parts it uses and
src/paracl/core. The static check derives each stage script's import closure with `ast`;
the end-to-end check shows, with dvc itself on a copy of the project, that editing a shared
module marks the stage changed and editing another stage's module does not.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from stage_helpers import dep_paths
from stage_helpers import expand_stages as expand_dvc_stages
from test_pipeline_dvc import copy_project, dvc

from paracl.core.params import RunSettings

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = "paracl"

# --- dvc.yaml, with foreach/matrix expanded -----------------------------------------


def expand_stages() -> dict[str, dict]:
    """Concrete stages as `dvc status` names them (`train_contrastive@ppdb`, ...), values
    from params.yaml, so the deps of every generated stage are checked."""
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    # foreach stages with no item by default (presets/jcse-*.yaml add them): one each
    domain = {"source": "data/raw/jcse/corpora/clinic_corpus.txt", "format": "text"}
    params["prepare_domain"]["corpora"] = params["prepare_domain"]["corpora"] or {"dom": domain}
    params["corrupt"]["unadapted"] = params["corrupt"]["unadapted"] or ["unadapted"]
    titled = {"sentences": "data/corpus/sentences.parquet"}
    params["ebsim_retrieve"]["corpora"] = params["ebsim_retrieve"]["corpora"] or titled
    return expand_dvc_stages(pipeline, params)


def _within(path: str, root: str) -> bool:
    root = root.rstrip("/")
    return path == root or path.startswith(root + "/")


# --- the import closure, covered by folder --------------------------------------------

# Package files that run no stage code: the version string and two docstrings.
NO_STAGE_CODE = {"src/paracl/__init__.py", "src/paracl/stages/__init__.py",
                 "src/paracl/parts/__init__.py"}  # fmt: skip


def module_file(dotted: str) -> Path | None:
    """The file that importing `dotted` runs, if it is a module of the package."""
    base = SRC.joinpath(*dotted.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if dotted.split(".")[0] == PACKAGE and candidate.is_file():
            return candidate
    return None


def imported_modules(path: Path) -> set[Path]:
    """Every paracl module `path` imports, at the top or inside a function (lazily), with
    the packages above it (importing a.b.c runs a/__init__.py and a/b/__init__.py)."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            found |= {
                f for i in range(1, len(parts) + 1) if (f := module_file(".".join(parts[:i])))
            }
    return found


def import_closure(script: Path) -> set[Path]:
    seen: set[Path] = set()
    todo = [script]
    while todo:
        for module in imported_modules(todo.pop()) - seen:
            seen.add(module)
            todo.append(module)
    return seen


STAGES = expand_stages()


def _script(stage: dict) -> str:
    return next(a for a in stage["cmd"].split()[1:] if a.endswith(".py"))


def _by_stage() -> dict[str, list[tuple[str, dict]]]:
    """Generated stages grouped under their dvc.yaml entry, so a failure is reported
    once per entry to edit, not once per foreach item or matrix cell."""
    grouped: dict[str, list[tuple[str, dict]]] = {}
    for name, stage in STAGES.items():
        grouped.setdefault(name.split("@")[0], []).append((name, stage))
    return grouped


def test_the_closure_follows_lazy_imports() -> None:
    """roundtrip imports paracl.parts.llama_batch inside a function only."""
    closure = import_closure(REPO / "stages/roundtrip.py")
    assert SRC / "paracl/parts/llama_batch.py" in closure


def assert_deps_cover_code(name: str, stage: dict) -> None:
    """One expanded stage's deps name every paracl module it imports and no src/ path it
    never imports (also used by the tests of stages whose foreach is empty by default)."""
    deps = dep_paths(stage.get("deps"))
    files = {str(p.relative_to(REPO)) for p in import_closure(REPO / _script(stage))}
    bare = sorted(f for f in files - NO_STAGE_CODE if not any(_within(f, d) for d in deps))
    assert not bare, f"dvc.yaml stage {name!r} imports {bare}: no dep covers them"
    unused = [d for d in deps if d.startswith("src/")
              and not any(_within(f, d) for f in files)]  # fmt: skip
    assert not unused, f"dvc.yaml stage {name!r} lists {unused}, which it never imports"


def assert_params_cover_reads(name: str, stage: dict) -> None:
    """Every top-level params.yaml key the stage's code reads is among its params."""
    script = REPO / _script(stage)
    read = set().union(
        *(top_level_reads(f) for f in {script, *import_closure(script)} if f.suffix == ".py")
    )
    missing = read - EXECUTION_ONLY - listed_params(stage)
    assert not missing, f"dvc.yaml stage {name!r} reads params {sorted(missing)}; list them"


@pytest.mark.parametrize("entry", sorted(_by_stage()))
def test_stage_deps_cover_every_module_it_imports(entry: str) -> None:
    """A stage's deps name its module and the folders it uses; a module it imports that no
    dep covers would keep its cached outputs after a fix to that module."""
    for name, stage in _by_stage()[entry]:
        assert_deps_cover_code(name, stage)


@pytest.mark.parametrize("entry", sorted(_by_stage()))
def test_stage_deps_exist_or_are_stage_outputs(entry: str) -> None:
    """A misspelt dep would make dvc fail only at repro time; a dep that is (inside, or a
    folder of) another stage's output exists only after that stage has run."""
    outputs = [
        path
        for stage in STAGES.values()
        for key in ("outs", "metrics", "plots")
        for path in dep_paths(stage.get(key))
    ]
    absent = sorted(
        {
            dep
            for _, stage in _by_stage()[entry]
            for dep in dep_paths(stage.get("deps"))
            if not (REPO / dep).exists()
            and not any(_within(dep, out) or _within(out, dep) for out in outputs)
        }
    )
    assert not absent, f"dvc.yaml stage {entry!r} lists deps that do not exist: {absent}"


# --- top-level params --------------------------------------------------------------

PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())
TOP_LEVEL = {key for key, value in PARAMS.items() if not isinstance(value, dict)}
# How a stage runs, not what it writes: the sharded stages' tests show local and Ray
# executors, any worker count, write the same bytes, so these rerun nothing.
EXECUTION_ONLY = {"executor", "ray_address", "workers", "model_workers", "gpus_per_model_worker"}


RUN_SETTINGS = {f.name for f in fields(RunSettings)}  # read as `run.seed`, ...


def _run_settings_names(tree: ast.AST) -> set[str]:
    """Names that hold a RunSettings in a file: an argument annotated RunSettings, or a
    name assigned `RunSettings.of(...)` (alone or in a tuple)."""
    names = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)
             and isinstance(a.annotation, ast.Name) and a.annotation.id == "RunSettings"}  # fmt: skip
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        pairs = [(node.targets[0], node.value)]
        if isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple):
            pairs = list(zip(node.targets[0].elts, node.value.elts, strict=False))
        for target, value in pairs:
            if isinstance(target, ast.Name) and ast.unparse(value).startswith("RunSettings.of("):
                names.add(target.id)
    return names


def top_level_reads(path: Path) -> set[str]:
    """Top-level params.yaml keys that `path` reads as `params["key"]`,
    `params.get("key")` or, for the run-wide keys, `run.key` (a RunSettings)."""
    tree = ast.parse(path.read_text())
    settings = _run_settings_names(tree)
    found = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
             and n.attr in RUN_SETTINGS and isinstance(n.value, ast.Name)
             and n.value.id in settings}  # fmt: skip
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            target, key = node.value, node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            target, key = node.func.value, node.args[0].value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "params" and key in TOP_LEVEL:
            found.add(key)
    return found


def listed_params(stage: dict) -> set[str]:
    """The params.yaml sections and keys a stage lists (`tag.theta` counts as `tag`)."""
    listed: set[str] = set()
    for entry in stage.get("params", []):
        keys = [entry] if isinstance(entry, str) else [k for v in entry.values() for k in v]
        listed |= {key.split(".")[0] for key in keys}
    return listed


@pytest.mark.parametrize("entry", sorted(_by_stage()))
def test_stage_lists_every_top_level_param_it_reads(entry: str) -> None:
    """`device` was read by roundtrip, tag, corrupt and five more stages without being
    their param, so `dvc exp run -S device=cuda` kept their CPU outputs. A key the code
    reads must be listed, or changing it leaves a stale cache."""
    assert_params_cover_reads(entry, _by_stage()[entry][0][1])


def test_the_param_check_finds_reads() -> None:
    """The checker itself: roundtrip's closure reads `device`, `precision` and `seed` (as
    `run.device`, ... of a RunSettings in paracl.stages.roundtrip)."""
    script = REPO / "stages/roundtrip.py"
    read = set().union(*(top_level_reads(f) for f in import_closure(script) if f.suffix == ".py"))
    assert {"device", "precision", "seed"} <= read


# --- end to end, with dvc ------------------------------------------------------------


def test_editing_a_shared_module_makes_dvc_rerun_the_stage(tmp_path: Path) -> None:
    """The static check's premise, with dvc itself (~5 s, no stage run): on a copy of the
    project, fake `fetch`'s outputs and `dvc commit` them as if it had run; then an edit
    to a module it does not run leaves it up to date, and one to a shared module it
    imports (io.py) marks it changed."""
    project = copy_project(tmp_path / "project")
    (project / "data/raw").mkdir(parents=True, exist_ok=True)
    (project / "data/raw/placeholder.txt").write_text("not a real download\n")
    (project / "metrics").mkdir(exist_ok=True)
    (project / "metrics/fetch.json").write_text("{}\n")
    proc = dvc("commit", "-f", "fetch", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = dvc("status", "fetch", cwd=project)
    assert "up to date" in proc.stdout, proc.stdout + proc.stderr

    unrelated = project / "src/paracl/stages/train_contrastive/training/trainer.py"
    unrelated.write_text(unrelated.read_text() + "\n# unrelated edit\n")
    proc = dvc("status", "fetch", cwd=project)
    assert "up to date" in proc.stdout, proc.stdout + proc.stderr

    shared = project / "src/paracl/core/io.py"
    shared.write_text(shared.read_text() + "\n# a fix\n")
    proc = dvc("status", "fetch", cwd=project)
    assert "changed deps" in proc.stdout and "src/paracl/core" in proc.stdout, (
        proc.stdout + proc.stderr
    )


if __name__ == "__main__":  # print each stage's closure, to help write its deps
    for stage_name, body in STAGES.items():
        files = sorted(str(p.relative_to(REPO)) for p in import_closure(REPO / _script(body)))
        print(stage_name, *files, sep="\n  ")


def _outputs(stage: dict) -> list[str]:
    """A stage's outs, metrics and plots, as paths."""
    entries = [e for kind in ("outs", "metrics", "plots") for e in stage.get(kind) or []]
    return [next(iter(e)) if isinstance(e, dict) else e for e in entries]


def test_a_schema_edit_reruns_its_stage_alone(tmp_path: Path) -> None:
    """A stage's schema lives in its module: on a copy of the project whose every stage is
    committed as if it had run (placeholder outputs, `dvc commit`), an edit to one help
    string of tag's section leaves every other stage up to date (its descendants rerun
    after it only if its outputs change). An edit to the core's run-wide keys makes all
    stale."""
    project = copy_project(tmp_path / "project")
    for stage in STAGES.values():
        for out in _outputs(stage) + dep_paths(stage.get("deps")):
            path = project / out
            if path.exists():
                continue
            if path.suffix:  # a file; else a folder (data/raw, models/encoders/<run>)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("placeholder\n")
            else:
                path.mkdir(parents=True, exist_ok=True)
                (path / "placeholder.txt").write_text("placeholder\n")
    proc = dvc("commit", "-f", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to date" in dvc("status", cwd=project).stdout

    module = project / "src/paracl/stages/tag.py"
    text = module.read_text()
    assert 'help="candidates per shard, whole sentences"' in text
    module.write_text(text.replace("candidates per shard, whole sentences", "candidates a shard"))
    proc = dvc("status", "--json", cwd=project)
    stale = sorted(yaml.safe_load(proc.stdout))
    assert stale == ["tag"], proc.stdout + proc.stderr

    core = project / "src/paracl/core/params.py"  # what every stage shares: all rerun
    core.write_text(core.read_text().replace("seed for every random choice", "the seed"))
    stale = yaml.safe_load(dvc("status", "--json", cwd=project).stdout)
    committed = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    assert sorted(stale) == sorted(committed), sorted(set(committed) - set(stale))
