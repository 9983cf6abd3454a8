"""Every repository path the docs name exists.

Why: a module moves (`src/paracl/fetch/` became `src/paracl/stages/fetch/sources/`) and the
pages, the comments of params.yaml and the captions `paracl report` writes keep naming the
old place, which a reader then looks for in vain. The check reads the README, every page
of docs/ (the generated ones included) and params.yaml's comments, and resolves each path
under src/paracl/, tests/, stages/ and bench/. The changelog is left out: it names files
as they were on the day it describes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A path from the repository root; the lookbehind skips a Markdown link's target (a page
# of docs/, checked by mkdocs) and the tail of a longer path (data/raw/stages/...).
PATH = re.compile(r"(?<![\w./\-(])((?:src/paracl|tests|stages|bench)/[\w./<>{}*,\-]*[\w/>}*])")


def sources() -> list[Path]:
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "changelog" not in p.name
                  and p.parent.name != "changelog")  # fmt: skip
    return [ROOT / "README.md", ROOT / "params.yaml", *docs]


def named_paths(path: Path) -> list[tuple[int, str]]:
    """(line number, path) of each repository path a file names; in a YAML file only in
    its comments."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if path.suffix == ".yaml":
            line = line[line.index("#") :] if "#" in line else ""
        found += [(number, m.group(1)) for m in PATH.finditer(line)]
    return found


def exists(path: str) -> bool:
    """Whether a named path is there: `<name>` and `*` stand for any name, `{a,b}` for
    each of its entries, and `module.attribute` (`tests/stage_helpers.copy_project`)
    for the module's file."""
    brace = re.search(r"\{([^{}]*)\}", path)
    if brace:
        return all(exists(path[: brace.start()] + alt + path[brace.end() :])
                   for alt in brace.group(1).split(","))  # fmt: skip
    pattern = re.sub(r"<[^<>]*>", "*", path).rstrip("/")
    if any(ROOT.glob(pattern)):
        return True
    module = re.match(r"(.+?)\.[a-z_]+(?:\.[a-z_]+)*$", pattern)
    return bool(module) and (ROOT / f"{module.group(1)}.py").is_file()


@pytest.mark.parametrize("source", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_named_exists(source):
    stale = [f"{source.relative_to(ROOT)}:{n}: {p}" for n, p in named_paths(source)
             if not exists(p)]  # fmt: skip
    assert not stale, "paths that do not exist:\n" + "\n".join(stale)


def test_the_check_finds_a_moved_module_and_resolves_placeholders(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "See `src/paracl/fetch/sources.tsv`, src/paracl/stages/<stage>.py, "
        "[a page](stages/ppdb.md), `tests/stage_helpers.copy_project` and "
        "`metrics/summary.{json,md}`.\n"
    )
    named = [p for _, p in named_paths(page)]
    assert named == ["src/paracl/fetch/sources.tsv", "src/paracl/stages/<stage>.py",
                     "tests/stage_helpers.copy_project"]  # fmt: skip
    assert [exists(p) for p in named] == [False, True, True]
    assert exists("src/paracl/core/{params,tables}.py")
    assert not exists("src/paracl/core/{params,nothing}.py")
    comments = tmp_path / "params.yaml"
    comments.write_text("a: 1  # from bench/gone.py\nb: tests/not-a-comment.py\n")
    assert named_paths(comments) == [(1, "bench/gone.py")]
