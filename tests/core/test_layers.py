"""Imports point down: core ← parts ← stages ← the CLI, and no stage imports another.

Why: a stage module that imports another stage, or a shared part that imports a stage,
ties two stages' code together (and their DVC deps); a newcomer reads the floors bottom up.
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


def bad_arrows(src: Path = SRC) -> list[str]:
    """`a -> b` for each import up a floor or sideways between two stage modules."""
    bad = []
    for path in sorted(src.rglob("*.py")):
        a = _module(path, src)
        for b in sorted(_imports(path)):
            stage_a, stage_b = a.split(".")[:3], b.split(".")[:3]
            up = _floor(b) > _floor(a) and _floor(b) < 3 or _floor(a) < 3 <= _floor(b)
            sideways = _floor(a) == _floor(b) == 2 and len(stage_b) == 3 and stage_a != stage_b
            if up or sideways:
                bad.append(f"{a} -> {b}")
    return bad


def test_imports_point_down():
    assert not bad_arrows(), "imports up or between stages:\n" + "\n".join(bad_arrows())


def test_the_check_sees_an_arrow_up(tmp_path):
    (tmp_path / "paracl/core").mkdir(parents=True)
    (tmp_path / "paracl/core/io.py").write_text("from paracl.stages.tag import x\n")
    assert bad_arrows(tmp_path) == ["paracl.core.io -> paracl.stages.tag"]


MAX_FLOORS = 7  # modules on the longest chain of imports, the entry point included


def longest_chain(src: Path = SRC) -> list[str]:
    """The longest chain of paracl imports (a -> b -> ...), each module once."""
    modules = {_module(p, src): p for p in src.rglob("*.py")}
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
    longest = longest_chain()
    assert len(longest) <= MAX_FLOORS, f"{len(longest)} floors: " + " -> ".join(longest)


def test_the_floor_count_follows_the_longest_chain(tmp_path):
    (tmp_path / "paracl/core").mkdir(parents=True)
    (tmp_path / "paracl/core/a.py").write_text("from paracl.core.b import x\n")
    (tmp_path / "paracl/core/b.py").write_text("from paracl.core.c import x\n")
    (tmp_path / "paracl/core/c.py").write_text("x = 1\n")
    assert longest_chain(tmp_path) == ["paracl.core.a", "paracl.core.b", "paracl.core.c"]
