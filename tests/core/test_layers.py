"""Imports point down: core ← parts ← stages ← the CLI, a stage imports another only to
read that stage's section, and no two packages import each other.

Why: a stage module that imports another stage, or a shared part that imports a stage,
ties two stages' code together (and their DVC deps). The one tie allowed is a section:
a stage that reads another stage's section (corrupt reads adapt_filler's model) imports
its schema from that stage's module, which its DVC deps then name (test_stage_deps);
a newcomer reads the floors bottom up,
and a circle between two packages has no bottom to start from. The core reaches up by no
other road either: no `importlib.import_module` of a module, no parsing of source.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
FLOOR = {"core": 0, "parts": 1, "stages": 2}  # anything else in paracl is above the stages


def _module(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _floor(module: str) -> int:
    return FLOOR.get(module.split(".")[1], 3) if "." in module else 3


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("paracl."):
            found.add(node.module)
            if node.module.count(".") < 2:  # `from paracl.stages import tag`
                found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("paracl.")}
    return found


def sections_read(tree: ast.Module) -> set[str]:
    """The sections a stage module's `Params` declares: its own fields, and those of the
    stage whose Params it extends (`class Params(adapt_filler.Params)`)."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Params":
            own = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
            bases = {ast.unparse(b).removesuffix(".Params") for b in node.bases}
            return own | bases
    return set()


def bad_arrows(src: Path = SRC) -> list[str]:
    """`a -> b` for each import up a floor, or sideways between two stage modules where
    the importer does not read the other stage's section."""
    bad = []
    for path in sorted(src.rglob("*.py")):
        a = _module(path, src)
        reads = sections_read(ast.parse(path.read_text())) if _floor(a) == 2 else set()
        for b in sorted(_imports(path)):
            stage_a, stage_b = a.split(".")[:3], b.split(".")[:3]
            up = _floor(b) > _floor(a) and _floor(b) < 3 or _floor(a) < 3 <= _floor(b)
            sideways = _floor(a) == _floor(b) == 2 and len(stage_b) == 3 and stage_a != stage_b
            if up or sideways and stage_b[2] not in reads:
                bad.append(f"{a} -> {b}")
    return bad


def test_imports_point_down():
    assert not bad_arrows(), "imports up or between stages:\n" + "\n".join(bad_arrows())


def test_the_check_sees_an_arrow_up(tmp_path):
    (tmp_path / "paracl/core").mkdir(parents=True)
    (tmp_path / "paracl/core/io.py").write_text("from paracl.stages.tag import x\n")
    assert bad_arrows(tmp_path) == ["paracl.core.io -> paracl.stages.tag"]


def test_the_check_allows_a_stage_to_import_the_sections_it_reads_only(tmp_path):
    (tmp_path / "paracl/stages").mkdir(parents=True)
    (tmp_path / "paracl/stages/corrupt.py").write_text(
        "from paracl.stages import adapt_filler\nfrom paracl.stages.tag import x\n"
        "class Params(adapt_filler.Params):\n    corrupt: int\n"
    )
    assert bad_arrows(tmp_path) == ["paracl.stages.corrupt -> paracl.stages.tag"]


MAX_FLOORS = 7  # modules on the longest chain of imports from a stage module down
# Above the stages, the CLI reads the whole file's schema: paracl.__main__ -> paracl.cli ->
# paracl.presets -> paracl.schema -> every stage module, 4 floors on top of theirs.
CLI_FLOORS = 4


def longest_chain(src: Path = SRC, top: int = 3) -> list[str]:
    """The longest chain of paracl imports (a -> b -> ...), each module once, from modules
    on floor `top` or below (2: the stage modules, 3: the CLI too)."""
    modules = {_module(p, src): p for p in src.rglob("*.py") if _floor(_module(p, src)) <= top}
    graph = {
        m: sorted(b for b in _imports(p) if b in modules and b != m) for m, p in modules.items()
    }
    memo: dict[str, list[str]] = {}

    def chain(m: str, seen: frozenset) -> list[str]:
        if m not in memo:
            below = [chain(b, seen | {m}) for b in graph[m] if b not in seen]
            memo[m] = [m, *max(below, key=len, default=[])]
        return memo[m]

    return max((chain(m, frozenset()) for m in modules), key=len)


def test_the_import_graph_has_few_floors():
    longest = longest_chain(top=2)
    assert len(longest) <= MAX_FLOORS, f"{len(longest)} floors: " + " -> ".join(longest)
    longest = longest_chain()
    assert len(longest) <= MAX_FLOORS + CLI_FLOORS, " -> ".join(longest)


