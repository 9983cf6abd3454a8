"""Nothing a user feeds in ends in a traceback (issue 16).

Every stage of dvc.yaml, and every file or directory it reads, is damaged in turn: the
input is replaced by a missing path, a zero-byte file, a truncated copy (its first half)
and a file of another format; params.yaml also by invalid YAML and by an out-of-range
value. The stage must then exit with status 1, its last stderr line must start with
`error:` and name the damaged path, no traceback may appear, and the project must be
left as it was: every earlier output byte-identical and nothing new (no temporary or
partial file). The input is restored after each case, so cases are independent.

What a stage reads is derived, not listed by hand: its deps in dvc.yaml (code left out,
foreach/matrix expanded with the run's params), params.yaml, and the project paths its
params sections name (model directories, the corpus source, the dictionary). Two rules
keep that to what the stage reads under the run's `lang`: a dep that only the other
language's entry of a `{"en": ..., "ja": ...}` table in the stage script names (the
JSTS files under lang en) is left out, as are params under a key named after the other
language; and a param path that a stage not upstream writes (train_contrastive's
`jcse_two_stage.init` for the other methods) is left out. fetch reads the data mirror
($PARACL_DATA_MIRROR), which no param of its dvc.yaml entry names: it is added by hand.
A directory is damaged file by file (all its files at once).

Truncating a line-oriented text file (.txt .tsv .csv) can leave valid text (the corpus
reader drops a cut-off last line by design, and a line cut inside its last field still
parses), so there the stage may also succeed; the case then checks that it did so
without a traceback and changed nothing but its own declared outputs.

Two sizes of the one test:
- default: fetch, prepare_corpus, ppdb_substitute and rank_fluency, which between them
  read through every shared layer (params, mirror, text corpus, dictionary, Parquet file,
  shard directory, model directory), on a small project built in seconds. Each case
  runs in a forked child of the test process (stage module already imported: no
  interpreter start per case; forked so that one case's module-level model cache never
  serves the next).
- slow: every stage of the smoke pipeline (presets/smoke.yaml), built once with
  `dvc repro` (about 5 minutes on 2 cores), each case a real `python stages/<stage>.py`.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from smoke_helpers import SMOKE, TINY_MODELS, merge_preset, smoke_project
from stage_helpers import dep_paths, expand_stages, load_stage, lookup

REPO = Path(__file__).resolve().parents[2]
LANGS = ("en", "ja")
CODE = ("src/", "stages/")
PROJECT_DIRS = ("data", "models", "metrics")  # where stage inputs and outputs live
TEXT_SUFFIXES = (".txt", ".tsv", ".csv")
PARAMS = "params.yaml"
MIRROR = "$PARACL_DATA_MIRROR"
FILE_DAMAGE = ("missing", "zero_bytes", "truncated", "other_format")
PARAMS_DAMAGE = (*FILE_DAMAGE, "invalid_yaml", "bad_value")
FAST_STAGES = (
    "fetch",
    "prepare_corpus",
    "ppdb_substitute",
    "rank_fluency",
    "train_contrastive@simcse_unsup",  # a training stage: its curves must survive a failure
)
# Another format: text where binary is expected; a gzip archive (binary) where text is.
OTHER_TEXT = b"id,text\n1,a CSV file where another format belongs\n"
OTHER_BINARY = gzip.compress(b"id\ttext\n1\ta gzip archive where text belongs\n", mtime=0)

# --- what each stage reads, from dvc.yaml and the params ------------------------------


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def outputs(body: dict) -> list[str]:
    return [
        *dep_paths(body.get("outs")),
        *dep_paths(body.get("metrics")),
        *dep_paths(body.get("plots")),
    ]


def _strings(node: ast.AST) -> Iterator[str]:
    """String constants under an AST node, and the leading text of f-strings."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value
        elif isinstance(sub, ast.JoinedStr) and sub.values:
            first = sub.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value


@cache
def languagedep_paths(cmd: str) -> dict[str, frozenset[str]]:
    """Paths that the stage script's `{"en": ..., "ja": ...}` tables give each language:
    path strings, or `paths.<name>` for the cmd argument that `args(...)` names so."""
    script, *argv = cmd.split()[1:]
    tree = ast.parse((REPO / script).read_text())
    named: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "args":
            named = dict(zip((a.value for a in node.args), argv, strict=False))
    found: dict[str, set[str]] = {lang: set() for lang in LANGS}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
        if set(keys) != set(LANGS):
            continue
        for key, value in zip(keys, node.values, strict=True):
            found[key].update(s for s in _strings(value) if "/" in s)
            found[key].update(
                named[n.attr]
                for n in ast.walk(value)
                if isinstance(n, ast.Attribute) and n.attr in named
            )
    return {lang: frozenset(paths) for lang, paths in found.items()}


