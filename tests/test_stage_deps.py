"""Every stage lists, as deps in dvc.yaml, the library code it runs.

DVC reruns a stage only when a listed dep changes, so a stage that imports a module it
does not list keeps its cached outputs after a fix to that module. The static check
derives each stage script's import closure inside src/paracl with `ast` and asserts that
dvc.yaml covers it; the end-to-end check shows, with dvc itself on a copy of the project,
that editing a shared module then marks the stage changed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from stage_helpers import dep_paths
from stage_helpers import expand_stages as expand_dvc_stages
from test_pipeline_dvc import copy_project, dvc

REPO = Path(__file__).resolve().parents[1]
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


# --- the import closure ------------------------------------------------------------


def module_file(dotted: str) -> Path | None:
    """The file that importing `dotted` runs, if it is a module of the package."""
    if dotted != PACKAGE and not dotted.startswith(PACKAGE + "."):
        return None
    base = SRC.joinpath(*dotted.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _with_parents(dotted: str) -> Iterator[str]:
    """Importing a.b.c runs a/__init__.py and a/b/__init__.py first."""
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, in function bodies too (a lazy import still runs), except
    under `if TYPE_CHECKING:`, which never runs."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _import_nodes(ast.Module(body=[child], type_ignores=[]))
            continue
        yield from _import_nodes(node)


def imported_modules(path: Path) -> set[str]:
    """Dotted names of the package modules that running `path` imports directly."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    own = _module_name(path) if path.is_relative_to(SRC) else ""
    found: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(_with_parents(alias.name))
            continue
        if node.level:  # relative: resolved against this module's package
            anchor = own.split(".") if is_package else own.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        found.update(_with_parents(base))
        for alias in node.names:  # `from paracl.x import y` runs paracl/x/y.py if y is one
            if alias.name != "*" and module_file(f"{base}.{alias.name}"):
                found.add(f"{base}.{alias.name}")
    return {m for m in found if module_file(m)}


def package_data(script: Path) -> set[Path]:
    """Data files (e.g. fetch/sources.tsv) of the packages the script itself imports from:
    those are the packages whose functions it calls. A package reached only through a
    shared module (stage.py imports paracl.fetch for FetchError) has its code run, which
    the closure counts, but not its data read."""
    files: set[Path] = set()
    for node in _import_nodes(ast.parse(script.read_text())):
        named = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
        for dotted in named:
            init = module_file(dotted or "")
            if init is not None and init.name == "__init__.py":
                files |= {p for p in init.parent.iterdir() if p.is_file() and p.suffix != ".py"}
    return files


def import_closure(script: Path) -> set[Path]:
    """Every file of src/paracl that running `script` executes (or reads as data)."""
    seen: set[Path] = set()
    todo = [script]
    while todo:
        for dotted in imported_modules(todo.pop()):
            target = module_file(dotted)
            if target is not None and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen | package_data(script)


# --- the checks ----------------------------------------------------------------------

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


def test_closure_follows_lazy_and_submodule_imports(tmp_path: Path) -> None:
    """The resolver itself, on the shapes of import the stages use."""
    script = tmp_path / "stage.py"
    script.write_text(
        "from paracl.roundtrip import tagging\n"
        "from paracl.stage import run\n"
        "def later():\n"
        "    from paracl.models import resolve_model\n"
        "    import paracl.distributed.sharded\n"
    )
    closure = {str(p.relative_to(REPO)) for p in import_closure(script)}
    assert {
        "src/paracl/__init__.py",
        "src/paracl/roundtrip/__init__.py",
        "src/paracl/roundtrip/tagging.py",
        "src/paracl/models.py",
        "src/paracl/distributed/__init__.py",
        "src/paracl/distributed/sharded.py",
        "src/paracl/errors.py",
    } <= closure
    assert "src/paracl/fetch/sources.tsv" not in closure  # data files only where read
    script.write_text("from paracl.fetch import fetch\n")
    assert REPO / "src/paracl/fetch/sources.tsv" in import_closure(script)


