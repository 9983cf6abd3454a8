"""Each default is written once: params.yaml holds every value, a part's config none.

Why: the parts' config dataclasses repeated about 50 params.yaml defaults, and 5 had
drifted from it (issue 68 item 3). A config declares the keys it reads, with no default,
and its stage builds it from the checked section with paracl.core.configs.from_section.
These tests fail when a config gains a default or a field that its section spells
otherwise; the table they read (tests/conftest.py, PART_CONFIGS) is the one tests build
configs from.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path

import pytest
from conftest import PART_CONFIGS, params_at, part_config

from paracl.core.configs import from_section

PARTS = Path(__file__).resolve().parents[2] / "src" / "paracl" / "parts"


def _class(name: str) -> type:
    module, cls = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)


def defaulted(cls: type) -> list[str]:
    """The fields of `cls` that have a default of their own."""
    return [f.name for f in fields(cls) if (f.default, f.default_factory) != (MISSING, MISSING)]


def stray(cls: type, section: dict, extra: set[str]) -> list[str]:
    """The fields of `cls` that are neither a key of `section` nor passed by the stage."""
    return [f.name for f in fields(cls) if f.name not in section and f.name not in extra]


@pytest.mark.parametrize("name", sorted(PART_CONFIGS))
def test_a_part_config_has_no_default_and_spells_its_sections_keys(name):
    cls, (section, extra) = _class(name), PART_CONFIGS[name]
    assert not defaulted(cls), f"{name}: defaults of its own (params.yaml holds them)"
    keys = params_at(section)
    assert not stray(cls, keys, set(extra)), f"{name}: no such key in params.yaml's {section}"
    assert not set(extra) & set(keys), f"{name}: passed besides {section}, which has it"
    part_config(cls)  # and it builds from params.yaml as it is


def test_the_checks_see_a_default_and_a_key_spelled_otherwise():
    @dataclass
    class Drifted:
        max_length: int  # the section says max_seq_length
        patience: int = 3

    section = {"max_seq_length": 128, "patience": 3}
    assert defaulted(Drifted) == ["patience"]
    assert stray(Drifted, section, {"seed"}) == ["max_length"]


def test_every_config_of_the_parts_is_in_the_table():
    """A new `...Config` dataclass in paracl.parts is checked from the day it is added."""
    found = set()
    for path in PARTS.rglob("*.py"):
        module = ".".join(path.relative_to(PARTS.parents[1]).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Config"):
                found.add(f"{module.removesuffix('.__init__')}.{node.name}")
    assert found - set(PART_CONFIGS) == set()


@dataclass
class _Toy:
    lr: float
    seed: int


def test_from_section_takes_each_field_once():
    assert from_section(_Toy, {"lr": 0.1, "other": 1}, seed=3) == _Toy(0.1, 3)
    with pytest.raises(TypeError, match="_Toy.seed: not in the section"):
        from_section(_Toy, {"lr": 0.1})
    with pytest.raises(TypeError, match="_Toy.lr: given by the section and by the caller"):
        from_section(_Toy, {"lr": 0.1}, lr=0.2, seed=3)
    with pytest.raises(TypeError, match="no field 'sede'"):
        from_section(_Toy, {"lr": 0.1}, sede=3)