def _names(dep: str, paths: frozenset[str]) -> bool:
    return any(_within(p, dep) or _within(dep, p) for p in paths)


def _param_paths(node: Any, lang: str) -> Iterator[str]:
    """Project paths a params section names; sections keyed by another language skipped."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in LANGS or key == lang:
                yield from _param_paths(value, lang)
    elif isinstance(node, list):
        for value in node:
            yield from _param_paths(value, lang)
    elif isinstance(node, str) and ":" not in node and node.split("/")[0] in PROJECT_DIRS:
        yield node.rstrip("/")


def upstream(name: str, stages: dict[str, dict]) -> set[str]:
    """The stages whose outputs `name` depends on, transitively."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        deps = dep_paths(stages[todo.pop()].get("deps"))
        for other, body in stages.items():
            if other not in seen and any(_within(d, o) for d in deps for o in outputs(body)):
                seen.add(other)
                todo.append(other)
    return seen


OWN_DIRS = ("data/own/corpus",)  # dvc.yaml's deps for a user's own corpus (docs/own-data.md)


def stage_inputs(name: str, stages: dict[str, dict], params: dict) -> list[str]:
    """Everything stage `name` reads (see the module docstring)."""
    body, lang = stages[name], params["lang"]
    tables = languagedep_paths(body["cmd"])
    other = frozenset().union(*(p for k, p in tables.items() if k != lang))
    deps = [d for d in dep_paths(body.get("deps")) if not d.startswith(CODE)]
    deps = [d for d in deps if not (_names(d, other) and not _names(d, tables[lang]))]
    before = upstream(name, stages)
    configured = []
    for entry in body.get("params") or []:
        if isinstance(entry, str):
            configured += _param_paths(lookup(params, entry), lang)
    writer = {
        p: n
        for p in configured
        for n, b in stages.items()
        if any(_within(p, o) for o in outputs(b))
    }
    configured = [p for p in configured if p not in writer or writer[p] in before]
    # a folder for a user's own files is read only where a param points into it
    deps = [d for d in deps if d not in OWN_DIRS or any(_within(p, d) for p in configured)]
    extra = [MIRROR] if name == "fetch" else []
    return list(dict.fromkeys([PARAMS, *deps, *configured, *extra]))


@dataclass(frozen=True)
class Case:
    mode: str  # "fast" (forked child, small project) or "slow" (subprocess, smoke project)
    stage: str  # as dvc names it
    argv: tuple[str, ...]  # stages/<script>.py and its arguments
    path: str  # the damaged input, relative to the project (or MIRROR)
    damage: str

    @property
    def id(self) -> str:
        return f"{self.mode}-{self.stage}-{self.path}-{self.damage}"


def smoke_params() -> dict:
    params = yaml.safe_load((REPO / PARAMS).read_text())
    return merge_preset(params, yaml.safe_load(SMOKE.read_text()))


def all_cases() -> list:
    params = smoke_params()
    stages = expand_stages(yaml.safe_load((REPO / "dvc.yaml").read_text()), params)
    cases = []
    for mode in ("fast", "slow"):
        for name, body in stages.items():
            if mode == "fast" and name not in FAST_STAGES:
                continue
            argv = tuple(body["cmd"].split()[1:])
            for path in stage_inputs(name, stages, params):
                for damage in PARAMS_DAMAGE if path == PARAMS else FILE_DAMAGE:
                    case = Case(mode, name, argv, path, damage)
                    marks = [pytest.mark.slow] if mode == "slow" else []
                    cases.append(pytest.param(case, id=case.id, marks=marks))
    return cases


# --- the project's state, damage and repair ---------------------------------------------


