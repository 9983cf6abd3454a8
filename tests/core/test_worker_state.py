"""No module keeps worker state in a global (issue 61 item 6): a sharded stage's worker
state is what its ShardJob's `setup` returns, held by the executor's worker runner.

The check: a module-level dict/list/set that a function mutates (item assignment, a
mutating method, `global`) is worker state in disguise, unless listed below with why it
is not. `_WORKER`/`_STATE` names are refused outright."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "paracl"
MUTATORS = {"update", "clear", "setdefault", "pop", "popitem", "append", "extend", "add"}
MUTATORS |= {"insert", "remove", "discard"}
CONTAINERS = {"dict", "list", "set", "defaultdict", "OrderedDict"}
# process-wide registries, not per-worker state (module, name): why
ALLOWED = {
    ("core/models.py", "_BUILDERS"): "the model-builder hook's registry (paracl.testing fills it)",
    ("core/models.py", "_BUILT"): "stand-in models built in this process, keyed by (id, seed)",
}


def _is_container(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Dict | ast.List | ast.Set):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in CONTAINERS
    )


def _module_containers(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_container(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and _is_container(node.value):
            names |= {node.target.id} if isinstance(node.target, ast.Name) else set()
    return names


def _mutated(fn: ast.AST, names: set[str]) -> set[str]:
    """The module-level names `fn` mutates or rebinds."""
    found: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Global):
            found |= set(node.names)
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else []
        targets = [node.target] if isinstance(node, ast.AugAssign) else targets
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                found |= {target.value.id} & names
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and call.attr in MUTATORS:
            if isinstance(call.value, ast.Name) and call.value.id in names:
                found.add(call.value.id)
    return found


def worker_state(source: str) -> set[str]:
    """Names of module-global state that `source`'s functions mutate or rebind."""
    tree = ast.parse(source)
    names = _module_containers(tree)
    found = {n for n in names if n in ("_WORKER", "_STATE")}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found |= _mutated(node, names)
    return found


def test_the_check_finds_worker_state_in_a_global():
    assert worker_state("_W = {}\ndef init_worker(m):\n    _W.update(model=m)\n") == {"_W"}
    assert worker_state("_W = {}\ndef init_worker(m):\n    _W['model'] = m\n") == {"_W"}
    assert worker_state("M = None\ndef setup(m):\n    global M\n    M = m\n") == {"M"}
    assert worker_state("_STATE: dict = {}\n") == {"_STATE"}
    assert worker_state("KINDS = {'a': 1}\ndef kind(k):\n    return KINDS[k]\n") == set()


def test_no_module_under_src_keeps_worker_state_in_a_global():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for name in sorted(worker_state(path.read_text(encoding="utf-8"))):
            if (rel, name) not in ALLOWED:
                found.append(f"{rel}: {name}")
    assert not found, "module-global worker state (return it from a ShardJob's setup):\n" + (
        "\n".join(found)
    )
