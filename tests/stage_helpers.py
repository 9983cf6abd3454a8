"""What the stage tests share: a stage script loaded as a module, and a crashed run
followed by its resume."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


def load_stage(name: str) -> ModuleType:
    """stages/<name>.py as a module (stages/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"stage_{name}", REPO / "stages" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def crash_then_resume(
    owner: ModuleType,
    fn_name: str,
    run: Callable[[], object],
    crash_at: int,
    out: str | Path | None = None,
) -> list[int]:
    """run() with `owner.fn_name(frame, index)` failing at shard `crash_at` (and, if
    given, nothing published at `out`), then run() again; return the shard indices the
    second run computed. The real function is put back afterwards."""
    real = getattr(owner, fn_name)
    calls: list[int] = []

    def crashing(frame, index):
        if index == crash_at:
            raise RuntimeError("killed")
        return real(frame, index)

    def counting(frame, index):
        calls.append(index)
        return real(frame, index)

    try:
        setattr(owner, fn_name, crashing)
        with pytest.raises(RuntimeError, match="killed"):
            run()
        if out is not None:
            assert not Path(out).exists()  # nothing half-published
        setattr(owner, fn_name, counting)
        run()
    finally:
        setattr(owner, fn_name, real)
    return calls
