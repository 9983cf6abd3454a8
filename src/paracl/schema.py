"""The schema of the whole of params.yaml: every stage's contract together.

Why here, above the stages: each stage module (paracl.stages.<stage>) owns its section
and checks only what it reads (its `Params`), so that a change to one stage's schema
reruns that stage alone. The commands that see the whole file (`paracl preset`,
`paracl expand`, the reference page, the tests) check it here: every top-level key,
each stage's own checks across keys (its `Params.check`), and no key that no stage
reads. Importing this loads every stage module, torch included (a few seconds).
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
    Section,
    keys_of,
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


def stage_schemas() -> dict[str, type[Section]]:
    """{stage: the Params it reads of params.yaml}."""
    return {name: module.Params for name, module in STAGE_MODULES.items()}


def owners() -> dict[str, str]:
    """{top-level key: the stage that declares it}: a section's owner is the stage of its
    name (others that read it import its schema); a top-level scalar, its first reader."""
    found: dict[str, str] = {}
    for stage, schema in stage_schemas().items():
        for f in fields(schema):
            if f.name in keys_of(RunWide) or f.type is OtherSection:
                continue  # the run-wide keys are the core's; another stage owns the section
            if f.name == stage or f.name not in found:
                found[f.name] = stage
    return found


def schema_fields() -> list[Field]:
    """params.yaml's top-level keys as fields: the run-wide ones, then each stage's
    top-level scalars, then the sections (by stage name), each declared by its owner."""
    schemas = stage_schemas()
    declared = {f.name: f for f in fields(RunWide)}
    for name, stage in owners().items():
        declared[name] = next(f for f in fields(schemas[stage]) if f.name == name)
    run_wide = list(fields(RunWide))
    rest = [f for f in declared.values() if f not in run_wide]
    return run_wide + sorted(rest, key=lambda f: is_dataclass(f.type))


def schema_keys() -> Keys:
    """params.yaml's top-level keys, {name: (type, metadata, default)}, to validate with."""
    return {f.name: (f.type, f.metadata, f.default) for f in schema_fields()}


def check_all(values: dict) -> dict:
    """Check a whole params mapping: every key, then every stage's checks across keys."""
    checked = validate(values, schema_keys())
    for schema in stage_schemas().values():
        schema.check({f.name: checked[f.name] for f in fields(schema)})
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
