"""Check params.yaml against a schema before a stage does any work.

Why: a typo (`thetta: 0.4`) or an out-of-range value (`theta: 1.7`) must stop the
stage at once with a message naming the key, not an hour later with a traceback.

A schema is a dataclass, a `Section`: each field is a key, its type says what the key
holds, `param(min=, max=, help=)` adds a range (for a list or a dict: each item's), and
`param(names=f)` a name that selects code: a string (or each item) must be one of `f()`,
read from the code's own registry (the evaluation jobs, the losses), so a misspelt task
fails when params load, not after the pipeline has trained.

Each stage owns its contract: its module, paracl.stages.<stage>, declares its section and
a `Params(RunWide)` naming every top-level key the stage reads, and `load_params(Params)`
checks those keys alone, so a change to one stage's schema reruns that stage only (DVC
hashes the stage's module; another stage's only where it reads that stage's section). This module holds what every
stage shares: the checker, the run-wide keys (RunSettings, RunWide) and the reading of
the file. The whole file's schema, every stage's together, is paracl.schema's.

Each value is written once, in params.yaml (DVC reads it there); the schema holds no
second copy, so every key params.yaml sets is required. A default only makes optional a
key that an entry of a name-keyed mapping may leave out (a method's `data`, `seeds`, ...).
A preset is merged over params.yaml, so it names only what it changes. The checker knows

    int, float (ints pass), str, bool, X | None (null allowed), Literal["a", "b"],
    list[X], a Section (a nested mapping), dict[Lang, X] (exactly one key per language
    profile, as dict[Literal[...], X]), dict[str, X] (any names of [A-Za-z0-9_]+).

A key a section does not declare is an error, unless the section sets `extra_keys`.
"""

import dataclasses
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from paracl.core.errors import ParamsError
from paracl.core.languages import codes


class Section:
    """Base of a section: makes the subclass a keyword-only dataclass (fields with and
    without defaults in any order, as in params.yaml)."""

    extra_keys: ClassVar[bool] = False  # True: undeclared keys pass through unchecked

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(kw_only=True)(cls)
        # A stage module may postpone its annotations (strings): the checker reads each
        # field's type as an object, so resolve them now (a nested section by its name).
        hints = get_type_hints(cls, localns=dict(vars(cls)))
        for f in fields(cls):
            f.type = hints[f.name]

    @classmethod
    def check(cls, values: dict) -> None:
        """Checks across keys, on the checked values of a stage's Params (none here)."""


class OtherSection(Section):
    """A section that another stage owns and checks (its module declares it), read here as
    it is: a stage that reads part of another stage's section declares it so, and its code
    stays free of that stage's (its DVC deps too)."""

    extra_keys: ClassVar[bool] = True


def param(
    default: Any = MISSING,
    *,
    min: float | None = None,
    max: float | None = None,
    help: str = "",
    names: Callable[[], Iterable[str]] | None = None,
) -> Any:
    """A field with a range (for a list or a dict: each item's), the names it accepts
    (`names()`, read when checked) and a line of help. `default` only for a key that an
    entry of a name-keyed mapping may leave out: params.yaml holds every other value."""
    meta = {"min": min, "max": max, "help": help, "names": names}
    return dataclasses.field(default=default, metadata=meta)


Lang = Literal[tuple(codes())]  # the languages with a profile (paracl.core.languages)


