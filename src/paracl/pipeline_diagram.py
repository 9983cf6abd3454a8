"""The pipeline diagram of docs/index.md, drawn from dvc.yaml and the presets.

Why drawn, not kept by hand: a new stage then needs no line in the diagram, and the
diagram cannot miss one. An arrow joins two stages where one's output is the other's
dependency, in the default run (solid) or only under some preset (dashed: a method, a
corpus or a fine-tuning task the default leaves out). foreach/matrix stages are one box
each (`train_contrastive@…`). `paracl report` writes docs/img/pipeline.dot and, where
graphviz is installed, the SVG the site shows.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

VAR = re.compile(r"\$\{\s*([^}]+?)\s*\}")  # a dvc.yaml `${...}` reference


def lookup(context: dict[str, Any], dotted: str) -> Any:
    """`context["a"]["b"]` for "a.b" (a dvc.yaml params reference)."""
    value: Any = context
    for part in dotted.split("."):
        value = value[part]
    return value


def interpolate(node: Any, context: dict[str, Any]) -> Any:
    """DVC's `${...}` substitution: a whole-string reference keeps its value's type."""
    if isinstance(node, str):
        whole = VAR.fullmatch(node)
        if whole:
            return lookup(context, whole.group(1))
        return VAR.sub(lambda m: str(lookup(context, m.group(1))), node)
    if isinstance(node, list):
        return [interpolate(v, context) for v in node]
    if isinstance(node, dict):
        return {interpolate(k, context): interpolate(v, context) for k, v in node.items()}
    return node


def expand_stages(pipeline: dict, params: dict) -> dict[str, dict]:
    """Concrete stages as dvc names them (`train_contrastive@ppdb`, `evaluate@none-stsb`),
    values from `params`."""
    stages: dict[str, dict] = {}
    for name, stage in pipeline["stages"].items():
        if "foreach" in stage:
            items = interpolate(stage["foreach"], params)
            pairs = items.items() if isinstance(items, dict) else ((i, i) for i in items)
            for key, item in pairs:
                ctx = params | {"key": key, "item": item}
                stages[f"{name}@{key}"] = interpolate(stage["do"], ctx)
        elif "matrix" in stage:
            axes = {k: interpolate(v, params) for k, v in stage["matrix"].items()}
            body = {k: v for k, v in stage.items() if k != "matrix"}
            for combo in itertools.product(*axes.values()):
                item = dict(zip(axes, combo, strict=True))
                stages[f"{name}@{'-'.join(map(str, combo))}"] = interpolate(
                    body, params | {"item": item}
                )
        else:  # a plain stage may name params too (`${target_corpus}`)
            stages[name] = interpolate(stage, params)
    return stages


def paths(entries: list | None) -> list[str]:
    """The paths of a stage's deps/outs list (entries may be `{path: options}`)."""
    return [str(next(iter(e)) if isinstance(e, dict) else e) for e in entries or []]


def arrows(stages: dict[str, dict]) -> set[tuple[str, str]]:
    """(producer, consumer) between dvc.yaml entries (`name@item` as `name`): an output of
    one is, contains or lies in a dependency of the other."""
    outs: dict[str, set[Path]] = {}
    deps: dict[str, set[Path]] = {}
    for name, stage in stages.items():
        entry = name.split("@")[0]
        outs.setdefault(entry, set()).update(map(Path, paths(stage.get("outs"))))
        deps.setdefault(entry, set()).update(map(Path, paths(stage.get("deps"))))
    found = set()
    for producer, made in outs.items():
        around = made | {parent for out in made for parent in out.parents}
        for consumer, used in deps.items():
            if producer != consumer and any(
                dep in around or not made.isdisjoint(dep.parents) for dep in used
            ):
                found.add((producer, consumer))
    return found


HEADER = """// The pipeline diagram of docs/index.md, drawn by `paracl report` from dvc.yaml, params.yaml
// and presets/ (paracl.pipeline_diagram): do not edit. Dashed: arrows only a preset draws.
digraph pipeline {
  graph [rankdir=TB, nodesep=0.08, ranksep=0.3, fontname="Helvetica", bgcolor="transparent"];
  node [shape=box, style="rounded,filled", fillcolor="#eef2fb", color="#3f51b5",
        fontname="Helvetica", fontsize=12, height=0.3];
  edge [color="#555555", arrowsize=0.6];
"""


def templates(pipeline: dict) -> dict[str, dict]:
    """Each foreach/matrix entry with the deps and outs its template names literally (no
    `${...}`): the arrows it draws once some params give it an item."""
    found = {}
    for name, stage in pipeline["stages"].items():
        body = stage.get("do", stage)
        if "foreach" in stage or "matrix" in stage:
            found[f"{name}@template"] = {
                kind: [p for p in paths(body.get(kind)) if "${" not in p]
                for kind in ("deps", "outs")
            }
    return found


def diagram(pipeline: dict, default: dict, variants: list[dict]) -> str:
    """Graphviz source: every dvc.yaml entry a box; an arrow solid where the default
    params draw it, dashed where only one of `variants` (the presets' params) or a
    foreach/matrix template (an entry no params fill yet) does."""
    stages = expand_stages(pipeline, default)
    solid = arrows(stages)
    drawn = [arrows(expand_stages(pipeline, v)) for v in variants]
    dashed = set().union(*drawn, arrows(stages | templates(pipeline))) - solid
    lines = [HEADER]
    for name, stage in pipeline["stages"].items():
        label = f"{name}@…" if "foreach" in stage or "matrix" in stage else name
        lines.append(f'  {name} [label="{label}"];')
    lines.append("")
    lines += [f"  {a} -> {b};" for a, b in sorted(solid)]
    lines += [f"  {a} -> {b} [style=dashed];" for a, b in sorted(dashed)]
    return "\n".join(lines) + "\n}\n"


def project_diagram(root: Path) -> str:
    """The diagram of the project at `root`: its dvc.yaml, params.yaml and each preset
    merged over params.yaml (a layered preset over its base), as `paracl preset` does."""
    import yaml

    from paracl.presets import base_of, load_preset, merge_preset

    pipeline = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    variants = []
    for path in sorted((root / "presets").glob("*.yaml")):
        base = base_of(path)
        under = params if base is None else merge_preset(params, load_preset(base, path.parent))
        variants.append(merge_preset(under, load_preset(path)))
    return diagram(pipeline, params, variants)