class TreeState:
    """What every path under a root holds (a sha256, 'dir', or a link target), .git
    left out; hashes are reused while a file's size, mtime and inode are unchanged."""

    def __init__(self) -> None:
        self._hashes: dict[tuple, str] = {}

    def __call__(self, root: Path) -> dict[str, str]:
        state: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(root):
            here = Path(dirpath)
            if here == root:
                dirnames[:] = [d for d in dirnames if d != ".git"]
            for name in dirnames + filenames:
                path = here / name
                rel = str(path.relative_to(root))
                if path.is_symlink():
                    state[rel] = "link:" + os.readlink(path)
                elif path.is_dir():
                    state[rel] = "dir"
                else:
                    st = path.stat()
                    key = (rel, st.st_size, st.st_mtime_ns, st.st_ino)
                    if key not in self._hashes:
                        self._hashes[key] = hashlib.sha256(path.read_bytes()).hexdigest()
                    state[rel] = self._hashes[key]
        return state


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def restore(work: Path, pristine: Path, want: dict[str, str], state: TreeState) -> None:
    """Make `work` hold exactly what `pristine` holds again (copying only what differs)."""
    have = state(work)
    for rel in sorted(set(have) - set(want)):
        if (work / rel).exists() or (work / rel).is_symlink():
            _remove(work / rel)
    for rel in sorted(want):
        dest, src = work / rel, pristine / rel
        if have.get(rel) == want[rel]:
            continue
        if dest.exists() or dest.is_symlink():
            if want[rel] == "dir" and dest.is_dir() and not dest.is_symlink():
                continue
            _remove(dest)
        if want[rel] == "dir":
            dest.mkdir(parents=True, exist_ok=True)
        elif want[rel].startswith("link:"):
            dest.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dest)
    assert state(work) == want, "the project could not be restored"


def damage(target: Path, how: str) -> list[Path]:
    """Damage `target` (a file, or every file of a directory) in place; return the files
    changed. Files are unlinked before they are rewritten, so a symlink (the private
    mirror links to the shared one) is replaced, never written through."""
    if how == "missing":
        _remove(target)
        return []
    if how in ("invalid_yaml", "bad_value"):
        text = target.read_text()
        if how == "invalid_yaml":
            text += "broken: [1, 2\n"  # a flow sequence never closed
        else:
            values = yaml.safe_load(text)
            values["seed"] = -1  # out of range: a run-wide key, which every stage checks
            text = yaml.safe_dump(values, sort_keys=False)
        target.unlink()
        target.write_text(text)
        return [target]
    files = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
    for file in files:
        data = file.read_bytes()
        if how == "zero_bytes":
            new = b""
        elif how == "truncated":
            new = data[: len(data) // 2]
        else:
            new = OTHER_TEXT if b"\x00" in data[:8192] else OTHER_BINARY
        file.unlink()
        file.write_bytes(new)
    return files


# --- running a stage -----------------------------------------------------------------


def _in_child(fn: Callable[[], None], cwd: Path, env: dict[str, str], timeout: float):
    """(exit status, stdout+stderr) of fn() run in a forked child, as a script's run
    would end: SystemExit's code, or 1 with a printed traceback."""
    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
                sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
                logging.root.handlers.clear()  # pytest's; the stage's basicConfig logs here
                os.chdir(cwd)
                os.environ.update(env)
                import torch

                torch.set_num_threads(1)  # no OpenMP pool inherited across fork
                try:
                    fn()
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:
                    traceback.print_exc()
                    code = 1
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"timed out after {timeout} s")
            time.sleep(0.02)
        out.seek(0)
        return os.waitstatus_to_exitcode(status), out.read().decode("utf-8", "replace")


def run_fast(project: Path, argv: Sequence[str], env: dict[str, str]) -> tuple[int, str]:
    """`python stages/<name>.py args` in a forked child of this process."""
    from paracl.core.stage import run

    module = load_stage(Path(argv[0]).stem)

    def stage() -> None:
        sys.argv = list(argv)
        run(module.main, module.Params)

    return _in_child(stage, project, env, timeout=600)


def run_slow(project: Path, argv: Sequence[str], env: dict[str, str]) -> tuple[int, str]:
    """`python stages/<name>.py args` as dvc runs it."""
    env = os.environ | env
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(
        [sys.executable, *argv], cwd=project, env=env, capture_output=True, text=True, timeout=1800
    )
    return proc.returncode, proc.stdout + proc.stderr


# --- the projects ----------------------------------------------------------------------


@dataclass
class Project:
    work: Path  # where cases run
    pristine: Path  # its good state, copied once
    mirror: Path  # the private data mirror (links into the shared one)
    pristine_mirror: Path
    env: dict[str, str]
    state: TreeState

    def __post_init__(self) -> None:
        self.want = self.state(self.work)
        self.want_mirror = self.state(self.mirror)
        assert self.state(self.pristine) == self.want


def private_mirror(shared: Path, dest: Path, sources: list[str]) -> Path:
    """A mirror of links to the registry files of `sources`: damage replaces a link."""
    from paracl.stages.fetch import load_registry, select

    for entry in select(load_registry(), sources):
        link = dest / entry.file
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(shared / entry.file)
    return dest