class RunSettings(Section):
    """The run-wide keys a stage reads beside its own section: a stage function takes its
    section and these, typed, never the whole params (so it names what it reads). Declared
    once: Params inherits them, so they stay top-level keys of params.yaml."""

    seed: int = param(min=0, help="seed for every random choice in every stage")
    lang: Lang
    device: Literal["auto", "cpu", "cuda", "mps"]
    precision: Literal["auto", "bf16", "fp16", "fp32"] = param(
        help="autocast dtype of training, generation and encoding (paracl.core.device); auto: "
        "bf16/fp16 on CUDA, bf16 on a CPU with AMX or AVX512_BF16, fp32 elsewhere",
    )

    @classmethod
    def of(cls, params: dict) -> "RunSettings":
        """The run-wide keys of a validated params dict (load_params' result)."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})


class RunWide(RunSettings):
    """The top-level keys every stage may read: the run settings, and how its shards run
    (paracl.core.distributed: they never change what a stage writes, so they are no DVC
    param of any stage). A stage's `Params` subclasses this one and adds its own keys."""

    executor: Literal["local", "ray"] = param(help="per-shard engine")
    ray_address: str | None = param(help="null: start a local Ray")
    workers: int = param(min=1, help="CPU stages: processes / Ray tasks in flight")
    model_workers: int = param(min=1, help="model stages on Ray: actors")
    gpus_per_model_worker: float = param(min=0.0, help="GPUs per Ray model actor")


# -- the checker, driven by the declarations above -----------------------------------

Keys = dict[str, tuple[Any, Mapping[str, Any], Any]]  # name -> (type, metadata, default)
NO_META: Mapping[str, Any] = types.MappingProxyType({})
NAME = re.compile(r"[A-Za-z0-9_]+")  # of a key in a dict[str, X]


def _keys(tp: Any, meta: Mapping[str, Any] = NO_META, values: Iterable = (), key: str = "") -> Keys:
    """The keys a section or a dict[...] declares. dict[str, X] declares those it is given."""
    if is_dataclass(tp):
        return {f.name: (f.type, f.metadata, f.default) for f in fields(tp)}
    names, item = get_args(tp)
    if get_origin(names) is Literal:  # a fixed set, e.g. one entry per language
        return {name: (item, meta, MISSING) for name in get_args(names)}
    for name in values:  # any names, e.g. the methods of train_contrastive
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ParamsError(f"'{key}': bad name {name!r} (use letters, digits and _)")
    return {name: (item, meta, MISSING) for name in values}


def keys_of(schema: Any) -> Keys:
    """A Section's keys: {name: (type, metadata, default)}."""
    return _keys(schema)


def _describe(tp: Any, meta: Mapping[str, Any], nullable: bool) -> str:
    """The allowed values, in words, for error messages."""
    if get_origin(tp) is Literal:
        words = "one of " + ", ".join(repr(c) for c in get_args(tp))
    else:
        words = "int or float" if tp is float else (get_origin(tp) or tp).__name__
    lo, hi = meta.get("min"), meta.get("max")
    if get_origin(tp) is list:  # a list's range is its items'
        lo = hi = None
    if lo is not None and hi is not None:
        words += f" in [{lo}, {hi}]"
    elif lo is not None:
        words += f" >= {lo}"
    elif hi is not None:
        words += f" <= {hi}"
    return words + (" (or null)" if nullable else "")


