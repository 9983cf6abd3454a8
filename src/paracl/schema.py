"""The schema of the whole of params.yaml: every stage's contract together.

Why here, above the stages: each stage module (paracl.stages.<stage>) owns its section
and checks only what it reads (its `Params`), so that a change to one stage's schema
reruns that stage alone. The commands that see the whole file (`paracl preset`,
`paracl expand`, the reference page, the tests) check it here: every top-level key,
each stage's own checks across keys (its `Params.check`), and no key that no stage
reads. Importing this loads every stage module: torch (train_contrastive's losses), but
not the model libraries a stage loads where it runs (~2 CPU-s; tests/core/test_lazy_imports.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import Field, fields, is_dataclass
from pathlib import Path
from types import ModuleType

import paracl.stages
from paracl.core.errors import ParamsError
from paracl.core.params import (
    Keys,
    OtherSection,
    RunWide,
    read_params,
    validate,
)
from paracl.parts.runs import expand_runs


def _stage_modules() -> dict[str, ModuleType]:
    """{stage: its module}: every module of paracl.stages, each a DVC stage's (a new stage
    needs no line here: its module is found)."""
    names = sorted(m.name for m in pkgutil.iter_modules(paracl.stages.__path__))
    return {name: importlib.import_module(f"paracl.stages.{name}") for name in names}


STAGE_MODULES = _stage_modules()
STAGES = tuple(STAGE_MODULES)
RUN_WIDE = {f.name for f in fields(RunWide)}  # the core's keys, every stage's to read


def schema_fields() -> list[Field]:
    """params.yaml's top-level keys as fields: the run-wide ones, then each stage's
    top-level scalars, then the sections (by stage name). A section is declared by the
    stage of its name (another that reads it imports that schema, or takes it as an
    OtherSection); a top-level scalar by its first reader."""
    run_wide = list(fields(RunWide))
    owned: dict[str, Field] = {}
    for stage, module in STAGE_MODULES.items():
        for f in fields(module.Params):
            if f.name in RUN_WIDE or f.type is OtherSection:
                continue  # the run-wide keys are the core's; another stage owns the section
            if f.name == stage or f.name not in owned:
                owned[f.name] = f
    return run_wide + sorted(owned.values(), key=lambda f: is_dataclass(f.type))


def schema_keys() -> Keys:
    """params.yaml's top-level keys, {name: (type, metadata, default)}, to validate with."""
    return {f.name: (f.type, f.metadata, f.default) for f in schema_fields()}


def check_all(values: dict) -> dict:
    """Check a whole params mapping: every key, then every stage's checks across keys."""
    checked = validate(values, schema_keys())
    for module in STAGE_MODULES.values():
        module.Params.check({f.name: checked[f.name] for f in fields(module.Params)})
    return checked


def load_params(path: str | Path = "params.yaml") -> dict:
    """Read and check the whole of params.yaml. Errors name the file and the key."""
    values = read_params(path)
    try:
        return check_all(values)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None


def with_runs(values: dict) -> dict:
    """`values` with train_contrastive.runs and evaluate.finetune_runs rewritten from the
    methods and seeds, as `paracl expand` rewrites params.yaml (for params built in code)."""
    tc = values["train_contrastive"]
    out = {**values, "train_contrastive": {**tc, "runs": expand_runs(tc)}}
    if "evaluate" in values:
        out["evaluate"] = {
            **values["evaluate"],
            "finetune_runs": STAGE_MODULES["evaluate_finetune"].finetune_runs(out),
        }
    return out


def validate_all(values: dict) -> dict:
    """Check every key of a whole params mapping, without the checks across keys."""
    return validate(values, schema_keys())
