"""Named configurations (presets/<name>.yaml) applied to params.yaml in place.

A preset mirrors params.yaml's nesting and holds only the keys it changes. Applying it
deep-merges it into params.yaml (mappings merge key by key; a list or a scalar replaces
the old value) with ruamel.yaml's round-trip mode, so comments and key order survive and
`git diff params.yaml` shows exactly what the preset changed. The merged result is
validated with `paracl.schema.check_all` first; an invalid result writes nothing.

    paracl preset paper-en --dry-run     # list the keys that would change
    paracl preset paper-en               # rewrite params.yaml, then `dvc repro` / `dvc exp run`
    paracl expand                        # rewrite train_contrastive.runs after editing methods
    paracl preset --list                 # each preset's `# purpose:` and `# time:` lines

train_contrastive.runs (methods x seeds, which DVC's foreach reads) follows the merged
methods: applying a preset rewrites it, so a preset adds or removes a method in one line
and gives its seeds once (`seeds: [1, 2, 3]`). After editing methods or seeds by hand,
`paracl expand` rewrites it; every stage refuses a stale one (paracl.stages.train_contrastive.expand_runs).

Whatever layout params.yaml is in (DVC re-dumps it on `dvc exp run -S`), what is written
is read back and validated first, and replaces the file atomically (`_write`).

Why in place rather than a second params file: `dvc exp run`, `dvc params diff` and every
stage read params.yaml, so one file stays the single record of what a run used.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from paracl.core.params import ParamsError, validate

PRESETS_DIR = Path("presets")
RUNS = "train_contrastive.runs"
FINETUNE_RUNS = "evaluate.finetune_runs"


def _yaml():
    from ruamel.yaml import YAML

    y = YAML()  # round-trip: keeps comments, order, flow style
    y.preserve_quotes = True
    y.width = 100
    y.representer.add_representer(  # `null`, as params.yaml writes it, not an empty value
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    return y


_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*):")


def _blocks(text: str) -> tuple[str, dict[str, str]]:
    """(the text before the first top-level key, {top-level key: its lines up to the next})."""
    head: list[str] = []
    blocks: dict[str, list[str]] = {}
    current = head
    for line in text.splitlines(keepends=True):
        match = _TOP_KEY.match(line)
        if match:
            current = blocks.setdefault(match.group(1), [])
        current.append(line)
    return "".join(head), {key: "".join(lines) for key, lines in blocks.items()}


def _keep_untouched(original: str, dumped: str, touched: set[str]) -> str:
    """`dumped` with every top-level section the preset did not touch restored byte for
    byte from `original`: ruamel re-wraps long flow lists, and a preset should change
    only the lines it means to."""
    head, old = _blocks(original)
    _, new = _blocks(dumped)
    return head + "".join(
        old[key] if key not in touched and key in old else block for key, block in new.items()
    )


def _removes(node: Any, key: str, value: Any) -> bool:
    """A preset's `key: null` over a mapping removes that entry (e.g. a method under
    train_contrastive.methods), and in a mapping of mappings removing an absent entry
    is a no-op; anywhere else null is a value like any other."""
    if value is not None:
        return False
    if key in node:
        return isinstance(node[key], dict)
    return bool(node) and all(isinstance(v, dict) for v in node.values())


def deep_merge(base: Any, override: Any) -> Any:
    """A copy of `base` with `override` merged in: mappings recurse, anything else replaces,
    and null over a mapping removes it."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = copy.deepcopy(base)
        for key, value in override.items():
            if _removes(base, key, value):
                merged.pop(key, None)
            else:
                merged[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def _plain(value: Any) -> Any:
    """ruamel's commented containers -> plain dict/list (for validation and printing)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _leaves(sub, f"{prefix}{key}.")
    else:
        yield prefix[:-1], value


def changes(base: dict, preset: dict) -> list[tuple[str, Any, Any]]:
    """(dotted key, old value, new value) for every leaf the preset actually changes."""
    out = []
    for key, new in _leaves(_plain(preset)):
        old: Any = _plain(base)
        for part in key.split("."):
            old = old.get(part, "<absent>") if isinstance(old, dict) else "<absent>"
        if old != new:
            out.append((key, old, new))
    return out


def _flow(value: Any) -> Any:
    """Lists and mappings a preset inserts, in flow style (`[a, b]`) like params.yaml's."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, (list, dict)):
        node = (
            CommentedSeq([_flow(v) for v in value])
            if isinstance(value, list)
            else CommentedMap((k, _flow(v)) for k, v in value.items())
        )
        node.fa.set_flow_style()
        return node
    return value


def _merge_into(node, override) -> None:
    """Merge `override` into the ruamel node in place (keeps comments on untouched keys)."""
    for key, value in override.items():
        if _removes(node, key, value):
            node.pop(key, None)
        elif isinstance(value, dict) and isinstance(node.get(key), dict):
            _merge_into(node[key], value)
        else:
            node[key] = _flow(value)


def load_preset(name_or_path: str | Path, presets_dir: str | Path = PRESETS_DIR) -> dict:
    """The preset as plain data; `name` means presets_dir/<name>.yaml."""
    path = Path(name_or_path)
    if not path.suffix:
        path = Path(presets_dir) / f"{name_or_path}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in Path(presets_dir).glob("*.yaml"))
        close = difflib.get_close_matches(str(name_or_path), known, n=1, cutoff=0.6)
        if close:
            raise ParamsError(f"{path}: preset not found; did you mean `paracl preset {close[0]}`?")
        raise ParamsError(f"{path}: preset not found (known: {', '.join(known) or 'none'})")
    data = _yaml().load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: a preset must be a mapping like params.yaml")
    return _plain(data)


HEADER = re.compile(r"^# (purpose|time): (.+)$")
ON_TOP = re.compile(r"on top of ([\w.-]+)\s*$")  # a layered preset's purpose line ends so


def describe(path: str | Path) -> tuple[str, str]:
    """(purpose, time) from the preset's `# purpose: ...` and `# time: ...` lines in its
    header comment, which `paracl preset --list` shows; ParamsError naming the file when
    one is missing, so a new preset cannot go unlisted."""
    found: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        match = HEADER.match(line)
        if match:
            found.setdefault(match.group(1), match.group(2).strip())
    for key in ("purpose", "time"):
        if key not in found:
            raise ParamsError(f"{path}: no '# {key}: ...' line in its header comment")
    return found["purpose"], found["time"]


def base_of(path: str | Path) -> str | None:
    """The preset a layered one is applied after: its `# purpose:` line ends `on top of
    NAME` (effect-en-finetune adds a column to effect-en's runs)."""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        match = HEADER.match(line)
        if match and match.group(1) == "purpose":
            base = ON_TOP.search(match.group(2))
            return base.group(1) if base else None
    return None


def missing_base(name: str, preset: dict, params_path: Path, presets_dir: Path) -> str | None:
    """A one-line warning when `name` is layered on a base whose settings params.yaml does
    not hold (the keys the layered preset sets itself left aside), else None: applied
    alone, such a preset runs its column on the wrong encoders."""
    path = Path(name) if Path(name).suffix else presets_dir / f"{name}.yaml"
    base = base_of(path) if path.is_file() else None
    if base is None or not params_path.is_file():
        return None
    own = {key for key, _ in _leaves(preset)}
    _, _, doc = _load(params_path)
    pending = [
        key
        for key, old, new in changes(doc, load_preset(base, presets_dir))
        if key not in own and not (new is None and old == "<absent>")
    ]  # null: removed
    if not pending:
        return None
    more = f" (and {len(pending) - 1} more keys)" if len(pending) > 1 else ""
    return (f"warning: {path.stem} goes on top of {base}, whose {pending[0]}{more} "
            f"{params_path} does not hold: run `paracl preset {base}` first, then "
            f"`paracl preset {path.stem}` again")  # fmt: skip


def list_presets(presets_dir: str | Path = PRESETS_DIR) -> list[tuple[str, str, str]]:
    """(name, purpose, time) of every presets_dir/<name>.yaml, by name."""
    paths = sorted(Path(presets_dir).glob("*.yaml"), key=lambda p: p.stem)
    if not paths:
        raise ParamsError(f"{presets_dir}: no presets (*.yaml) here")
    return [(p.stem, *describe(p)) for p in paths]


def apply_preset(
    preset: dict, params_path: str | Path = "params.yaml", dry_run: bool = False
) -> list[tuple[str, Any, Any]]:
    """Merge `preset` into params.yaml in place; return the changed keys.

    Validation runs on the merged result before anything is written: an invalid preset
    raises ParamsError (naming the key) and leaves params.yaml untouched.
    """
    params_path = Path(params_path)
    y, original, doc = _load(params_path)
    try:
        merged = _checked(deep_merge(_plain(doc), preset))
    except ParamsError as err:
        raise ParamsError(f"{params_path} + preset: {err}") from None
    changed = changes(doc, preset) + _runs_change(doc, merged)
    if dry_run or not changed:
        return changed
    _merge_into(doc, preset)
    _set_runs(doc, merged["train_contrastive"]["runs"])
    _set_finetune_runs(doc, merged)
    _write(y, doc, original, {key.split(".")[0] for key, _, _ in changed}, params_path)
    return changed


def _load(params_path: Path) -> tuple[Any, str, Any]:
    """params.yaml as ruamel reads it (comments kept): the loader, the text and the doc."""
    if not params_path.is_file():
        raise ParamsError(f"{params_path}: file not found")
    y = _yaml()
    original = params_path.read_text(encoding="utf-8")
    return y, original, y.load(original)


def merge_preset(params: dict, preset: dict) -> dict:
    """`preset` deep-merged into `params`, with train_contrastive.runs rewritten from the
    merged methods and seeds: what `paracl preset` writes (plain data)."""
    from paracl.schema import with_runs  # every stage's schema: loads torch

    return with_runs(deep_merge(params, preset))


def expand(params_path: str | Path = "params.yaml", dry_run: bool = False) -> list:
    """Rewrite params.yaml's train_contrastive.runs from its methods and seeds (`paracl
    expand`); return the change ([] when it was up to date). Validated before writing."""
    params_path = Path(params_path)
    y, original, doc = _load(params_path)
    try:
        merged = _checked(_plain(doc))
    except ParamsError as err:
        raise ParamsError(f"{params_path}: {err}") from None
    changed = _runs_change(doc, merged)
    if changed and not dry_run:
        _set_runs(doc, merged["train_contrastive"]["runs"])
        _set_finetune_runs(doc, merged)
        _write(y, doc, original, {key.split(".")[0] for key, _, _ in changed}, params_path)
    return changed


def _checked(values: dict) -> dict:
    """`values` validated (ParamsError names the first bad key), their runs rewritten from
    the checked methods and seeds, and every stage's checks across keys run."""
    from paracl.schema import check_all, schema_keys, with_runs  # every stage's schema: loads torch

    tc = values.get("train_contrastive")
    if isinstance(tc, dict):  # the runs are rewritten below: an old list is not checked
        values = {**values, "train_contrastive": {**tc, "runs": {}}}
    return check_all(with_runs(validate(values, schema_keys())))


def _runs_change(doc, merged: dict) -> list[tuple[str, Any, Any]]:
    """The runs' names before and after, where the runs (or the fine-tuned runs) change."""
    old = _plain(doc.get("train_contrastive", {}).get("runs")) or {}
    new = merged["train_contrastive"]["runs"]
    out = [] if list(old.items()) == list(new.items()) else [(RUNS, list(old), list(new))]
    old_ft = _plain(doc.get("evaluate", {}).get("finetune_runs")) or []
    new_ft = merged["evaluate"]["finetune_runs"]
    return out + ([] if old_ft == new_ft else [(FINETUNE_RUNS, old_ft, new_ft)])


def _set_runs(doc, runs: dict) -> None:
    """train_contrastive.runs of the ruamel document, rewritten in place (one flow mapping a
    run; the key keeps its place and comments)."""
    from ruamel.yaml.comments import CommentedMap

    tc = doc["train_contrastive"]
    if not isinstance(tc.get("runs"), CommentedMap):
        at = list(tc).index("methods") + 1 if "methods" in tc else len(tc)
        tc.insert(at, "runs", CommentedMap())
    node = tc["runs"]
    for name in list(node):
        del node[name]
    for name, run in runs.items():
        node[name] = _flow(run)


def _set_finetune_runs(doc, merged: dict) -> None:
    """evaluate.finetune_runs of the ruamel document, rewritten in place (a flow list)."""
    doc["evaluate"]["finetune_runs"] = _flow(merged["evaluate"]["finetune_runs"])


def _write(y, doc, original: str, touched: set[str], params_path: Path) -> None:
    """Dump `doc` over params_path atomically, sections outside `touched` byte for byte.

    Whatever layout the file was in (DVC's `dvc exp run -S` re-dumps it in its own), the
    text is first read back: the byte-for-byte splice is kept only when it parses to `doc`,
    else ruamel's own dump of the whole file is written; and the written file is loaded and
    validated as every stage loads it before it replaces params.yaml."""
    from paracl.core.io import atomic_path
    from paracl.schema import load_params  # every stage's schema: loads torch

    buf = io.StringIO()
    y.dump(doc, buf)
    dumped, want = buf.getvalue(), _plain(doc)
    text = next(
        (t for t in (_keep_untouched(original, dumped, touched), dumped) if _reads(t, want)), None
    )
    if text is None:
        raise ParamsError(f"{params_path}: the rewritten file would not read back as written "
                          "(YAML 1.1 vs 1.2 scalars?); left unchanged")  # fmt: skip
    with atomic_path(params_path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        try:
            load_params(tmp)
        except ParamsError as err:
            raise ParamsError(str(err).replace(str(tmp), str(params_path), 1)) from None


def _reads(text: str, want: dict) -> bool:
    """Whether `text` parses, as the stages parse params.yaml (PyYAML), to `want`."""
    import yaml

    try:
        return yaml.safe_load(text) == want
    except yaml.YAMLError:
        return False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("name", nargs="?", help="presets/<name>.yaml, or a path to a preset file")
    which.add_argument(
        "--list", action="store_true", help="list the presets: purpose and expected time"
    )
    parser.add_argument("--params", default="params.yaml", help="the params file to rewrite")
    parser.add_argument("--presets-dir", default=str(PRESETS_DIR), help="where NAME is looked up")
    parser.add_argument("--dry-run", action="store_true", help="print the changes only")


def run_cli(args: argparse.Namespace) -> int:
    """`paracl preset NAME` or `paracl preset --list`; a ParamsError is left to the CLI's
    one-line error handling (paracl.cli.main)."""
    if args.list:
        rows = list_presets(args.presets_dir)
        width = max(len(name) for name, _, _ in rows)
        for name, purpose, time in rows:
            print(f"{name:<{width}}  {purpose}  [{time}]")
        return 0
    if not Path(args.params).is_file() and not Path(args.presets_dir).is_dir():
        raise ParamsError(f"{Path.cwd()}: not a paracl project (no {args.params}, no "
                          f"{args.presets_dir}/): run paracl in your paracl checkout")  # fmt: skip
    preset = load_preset(args.name, args.presets_dir)
    warning = missing_base(args.name, preset, Path(args.params), Path(args.presets_dir))
    if warning:
        print(warning, file=sys.stderr)
    changed = apply_preset(preset, args.params, dry_run=args.dry_run)
    for key, old, new in changed:
        old_text = old if old == "<absent>" else json.dumps(old, ensure_ascii=False)
        print(f"{key}: {old_text} -> {json.dumps(new, ensure_ascii=False)}")
    verb = "would change" if args.dry_run else "changed"
    print(f"{args.params}: {verb} {len(changed)} key(s) (preset {args.name})")
    return 0


def run_expand_cli(args: argparse.Namespace) -> int:
    """`paracl expand [--params P] [--dry-run]`: rewrite train_contrastive.runs."""
    changed = expand(args.params, dry_run=args.dry_run)
    for key, old, new in changed:
        print(f"{key}: {', '.join(old) or '(none)'} -> {', '.join(new)}")
    verb = "would be rewritten" if args.dry_run else "rewritten"
    print(f"{args.params}: {RUNS} and {FINETUNE_RUNS} {verb if changed else 'are up to date'}")
    return 0