def test_closure_follows_relative_imports_and_skips_type_checking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shapes no module uses yet, on a made-up package: relative imports count, imports
    under `if TYPE_CHECKING:` (which never run) do not."""
    pkg = tmp_path / PACKAGE
    for rel, text in {
        "__init__.py": "",
        "a/__init__.py": "from . import b\n",
        "a/b.py": "from ..c import thing\nfrom .. import d\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import paracl.e\n",
        "d.py": "",
        "e.py": "",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    script = tmp_path / "stage.py"
    script.write_text("import paracl.a\n")
    closure = {str(p.relative_to(pkg)) for p in import_closure(script)}
    assert closure == {"__init__.py", "a/__init__.py", "a/b.py", "c.py", "d.py"}


@pytest.mark.parametrize("entry", sorted(_by_stage()))
def test_stage_lists_every_module_it_imports(entry: str) -> None:
    missing: set[str] = set()
    for name, stage in _by_stage()[entry]:
        script = _script(stage)
        deps = dep_paths(stage.get("deps"))
        assert script in deps, f"{name}: its own script {script} is not a dep"
        needed = (str(p.relative_to(REPO)) for p in import_closure(REPO / script))
        missing |= {f for f in needed if not any(_within(f, d) for d in deps)}
    assert not missing, (
        f"dvc.yaml stage {entry!r} runs library files its deps do not cover, so editing "
        f"them would leave its cached outputs in place; add them (or their package "
        f"directory) to its deps:\n  " + "\n  ".join(sorted(missing))
    )


@pytest.mark.parametrize("entry", sorted(_by_stage()))
def test_stage_lists_no_library_file_it_does_not_run(entry: str) -> None:
    """The converse: a listed src/paracl file outside the import closure would rerun the
    stage (and everything after it) for an edit that cannot change its outputs."""
    extra: set[str] = set()
    for _, stage in _by_stage()[entry]:
        deps = dep_paths(stage.get("deps"))
        needed = {str(p.relative_to(REPO)) for p in import_closure(REPO / _script(stage))}
        extra |= {d for d in deps if d.endswith(".py") and d.startswith("src/") and d not in needed}
    assert not extra, f"dvc.yaml stage {entry!r} lists files it never imports: {sorted(extra)}"


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


def top_level_reads(path: Path) -> set[str]:
    """Top-level params.yaml keys that `path` reads as `params["key"]` or
    `params.get("key")`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
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
    name, stage = _by_stage()[entry][0]
    script = REPO / _script(stage)
    read = set().union(
        *(top_level_reads(f) for f in {script, *import_closure(script)} if f.suffix == ".py")
    )
    missing = read - EXECUTION_ONLY - listed_params(stage)
    assert not missing, f"dvc.yaml stage {entry!r} reads params {sorted(missing)}; list them"


def test_the_param_check_finds_reads() -> None:
    """The checker itself: roundtrip's closure reads `device` (translate.py)."""
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

    unrelated = project / "src/paracl/training/trainer.py"
    unrelated.write_text(unrelated.read_text() + "\n# unrelated edit\n")
    proc = dvc("status", "fetch", cwd=project)
    assert "up to date" in proc.stdout, proc.stdout + proc.stderr

    shared = project / "src/paracl/io.py"
    shared.write_text(shared.read_text() + "\n# a fix\n")
    proc = dvc("status", "fetch", cwd=project)
    assert "changed deps" in proc.stdout and "src/paracl/io.py" in proc.stdout, (
        proc.stdout + proc.stderr
    )


if __name__ == "__main__":  # print each stage's closure, to help write its deps
    for stage_name, body in STAGES.items():
        files = sorted(str(p.relative_to(REPO)) for p in import_closure(REPO / _script(body)))
        print(stage_name, *files, sep="\n  ")
