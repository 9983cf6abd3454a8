"""What the docs site and the README render to, not only their Markdown text.

Why: a table whose `|---|` rule is not its second line is a paragraph of pipes to
Python-Markdown (the site) while the text still compares equal to the JSON, so only the
built HTML shows it. Every pipe table of every page must come out as a `<table>` with its
header cells, no paragraph may start with `|`, and every image a page shows must exist.
The README is rendered as GitHub does (GFM tables, here by markdown-it-py) and checked
the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULE = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$")


class Page(HTMLParser):
    """The tables (their header cells), paragraphs and image sources of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[str]] = []
        self.paragraphs: list[str] = []
        self.images: list[str] = []
        self._cell: list[str] | None = None
        self._para: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "th":
            self._cell = []
        elif tag == "p":
            self._para = []
        elif tag == "img":
            self.images.append(dict(attrs).get("src", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._cell is not None:
            self.tables[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "p" and self._para is not None:
            self.paragraphs.append("".join(self._para).strip())
            self._para = None

    def handle_data(self, data: str) -> None:
        for part in (self._cell, self._para):
            if part is not None:
                part.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def _plain(cell: str) -> str:
    """A Markdown header cell as its HTML text: no code ticks or emphasis, `\\|` a pipe."""
    cell = cell.replace("\\|", "|").replace("`", "").replace("**", "")
    return " ".join(cell.split())


def markdown_headers(text: str) -> list[list[str]]:
    """The header cells of every pipe table in a Markdown text (outside code blocks)."""
    lines, found, fenced = text.splitlines(), [], False
    for i, line in enumerate(lines[:-1]):
        fenced ^= line.lstrip().startswith("```")
        if not fenced and line.startswith("|") and RULE.match(lines[i + 1]):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            found.append([_plain(c) for c in cells])
    return found


def check(name: str, markdown: str, page: Page) -> None:
    """Every table of the Markdown is a <table> with its header; no paragraph of pipes."""
    piped = [p[:80] for p in page.paragraphs if p.startswith("|")]
    assert not piped, f"{name}: a table renders as a paragraph of pipes: {piped}"
    rendered = list(page.tables)
    for header in markdown_headers(markdown):
        assert header in rendered, f"{name}: no <table> with header {header}"
        rendered.remove(header)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (make setup installs it with the dev extra)")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's end-of-life notice
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def _built(site: Path, page: Path) -> Path:
    """Where mkdocs writes docs/<page>.md (use_directory_urls: <page>/index.html)."""
    rel = page.relative_to(ROOT / "docs").with_suffix("")
    return site / ("index.html" if rel.name == "index" else rel / "index.html")


DOCS = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_docs_table_renders_and_every_image_exists(site, page):
    html_path = _built(site, page)
    assert html_path.is_file(), f"{page.relative_to(ROOT)} was not built"
    parsed = parse(html_path.read_text(encoding="utf-8"))
    check(str(page.relative_to(ROOT)), page.read_text(encoding="utf-8"), parsed)
    for src in parsed.images:
        if src.startswith(("http://", "https://", "data:")):
            continue
        target = (html_path.parent / src.split("#")[0]).resolve()
        assert target.is_file(), f"{page.relative_to(ROOT)} shows a missing image {src}"


def test_the_readme_renders_as_github_does():
    from markdown_it import MarkdownIt

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    parsed = parse(MarkdownIt("commonmark").enable("table").render(text))
    check("README.md", text, parsed)
    for src in parsed.images:
        assert src.startswith("http") or (ROOT / src).is_file(), f"README shows a missing {src}"


def test_a_group_row_above_the_rule_is_caught():
    """The check itself: the old layout (a group row, then the header) must fail it."""
    from markdown import markdown

    text = "|  | Unsupervised |\n| Method | STS |\n|---|---|\n| none | 1.0 |\n"
    with pytest.raises(AssertionError, match="paragraph of pipes"):
        check("x", text, parse(markdown(text, extensions=["tables"])))