def test_the_floor_count_follows_the_longest_chain(tmp_path):
    (tmp_path / "paracl/core").mkdir(parents=True)
    (tmp_path / "paracl/core/a.py").write_text("from paracl.core.b import x\n")
    (tmp_path / "paracl/core/b.py").write_text("from paracl.core.c import x\n")
    (tmp_path / "paracl/core/c.py").write_text("x = 1\n")
    assert longest_chain(tmp_path) == ["paracl.core.a", "paracl.core.b", "paracl.core.c"]


# -- cycles between packages ----------------------------------------------------------


def _package(module: str) -> str:
    """The unit a cycle is counted between: paracl.<floor>.<name> (a package such as
    paracl.parts.training, or a module such as paracl.core.io), or a top-level module."""
    parts = module.split(".")
    return ".".join(parts[:3] if len(parts) > 2 and parts[1] in FLOOR else parts[:2])


# Circles allowed, listed so that the test fails on any other: none (the CLI imports the
# presets module; the presets never import the CLI).
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def package_cycles(src: Path = SRC) -> list[tuple[str, ...]]:
    """Each circle of imports between packages (lazy imports too), as its sorted members."""
    graph: dict[str, set[str]] = {}
    for path in src.rglob("*.py"):
        a = _package(_module(path, src))
        graph.setdefault(a, set()).update(_package(b) for b in _imports(path) if _package(b) != a)
    reach = {a: _reachable(graph, a) for a in graph}
    circles = {tuple(sorted(m for m in reach[a] if a in reach.get(m, ()))) for a in graph}
    return sorted(c for c in circles if len(c) > 1)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every package `start` imports, directly or through others (itself included)."""
    seen, todo = {start}, [start]
    while todo:
        for b in graph.get(todo.pop(), ()):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def test_no_two_packages_import_each_other():
    new = [c for c in package_cycles() if c not in KNOWN_CYCLES]
    assert not new, "packages in a circle of imports:\n" + "\n".join(" <-> ".join(c) for c in new)


def test_the_check_sees_a_circle(tmp_path):
    (tmp_path / "paracl/parts/losses").mkdir(parents=True)
    (tmp_path / "paracl/parts/training").mkdir(parents=True)
    (tmp_path / "paracl/parts/losses/infonce.py").write_text(
        "from paracl.parts.training.objectives import X\n"
    )
    (tmp_path / "paracl/parts/training/methods.py").write_text(
        "def f():\n    from paracl.parts.losses import LOSSES\n"
    )
    assert package_cycles(tmp_path) == [("paracl.parts.losses", "paracl.parts.training")]


# -- the core loads no module by name and parses no source -----------------------------

# Each stage's schema, with the evaluation jobs and the losses it names, lives in its stage
# module (paracl.stages.<stage>), so the core reaches up by name nowhere. The one load by
# name is down, into its own package: paracl.core.languages finds its language modules, so
# a new language is a file there (docs/extending.md). The test fails on any new one.
KNOWN_REACHES = {"paracl.core.languages:<module>:importlib.import_module"}
REACHES = {"importlib.import_module", "import_module", "ast.parse", "__import__"}


def reaches(src: Path = SRC) -> list[str]:
    """`module:function:call` for each call in paracl.core that loads a module by name or
    parses source (a hidden import that `import` statements do not show)."""
    found = set()
    for path in (src / "paracl" / "core").rglob("*.py"):
        for where, called in _calls(ast.parse(path.read_text()), "<module>"):
            if called in REACHES:
                found.add(f"{_module(path, src)}:{where}:{called}")
    return sorted(found)


def _calls(node: ast.AST, where: str):
    """(innermost enclosing function, the called expression) of each call under `node`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call):
            called = ast.unparse(child.func)
            first = ast.unparse(child.args[0]) if child.args else ""
            # __import__ counts when it names paracl: core.models loads the packaged
            # models' own modules (a split GGUF's assembler) with it
            if called != "__import__" or first.strip("'\"").startswith("paracl"):
                yield where, called
        inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
        yield from _calls(child, inner)


def test_the_core_loads_no_module_by_name_and_parses_no_source():
    new = [r for r in reaches() if r not in KNOWN_REACHES]
    assert not new, "the core reaches up by name or by source:\n" + "\n".join(new)
    gone = KNOWN_REACHES - set(reaches())
    assert not gone, f"no longer there, delete from KNOWN_REACHES: {sorted(gone)}"


def test_the_check_sees_a_reach_by_name_and_by_source(tmp_path):
    (tmp_path / "paracl/core").mkdir(parents=True)
    (tmp_path / "paracl/core/io.py").write_text(
        "import ast, importlib\n"
        "def f():\n    return importlib.import_module('paracl.stages.tag')\n"
        "def g(text):\n    return ast.parse(text)\n"
        "def h():\n    return __import__('paracl.parts.losses'), __import__('gguf_parts')\n"
    )
    assert reaches(tmp_path) == [
        "paracl.core.io:f:importlib.import_module",
        "paracl.core.io:g:ast.parse",
        "paracl.core.io:h:__import__",
    ]
