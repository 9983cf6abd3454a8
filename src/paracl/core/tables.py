"""Markdown tables, written by tabulate in GitHub's pipe layout.

Why a library: a table joined by hand once gained a group row above its header, and
Python-Markdown (the docs site) then showed every result table as a paragraph of pipes.
tabulate writes exactly one header row, its `|---|` rule second, and pads the columns so
the raw Markdown reads as a table too. A group of columns (Table 3's "Similarity", "RTE")
goes into each header cell (`header_cells`), which GitHub and Python-Markdown both keep.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from tabulate import tabulate


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured pipe table; cells are written as given (no number parsing), on
    one line each, with their own `|` and `<` escaped."""
    return tabulate(
        [[_cell(cell) for cell in row] for row in rows],
        headers=[_cell(h) for h in headers],
        tablefmt="github",
        disable_numparse=True,
    )


def header_cells(titles: Sequence[str], groups: Sequence[str]) -> list[str]:
    """Each column's title, prefixed by its group where the table has more than one group
    ("RTE: SICK-E"); with one group the caller names it once in the legend instead."""
    if len(set(groups)) < 2:
        return list(titles)
    return [f"{group}: {title}" for title, group in zip(titles, groups, strict=True)]


def _cell(value: object) -> str:
    """One line, safe in both renderers (GitHub's and Python-Markdown's, the docs site):
    outside code spans `|` escaped, `<` as `&lt;` (a tag such as `<BLEU20>` would be raw
    HTML the browser hides) and `{` as `\\{` (attr_list reads a cell's trailing `{...}`
    as HTML attributes); a code span holding a `|` as a `<code>` element with `&#124;`,
    since GitHub needs `\\|` there and the site shows that backslash."""
    parts = " ".join(str(value).split()).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick opens no code span
        parts[-2:] = [f"{parts[-2]}`{parts[-1]}"]
    return "".join(_code(p) if i % 2 else _text(p) for i, p in enumerate(parts))


def _text(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace("{", "\\{")


def _code(code: str) -> str:
    if "|" not in code:
        return f"`{code}`"
    return "<code>" + html.escape(code, quote=False).replace("|", "&#124;") + "</code>"
