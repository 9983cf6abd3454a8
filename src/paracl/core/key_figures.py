"""A stage's key figures: the few numbers dvc.yaml declares as the stage's metrics.

A stage's metrics JSON is its full record (models and provenance, per-set and per-tag
tables, notes, examples) that people, `paracl report` and the tests read; dvc.yaml keeps it
as a plain output (`outs:`, `cache: false`). DVC turns every number of a declared metrics
file into a column of `dvc exp show` and a line of `dvc metrics diff`, so what it declares
is the small file beside the record, `<name>.key.json`: rows kept, pairs made, the best
dev score. An experiment's table then leads with what it changed (the summary's scores,
metrics/scores.json, and these), not with thousands of provenance columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paracl.core.io import write_json

SUFFIX = ".key.json"


def key_path(path: str | Path) -> Path:
    """Where the key figures of the record at `path` go: `metrics/corpus.json` ->
    `metrics/corpus.key.json` (dvc.yaml declares that one as the metric)."""
    path = Path(path)
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


def pick(record: dict, keys: Sequence[str]) -> dict[str, Any]:
    """{dotted key: value} of `keys` ("dev.spearman" is record["dev"]["spearman"]); a
    figure the run did not measure (absent or None) is left out, not written as null."""
    out: dict[str, Any] = {}
    for dotted in keys:
        value: Any = record
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            out[dotted] = value
    return out


def write_metrics(record: dict, path: str | Path, keys: Sequence[str]) -> None:
    """Write a stage's full record at `path` and its key figures beside it (key_path),
    each atomically."""
    write_json(record, path)
    write_json(pick(record, keys), key_path(path))
