"""What the docs site and the README render to, not only their Markdown text.

Why: a table whose `|---|` rule is not its second line is a paragraph of pipes to
Python-Markdown (the site) while the text still compares equal to the JSON, so only the
built HTML shows it. Every pipe table of every page must come out as a `<table>` with its
header cells, no paragraph may start with `|`, and every image a page shows must exist.
The README is rendered as GitHub does (GFM tables, here by markdown-it-py) and checked
the same way.

And what a reader of the built site would see wrong, each checked on the HTML (or, for
layout, in headless Chromium where it is installed): a cell's `{...}` read as HTML
attributes, `\\|` shown inside code, `<method>` hidden as a tag, a list run into its
paragraph, a wide table's columns hidden without a visible scroll, a plot whose text
shrinks below 9 px, a code line running off the edge, and a diagram that needs the network.
"""

from __future__ import annotations

import html
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


# Every element a page may hold: HTML's and the inline SVG's of the theme's icons. Any
# other tag is text that a browser swallowed (`metrics/eval/<method>/...`).
KNOWN_TAGS = set(
    """a abbr article aside b blockquote body br button caption circle code col
colgroup dd del details div dl dt em figcaption figure footer form g h1 h2 h3 h4 h5 h6 head
header hr html i img input kbd label li line link main mark meta nav ol p path polygon pre
rect s script section small span strong style sub summary sup svg table tbody td tfoot th
thead title tr u ul wbr""".split()
)
CELL_ATTRS = {"align", "style"}  # what Python-Markdown's tables put on a cell
LIST_LINE = re.compile(r"\n[ \t]*(?:[-*+]|\d+\.)(?: |$)")  # a list item inside a paragraph