def snapshot(work: Path, base: Path, mirror: Path, env: dict[str, str]) -> Project:
    pristine = base / "pristine"
    shutil.copytree(work, pristine, symlinks=True)
    pristine_mirror = base / "pristine-mirror"
    shutil.copytree(mirror, pristine_mirror, symlinks=True)
    return Project(work, pristine, mirror, pristine_mirror, env, TreeState())


@pytest.fixture(scope="module")
def fast_project(tmp_path_factory, mirror) -> Project:
    """fetch → prepare_corpus → ppdb_substitute → rank_fluency on the smoke params (two
    fetched sources), every stage run as the cases run (forked)."""
    from paracl.testing.tiny_models import build_tiny_model

    base = tmp_path_factory.mktemp("bad-inputs-fast")
    work = base / "project"
    work.mkdir()
    params = smoke_params()
    params["fetch"]["sources"] = ["wiki-en", "ppdb", "stsbenchmark"]
    (work / PARAMS).write_text(yaml.safe_dump(params, sort_keys=False))
    mine = private_mirror(mirror, base / "mirror", params["fetch"]["sources"])
    env = {"PARACL_DATA_MIRROR": str(mine)}
    for arch in TINY_MODELS:
        code, out = _in_child(
            lambda arch=arch: build_tiny_model(arch, work / TINY_MODELS[arch]), work, env, 300
        )
        assert code == 0, out
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)  # dvclive wants a commit
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "init"], cwd=work, check=True)  # fmt: skip
    stages = expand_stages(yaml.safe_load((REPO / "dvc.yaml").read_text()), params)
    for stage in FAST_STAGES:
        code, out = run_fast(work, stages[stage]["cmd"].split()[1:], env)
        assert code == 0, out[-4000:]
    return snapshot(work, base, mine, env)


@pytest.fixture(scope="module")
def slow_project(tmp_path_factory, mirror) -> Project:
    """The smoke pipeline, run once with `dvc repro` (as tests/pipeline/test_smoke_pipeline.py)."""
    base = tmp_path_factory.mktemp("bad-inputs-slow")
    work = smoke_project(base / "project", base / "tiny-models")
    params = yaml.safe_load((work / PARAMS).read_text())
    mine = private_mirror(mirror, base / "mirror", params["fetch"]["sources"])
    env = {"PARACL_DATA_MIRROR": str(mine)}
    full = os.environ | env | {"PYTHONUNBUFFERED": "1"}
    full["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full['PATH']}"
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", "repro"], cwd=work, env=full, capture_output=True, text=True
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return snapshot(work, base, mine, env)


# --- the test --------------------------------------------------------------------------


def last_line(output: str) -> str:
    """The last line a terminal shows (a progress bar's \\r starts a line over)."""
    lines = [line.strip() for line in re.split(r"[\r\n]+", output) if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.parametrize("case", all_cases())
def test_a_damaged_input_stops_the_stage_cleanly(case: Case, request) -> None:
    project: Project = request.getfixturevalue(f"{case.mode}_project")
    runner = run_fast if case.mode == "fast" else run_slow
    if case.path == MIRROR:
        target, shown = project.mirror, str(project.mirror)
    else:
        target, shown = project.work / case.path, case.path
    assert target.exists(), f"{case.path}: not in the good project (is it read at all?)"
    try:
        damaged = damage(target, case.damage)
        # a cut text file may still be valid; a cut params.yaml may keep every key the
        # stage reads (it checks its own keys only: paracl.core.params.load_params)
        lenient = case.damage == "truncated" and (
            any(f.suffix in TEXT_SUFFIXES for f in damaged) or case.path == "params.yaml"
        )
        before = project.state(project.work)
        code, output = runner(project.work, case.argv, project.env)
        after = project.state(project.work)
    finally:
        restore(project.work, project.pristine, project.want, project.state)
        restore(project.mirror, project.pristine_mirror, project.want_mirror, project.state)

    tail = output[-3000:]
    assert "Traceback (most recent call last)" not in output, tail
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if lenient and code == 0:  # valid text after all: only the stage's own outputs change
        stages = expand_stages(yaml.safe_load((REPO / "dvc.yaml").read_text()), smoke_params())
        outs = outputs(stages[case.stage])
        stray = [p for p in changed if not any(_within(p, o) for o in outs)]
        assert not stray, f"changed besides the declared outputs {outs}: {stray}"
        return
    assert code == 1, f"exit status {code}\n{tail}"
    line = last_line(output)
    print(f"{case.id}: {line}")  # shown with -rP: the messages a user sees
    assert line.startswith("error:"), f"last line {line!r}\n{tail}"
    assert shown in line, f"the message does not name {shown}: {line!r}"
    assert not changed, f"the failed stage changed the project: {changed}\n{tail}"
