"""Load params.yaml and check it against one schema before a stage does any work.

Why: a typo (`thetta: 0.4`) or an out-of-range value (`theta: 1.7`) must stop the
stage at once with a message naming the key, not an hour later with a traceback.

The schema is plain data: each key maps to a `Param` (a leaf) or to a dict (a
section). Every key in the schema is required unless its Param has a default; a key in
params.yaml that the schema does not know is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MISSING = object()


class ParamsError(ValueError):
    """params.yaml does not match the schema; the message names the key."""


@dataclass(frozen=True)
class Param:
    """One leaf of the schema: its type and the values it may take."""

    type: type | tuple[type, ...]
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    item: Param | None = None  # for lists: the Param each item must satisfy
    default: Any = MISSING
    nullable: bool = False
    help: str = ""

    def describe(self) -> str:
        """The allowed values, in words, for error messages."""
        names = self.type if isinstance(self.type, tuple) else (self.type,)
        words = " or ".join(t.__name__ for t in names)
        if self.choices is not None:
            words = "one of " + ", ".join(repr(c) for c in self.choices)
        if self.min is not None and self.max is not None:
            words += f" in [{self.min}, {self.max}]"
        elif self.min is not None:
            words += f" >= {self.min}"
        elif self.max is not None:
            words += f" <= {self.max}"
        if self.nullable:
            words += " (or null)"
        return words


Schema = dict[str, "Param | Schema"]

FLOAT = (int, float)  # YAML writes 1 for 1.0; accept both where a float is meant

PROB = Param(FLOAT, min=0.0, max=1.0)
SEED = Param(int, min=0)
LANG = Param(str, choices=("en", "ja"))

# ---------------------------------------------------------------------------
# The schema of params.yaml: one section per stage plus a few top-level keys.
# Stages add their own section here (keep one section per stage).
# ---------------------------------------------------------------------------
SCHEMA: Schema = {
    "seed": Param(int, min=0, help="seed for every random choice in every stage"),
    "lang": LANG,
    "theta": Param(
        FLOAT, min=0.0, max=1.0, help="keep paraphrase rules with p(d|s) >= theta"
    ),
    "device": Param(str, choices=("auto", "cpu", "cuda", "mps"), default="auto"),
    "fetch": {
        "sources": Param(list, item=Param(str)),
        "mirror": Param(str, nullable=True, default=None),
    },
    "prepare_corpus": {
        "input": {
            "en": {"source": Param(str), "format": Param(str, choices=("text", "wiki40b", "jaquad"))},
            "ja": {"source": Param(str), "format": Param(str, choices=("text", "wiki40b", "jaquad"))},
        },
        "min_words": Param(int, min=1, help="keep sentences with more than this many words"),
        "max_words": Param(int, min=2, help="keep sentences with fewer than this many words"),
        "langdetect_threshold": PROB,
        "max_sentences": Param(int, min=1, nullable=True),
        "workers": Param(int, min=1, max=256),
        "shard_size": Param(int, min=1),
    },
    # -- stage sections above this line --
}


def _check(value: Any, spec: Param | dict, key: str) -> Any:
    """Check one value against its spec; return it with defaults filled in."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise ParamsError(f"'{key}' must be a section (a mapping), got {value!r}")
        return _check_section(value, spec, key + ".")
    if value is None:
        if spec.nullable:
            return None
        raise ParamsError(f"'{key}' must be {spec.describe()}, got null")
    # bool is a subclass of int: `seed: true` must not pass as an int.
    if isinstance(value, bool) and bool not in _as_tuple(spec.type):
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if not isinstance(value, spec.type):
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if spec.choices is not None and value not in spec.choices:
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if spec.min is not None and value < spec.min or spec.max is not None and value > spec.max:
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if spec.item is not None:
        return [_check(v, spec.item, f"{key}[{i}]") for i, v in enumerate(value)]
    return value


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


def _check_section(values: dict, schema: Schema, prefix: str = "") -> dict:
    unknown = sorted(set(values) - set(schema))
    if unknown:
        known = ", ".join(sorted(schema))
        raise ParamsError(f"unknown key '{prefix}{unknown[0]}' (known here: {known})")
    checked = {}
    for name, spec in schema.items():
        if name in values:
            checked[name] = _check(values[name], spec, prefix + name)
        elif isinstance(spec, Param) and spec.default is not MISSING:
            checked[name] = spec.default
        else:
            raise ParamsError(f"missing key '{prefix}{name}'")
    return checked


def validate(values: dict, schema: Schema = SCHEMA) -> dict:
    """Validate a whole params mapping; raise ParamsError naming the first bad key."""
    if not isinstance(values, dict):
        raise ParamsError("params must be a mapping of sections")
    return _check_section(values, schema)


def load_params(path: str | Path = "params.yaml") -> dict:
    """Read and validate params.yaml. Errors name the file and the key."""
    path = Path(path)
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None
    try:
        return validate(values or {})
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None