class Page(HTMLParser):
    """The tables (their header cells), paragraphs, image sources, code texts, tag names,
    cell attributes, and list lines run into a paragraph, of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[str]] = []
        self.paragraphs: list[str] = []
        self.images: list[str] = []
        self.codes: list[str] = []
        self.tags: set[str] = set()
        self.cell_attrs: list[str] = []
        self.list_lines: list[str] = []
        self.loaded: list[str] = []  # the src / href of every script and stylesheet
        self._cell: list[str] | None = None
        self._para: list[str] | None = None
        self._code: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        attr = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag in ("th", "td"):
            self.cell_attrs += [name for name in attr if name not in CELL_ATTRS]
            self._cell = [] if tag == "th" else self._cell
        elif tag == "p":
            self._para = []
        elif tag == "code":
            self._code = []
        elif tag == "img":
            self.images.append(attr.get("src", ""))
        elif tag == "script" and attr.get("src"):
            self.loaded.append(attr["src"])
        elif tag == "link" and attr.get("rel") in ("stylesheet", "preconnect"):
            self.loaded.append(attr.get("href", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "th" and self._cell is not None:
            self.tables[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "p" and self._para is not None:
            self.paragraphs.append("".join(self._para).strip())
            self._para = None
        elif tag == "code" and self._code is not None:
            self.codes.append("".join(self._code))
            self._code = None

    def handle_data(self, data: str) -> None:
        for part in (self._cell, self._para, self._code):
            if part is not None:
                part.append(data)
        if self._para is not None and self._code is None:
            self.list_lines += [m.group().strip() for m in LIST_LINE.finditer(data)]


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def _plain(cell: str) -> str:
    """A Markdown header cell as its HTML text: no code ticks or emphasis, `\\|` a pipe,
    `&lt;` a `<` (Table 4's `<SIM95>`)."""
    cell = cell.replace("\\|", "|").replace("`", "").replace("**", "").replace("&lt;", "<")
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


def defects(page: Page) -> list[str]:
    """What a reader would see wrong in the page's text: defects 1 to 4 and 8."""
    found = [f"a table cell got the attribute '{a}' (a `{{...}}` read by attr_list)"
             for a in page.cell_attrs]  # fmt: skip
    found += [f"code shows a backslash before a pipe: {c[:60]!r}" for c in page.codes if "\\|" in c]
    found += [f"<{tag}> is not HTML: a placeholder the browser hides"
              for tag in sorted(page.tags - KNOWN_TAGS)]  # fmt: skip
    found += [f"a list runs into its paragraph (no blank line before it): {x!r}"
              for x in page.list_lines]  # fmt: skip
    found += [f"loads {src} from the network" for src in page.loaded
              if src.startswith(("http:", "https:", "//"))]  # fmt: skip
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
    """Where mkdocs writes docs/<page>.md (use_directory_urls: <page>/index.html; a
    folder's index.md: <folder>/index.html)."""
    rel = page.relative_to(ROOT / "docs").with_suffix("")
    return site / (rel.parent if rel.name == "index" else rel) / "index.html"


DOCS = sorted((ROOT / "docs").rglob("*.md"))


@pytest.mark.parametrize("page", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_docs_table_renders_and_every_image_exists(site, page):
    html_path = _built(site, page)
    assert html_path.is_file(), f"{page.relative_to(ROOT)} was not built"
    parsed = parse(html_path.read_text(encoding="utf-8"))
    check(str(page.relative_to(ROOT)), page.read_text(encoding="utf-8"), parsed)
    assert not defects(parsed), f"{page.relative_to(ROOT)}: {defects(parsed)}"
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
    assert not defects(parsed), f"README.md: {defects(parsed)}"
    for src in parsed.images:
        assert src.startswith("http") or (ROOT / src).is_file(), f"README shows a missing {src}"


def test_a_group_row_above_the_rule_is_caught():
    """The check itself: the old layout (a group row, then the header) must fail it."""
    from markdown import markdown

    text = "|  | Unsupervised |\n| Method | STS |\n|---|---|\n| none | 1.0 |\n"
    with pytest.raises(AssertionError, match="paragraph of pipes"):
        check("x", text, parse(markdown(text, extensions=["tables"])))


@pytest.mark.parametrize(
    "markdown, defect",
    [
        ("| a |\n|---|\n| splits {'dev': 46} |\n", "attribute"),
        ("| a |\n|---|\n| `x \\| y` |\n", "backslash before a pipe"),
        ("see metrics/eval/<method>/<task>.json\n", "is not HTML"),
        ("How to read it:\n- one\n- two\n", "list runs into"),
        ('<script src="https://unpkg.com/mermaid"></script>\n', "from the network"),
    ],
)
def test_each_text_defect_is_caught_and_markdown_table_escapes_it(markdown, defect):
    """The check itself, on the site's Markdown extensions; and the same text as a
    generated cell (markdown_table) renders clean on the site and on GitHub."""
    from markdown import markdown as render
    from markdown_it import MarkdownIt

    from paracl.core.tables import markdown_table

    site_html = render(markdown, extensions=["tables", "attr_list"])
    assert any(defect in d for d in defects(parse(site_html))), site_html
    cells = [line.strip("| ").replace("\\|", "|") for line in markdown.splitlines()
             if "---" not in line]  # fmt: skip
    table = markdown_table(["a"], [[c] for c in cells])
    for rendered in (render(table, extensions=["tables", "attr_list"]),
                     MarkdownIt("commonmark").enable("table").render(table)):  # fmt: skip
        assert not defects(parse(rendered)), table
        shown = html.unescape(re.sub(r"<[^>]+>", "", rendered))
        assert all(c.replace("`", "") in shown for c in cells), (table, shown)


def test_the_summarys_prose_escapes_a_placeholder():
    from paracl.report import escape_html

    text = "| `<m>` | &lt;x> |\nsee metrics/eval/<method>/<task>.json, `<code>` and p < 0.05\n"
    assert escape_html(text) == (
        "| `<m>` | &lt;x> |\nsee metrics/eval/&lt;method>/&lt;task>.json, `<code>` and p < 0.05\n"
    )


# -- layout: tables, plots, code blocks, the diagram -----------------------------------------

COLUMN_PX = 700  # the text column at a 1280 px window (the theme, both sidebars shown)
CSS = ROOT / "docs" / "stylesheets" / "extra.css"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def test_every_page_links_the_stylesheet_and_it_holds_the_layout_rules(site):
    """Where Chromium is missing (CI), the rules the layout test measures must be there."""
    css = re.sub(r"/\*.*?\*/", "", CSS.read_text(encoding="utf-8"), flags=re.S)
    rules = {m.group(1).strip(): m.group(2) for m in re.finditer(r"([^{}]+)\{([^}]*)\}", css)}
    assert "pre-wrap" in rules.get(".md-typeset pre > code", ""), "code blocks must wrap"
    assert "gradient" in rules.get(".md-typeset__scrollwrap", ""), "a hidden column's shadow"
    assert "nowrap" in rules.get(".md-typeset td:first-child > code", ""), "keys stay whole"
    for page in site.rglob("index.html"):
        assert "stylesheets/extra.css" in page.read_text(encoding="utf-8"), page


@pytest.fixture(scope="module")
def layout(site, tmp_path_factory) -> dict:
    """Every page as headless Chromium lays it out at 1280 px (tests/docs/layout_probe.html):
    its tables' hidden width, its code blocks' overflow, its first-column names that wrap."""
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium); the CSS test still runs")
    import json

    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    probe = site / "__layout_probe.html"
    template = (Path(__file__).parent / "layout_probe.html").read_text(encoding="utf-8")
    probe.write_text(template.replace("__PAGES__", json.dumps(pages)), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--allow-file-access-from-files", "--window-size=1280,2000",
             "--virtual-time-budget=30000",
             f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"]  # fmt: skip
    run = subprocess.run([browser, *flags, "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', run.stdout, re.S)
    assert found, f"Chromium laid out no page: {run.stderr[-1000:]}"
    return json.loads(html.unescape(found.group(1)))


def test_wide_tables_fit_or_scroll_visibly(layout):
    hidden = []
    for page, probe in layout.items():
        assert isinstance(probe, dict), f"{page}: {probe}"
        for table in probe["tables"]:
            if table["hidden_px"] > 0:
                assert table["shadow"] and table["scrollbar"] == "auto", (
                    f"{page}: the table '{table['head']}' hides {table['hidden_px']} px "
                    "with no visible scrollbar or shadow"
                )
                hidden.append((page, table["head"]))
    results = [(page, t) for page, probe in layout.items() if page.startswith("results/")
               for t in probe["tables"] if t["hidden_px"] > 0]  # fmt: skip
    assert not results, f"results: tables that do not fit at 1280 px: {results}"
    assert len(hidden) <= 5, f"more wide tables than the handful expected: {hidden}"


def test_code_blocks_wrap_and_table_keys_stay_whole(layout):
    for page, probe in layout.items():
        over = [c["text"] for c in probe["code"] if c["hidden_px"] > 0]
        assert not over, f"{page}: code runs off the right edge: {over}"
        assert not probe["keys"], f"{page}: a first-column name wraps: {probe['keys']}"


def _png_width(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[16:20], "big")  # the IHDR chunk's width


def _smallest_text_px(fig, png: Path) -> float:
    """The smallest text of a figure in CSS px as the docs show its PNG: no wider than the
    column, shrunk to it where wider."""
    from matplotlib.text import Text

    width = _png_width(png)
    sizes = [
        t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
    ]
    return min(sizes) * width / fig.get_figwidth() / 72 * min(1.0, COLUMN_PX / width)


def _plots(tmp_path: Path) -> list[tuple[str, object, Path]]:
    """Each plot `paracl report` draws for a committed result: (name, figure, PNG)."""
    from paracl import report

    out = []
    for name in report.result_names(ROOT / "results"):
        directory = ROOT / "results" / name
        if (directory / "summary.json").is_file():
            summary = report.ordered(report.read_json(directory / "summary.json"))
            png = tmp_path / f"{name}.png"
            out.append((name, report.plot_summary(summary, png, name, {}), png))
        png = tmp_path / f"{name}-heatmaps.png"
        fig = report.plot_heatmaps(directory / "heatmaps", png)
        if fig is not None:
            out.append((f"{name}-heatmaps", fig, png))
    return out


def test_plots_are_legible_at_the_column_width_and_say_what_they_plot(tmp_path):
    plots = _plots(tmp_path)
    assert plots
    for name, fig, png in plots:
        smallest = _smallest_text_px(fig, png)
        assert smallest >= 9, f"{name}: text of {smallest:.1f} px at the docs' column width"
        title = fig._suptitle.get_text() if fig._suptitle else ""
        assert "×100" in title or "%" in title, f"{name}: the title '{title}' names no unit"
    for png in sorted((ROOT / "docs" / "img").glob("*.png")):  # as committed: re-rendered
        assert _png_width(png) <= COLUMN_PX, f"{png.name}: wider than the column, shrunk"


def test_the_pipeline_diagram_is_a_committed_svg_that_needs_no_network(site):
    import yaml

    svg = ROOT / "docs" / "img" / "pipeline.svg"
    text = svg.read_text(encoding="utf-8")
    assert "img/pipeline.svg" in (site / "index.html").read_text(encoding="utf-8")
    for page in [*DOCS, ROOT / "mkdocs.yml"]:
        assert "mermaid" not in page.read_text(encoding="utf-8"), f"{page}: mermaid needs a CDN"
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    shown = set(re.findall(r"<text[^>]*>([^<@]+)", text))
    assert set(stages) <= shown, f"stages not in the diagram: {set(stages) - shown}"
    width = float(re.search(r'<svg width="([\d.]+)pt"', text).group(1)) * 4 / 3
    smallest = min(float(s) for s in re.findall(r'font-size="([\d.]+)"', text)) * 4 / 3
    assert smallest * min(1.0, COLUMN_PX / width) >= 9, "the diagram's text below 9 px"
