"""No function in src/ is over 60 lines (def line to last line).

Why: a newcomer reads a function top to bottom; one that does one thing fits on a screen,
and a long one is split into parts whose names say what they do.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 60
ALLOWED: set[tuple[str, str]] = set()  # (file under src/, function): none left


def long_functions(src: Path = SRC, allowed: set[tuple[str, str]] = ALLOWED) -> list[str]:
    """`file: function is N lines` for each function (or method) over MAX_LINES."""
    found = []
    for path in sorted(src.rglob("*.py")):
        name = path.relative_to(src).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES and (name, node.name) not in allowed:
                found.append(f"src/{name}: {node.name} is {lines} lines (at most {MAX_LINES})")
    return found


def test_functions_are_short():
    long = long_functions()
    assert not long, "functions to split:\n" + "\n".join(long)


def test_the_check_sees_a_long_function(tmp_path):
    (tmp_path / "paracl").mkdir()
    module = tmp_path / "paracl/long.py"

    def body(indent: str, lines: int) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(lines))

    module.write_text(f"def short():\n    pass\n\n\ndef f():\n{body('    ', MAX_LINES - 1)}")
    assert long_functions(tmp_path) == []  # the def line and 59 more: 60 lines
    module.write_text(f"class A:\n    def f(self):\n{body('        ', MAX_LINES)}")
    assert long_functions(tmp_path) == ["src/paracl/long.py: f is 61 lines (at most 60)"]
    assert long_functions(tmp_path, {("paracl/long.py", "f")}) == []