def _check(value: Any, tp: Any, meta: Mapping[str, Any], key: str) -> Any:
    """Check one value against its declared type; return it with defaults filled in."""
    nullable = get_origin(tp) in (Union, types.UnionType)  # `X | None`, the only union
    if nullable:
        if value is None:
            return None
        (tp,) = [t for t in get_args(tp) if t is not type(None)]
    origin = get_origin(tp) or tp
    if is_dataclass(tp) or origin is dict:
        if not isinstance(value, dict):
            raise ParamsError(f"'{key}' must be a section (a mapping), got {value!r}")
        return _check_keys(value, _keys(tp, meta, value, key), key + ".", tp)
    if origin is list and isinstance(value, list):
        return [_check(v, get_args(tp)[0], meta, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is Literal:
        ok = value in get_args(tp)
    else:  # bool is a subclass of int: `seed: true` must not pass as an int
        accepted = (int, float) if origin is float else origin  # YAML writes 1 for 1.0
        ok = isinstance(value, accepted) and (origin is bool or not isinstance(value, bool))
    lo, hi = meta.get("min"), meta.get("max")
    if not ok or lo is not None and value < lo or hi is not None and value > hi:
        got = "null" if value is None else repr(value)
        raise ParamsError(f"'{key}' must be {_describe(tp, meta, nullable)}, got {got}")
    names = meta.get("names")
    if names is not None and value not in (known := list(names())):
        raise ParamsError(f"'{key}': unknown name {value!r} (known: {', '.join(known)})")
    return value


def check_value(value: Any, declared: tuple[Any, Mapping[str, Any]], key: str) -> Any:
    """Check one value against a declared (type, metadata) pair, e.g. keys_of(S)[name][:2]:
    a key that a nested entry sets for itself is checked as the section's own key is."""
    return _check(value, *declared, key)


def _check_keys(values: dict, keys: Keys, prefix: str, section: Any = None) -> dict:
    """Check a section's values key by key; fill in defaults; keep extra keys if allowed."""
    unknown = sorted(set(values) - set(keys), key=str)
    if unknown and not getattr(section, "extra_keys", False):
        known = ", ".join(sorted(keys))
        raise ParamsError(f"unknown key '{prefix}{unknown[0]}' (known here: {known})")
    checked = {}
    for name, (tp, meta, default) in keys.items():
        if name in values:
            checked[name] = _check(values[name], tp, meta, prefix + name)
        elif default is not MISSING:
            checked[name] = default
        else:
            raise ParamsError(f"missing key '{prefix}{name}'")
    return checked | {name: v for name, v in values.items() if name not in keys}


def validate(values: dict, schema: type[Section] | Keys) -> dict:
    """Validate a params mapping against a Section (or some of SCHEMA's keys); raise
    ParamsError naming the first bad key."""
    if not isinstance(values, dict):
        raise ParamsError("params must be a mapping of sections")
    return _check_keys(values, _keys(schema) if is_dataclass(schema) else schema, "", schema)


def _yaml_problem(path: Path, err: yaml.YAMLError) -> str:
    """One line for a YAML error: file:line (1-based), then what is wrong there. PyYAML's
    own message spans several lines and names the file "<unicode string>"."""
    mark = getattr(err, "problem_mark", None)
    if mark is not None:
        where = f"{path}:{mark.line + 1}:{mark.column + 1}"
        what = " ".join(filter(None, (getattr(err, "context", None), err.problem)))
        return f"{where}: not valid YAML: {what}"
    if isinstance(err, yaml.reader.ReaderError):  # a control character: binary data
        char = err.character if isinstance(err.character, int) else ord(err.character)
        return f"{path}: not valid YAML: {err.reason}: #x{char:04x} at offset {err.position}"
    return f"{path}: not valid YAML: {' '.join(str(err).split())}"


def read_params(path: str | Path = "params.yaml") -> dict:
    """params.yaml as a mapping, unchecked. Errors name the file (and the line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text (byte {err.start}): not a YAML file") from None
    except OSError as err:  # a directory, no permission, ...
        raise ParamsError(f"{path}: cannot be read: {err.strerror or err}") from None
    if not text.strip():
        raise ParamsError(f"{path}: the file is empty")
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ParamsError(_yaml_problem(path, err)) from None
    if not isinstance(values, dict):
        raise ParamsError(f"{path}: params must be a mapping of sections")
    return values


def check_params(values: dict, schema: type[Section]) -> dict:
    """The keys `schema` declares, checked, then its checks across keys (schema.check);
    the file's other top-level keys are other stages' and are left out."""
    declared = {f.name for f in fields(schema)}
    checked = validate({k: v for k, v in values.items() if k in declared}, schema)
    schema.check(checked)
    return checked


def load_params(schema: type[Section], path: str | Path = "params.yaml") -> dict:
    """Read params.yaml and check what a stage reads of it (its `Params`). Errors name
    the file and the key (or the line)."""
    values = read_params(path)
    try:
        return check_params(values, schema)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None
