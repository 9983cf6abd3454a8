"""A part's config, built from its checked params.yaml section by one helper.

Why: params.yaml holds every value and paracl.core.params checks it. A part's config
dataclass (`CorruptConfig`, `TrainConfig`, ...) only declares the keys it reads, with no
default of its own, so each value is written once and cannot drift from params.yaml.
A field takes the section's key of the same name; what the section does not hold (the
run's seed and precision, a key of the enclosing section, a value the stage computes)
the stage passes by name, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def from_section(cls: type[T], section: Mapping[str, Any], **extra: Any) -> T:
    """`cls` with each field from `section` (keys it does not declare are left out) or
    from `extra`. A field in neither, an `extra` that is no field, and an `extra` that
    repeats a section key (two values for one field) are errors naming the field."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(extra) - set(names))
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}")
    twice = sorted(set(extra) & set(section))
    if twice:
        raise TypeError(f"{cls.__name__}.{twice[0]}: given by the section and by the caller")
    missing = [n for n in names if n not in section and n not in extra]
    if missing:
        raise TypeError(f"{cls.__name__}.{missing[0]}: not in the section, and not given")
    return cls(**{n: extra[n] if n in extra else section[n] for n in names})
