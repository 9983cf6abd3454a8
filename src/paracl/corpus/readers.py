"""Readers that turn raw Wikipedia dumps into documents (id, title, paragraphs).

Three formats, chosen by `prepare_corpus.input.<lang>.format`:

- `text`: one sentence or paragraph per line (e.g. SimCSE's wiki1m). Each line is a
  document whose id is `<file>:<line number>`; it has no title.
- `wiki40b`: Wiki-40B's text format. `_START_ARTICLE_` is followed by the title line,
  `_START_SECTION_` by a heading (skipped: headings are not sentences),
  `_START_PARAGRAPH_` by one line of text in which `_NEWLINE_` separates paragraphs.
  Each article is a document: `<file>:<article number>`.
- `jaquad`: JaQuAD's SQuAD-style JSON (`data[].title`, `data[].paragraphs[].context`).
  Each article is a document: `<file>:<article number>`.

Why the care with bytes: a corpus dump may hold a stray undecodable line or be cut off
mid-write (the mirrored wiki1m sample is). Such lines are counted in `ReadStats` and
skipped, never silently kept half-decoded; a file in the wrong format raises
`InputError` naming the file and line instead of producing garbage sentences.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from paracl.errors import InputError

log = logging.getLogger(__name__)

FORMATS = ("text", "wiki40b", "jaquad")
SUFFIXES = {"text": ".txt", "wiki40b": ".txt", "jaquad": ".json"}
MAX_EXAMPLES = 5  # file:line examples kept per kind of skip, for the metrics

START_ARTICLE = "_START_ARTICLE_"
START_SECTION = "_START_SECTION_"
START_PARAGRAPH = "_START_PARAGRAPH_"
NEWLINE = "_NEWLINE_"


@dataclass
class Document:
    """One article (or one line of a plain-text file)."""

    doc_id: str
    title: str
    paragraphs: list[str]


@dataclass
class ReadStats:
    """What the readers saw and skipped; merged into the stage metrics."""

    files: int = 0
    documents: int = 0
    paragraphs: int = 0
    undecodable_lines: int = 0
    truncated_final_lines: int = 0
    undecodable_examples: list[str] = field(default_factory=list)
    truncated_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "documents": self.documents,
            "paragraphs": self.paragraphs,
            "undecodable_lines": self.undecodable_lines,
            "undecodable_examples": self.undecodable_examples,
            "truncated_final_lines": self.truncated_final_lines,
            "truncated_examples": self.truncated_examples,
        }


def input_files(source: str | Path, fmt: str) -> list[tuple[Path, str]]:
    """The files of an input (a file, or a directory searched recursively) with their
    document-id prefixes. Raises InputError when there is nothing to read."""
    if fmt not in FORMATS:
        raise InputError(f"unknown corpus format {fmt!r} (known: {', '.join(FORMATS)})")
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: corpus input not found (did the fetch stage run?)")
    if path.is_file():
        files = [(path, path.stem)]
    else:
        suffix = SUFFIXES[fmt]
        found = sorted(p for p in path.rglob(f"*{suffix}") if p.is_file())
        files = [(p, p.relative_to(path).with_suffix("").as_posix()) for p in found]
        if not files:
            raise InputError(f"{path}: directory holds no *{suffix} files for format {fmt!r}")
    for file, _ in files:
        if file.stat().st_size == 0:
            raise InputError(f"{file}: corpus input is empty")
        with open(file, "rb") as f:
            if b"\x00" in f.read(8192):  # Parquet, gzip, a model file, ...: not text
                raise InputError(f"{file}: binary data, not a {fmt!r} corpus file")
    return files


def read_documents(source: str | Path, fmt: str, stats: ReadStats) -> Iterator[Document]:
    """Yield the documents of `source` in a fixed order (files sorted by path)."""
    reader = {"text": _read_text, "wiki40b": _read_wiki40b, "jaquad": _read_jaquad}[fmt]
    for file, prefix in input_files(source, fmt):
        stats.files += 1
        before = stats.documents
        for doc in reader(file, prefix, stats):
            stats.documents += 1
            stats.paragraphs += len(doc.paragraphs)
            yield doc
        if stats.documents == before:
            raise InputError(f"{file}: no text could be read from this file (format {fmt!r})")


def _decoded_lines(file: Path, stats: ReadStats) -> Iterator[tuple[int, str]]:
    """(line number, text) of every complete, decodable line; skips are counted.

    A last line without its newline is what a cut-off copy leaves (the mirrored
    wiki1m sample ends mid-word): it is dropped and counted, not kept truncated.
    """
    with open(file, "rb") as f:
        head = f.read(64).lstrip()
        if head.startswith((b"{", b"[")) and file.suffix.lower() == ".json":
            raise InputError(f"{file}: this is JSON, not text (use format: jaquad)")
        f.seek(0)
        for lineno, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):
                stats.truncated_final_lines += 1
                _example(stats.truncated_examples, f"{file}:{lineno}")
                log.warning("%s:%d: last line has no newline (cut off?); dropped", file, lineno)
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats.undecodable_lines += 1
                _example(stats.undecodable_examples, f"{file}:{lineno}")
                continue
            yield lineno, text.rstrip("\r\n").lstrip("\ufeff")


def _example(examples: list[str], where: str) -> None:
    if len(examples) < MAX_EXAMPLES:
        examples.append(where)


def _read_text(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    for lineno, line in _decoded_lines(file, stats):
        text = line.strip()
        if not text:
            continue
        if text in (START_ARTICLE, START_PARAGRAPH):
            raise InputError(
                f"{file}:{lineno}: '{text}' marker: this looks like Wiki-40B text; "
                "use format: wiki40b"
            )
        yield Document(f"{prefix}:{lineno}", "", [text])


def _read_wiki40b(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    doc: Document | None = None
    expect = None  # the marker whose content line comes next
    n_articles = 0
    for lineno, line in _decoded_lines(file, stats):
        text = line.strip()
        if not text:
            continue
        if text in (START_ARTICLE, START_SECTION, START_PARAGRAPH):
            if expect is not None:
                raise InputError(f"{file}:{lineno}: {text} where the line after {expect} belongs")
            if text == START_ARTICLE:
                if doc is not None:
                    yield doc
                doc = Document(f"{prefix}:{n_articles}", "", [])
                n_articles += 1
            elif doc is None:
                raise InputError(f"{file}:{lineno}: {text} before any {START_ARTICLE}")
            expect = text
            continue
        if doc is None:
            raise InputError(
                f"{file}:{lineno}: not Wiki-40B text format: expected {START_ARTICLE} "
                f"first, got {text[:60]!r}"
            )
        if expect == START_ARTICLE:
            doc.title = text
        elif expect == START_PARAGRAPH:
            doc.paragraphs.extend(p.strip() for p in text.split(NEWLINE) if p.strip())
        elif expect is None:
            raise InputError(
                f"{file}:{lineno}: text outside a paragraph (expected a _START_..._ marker)"
            )
        expect = None
    if doc is not None:
        yield doc


def _read_jaquad(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    raw = file.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(f"{file}:{line}: undecodable bytes (not UTF-8 JSON)") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{file}:{err.lineno}: not valid JSON: {err.msg}") from None
    data = obj.get("data") if isinstance(obj, dict) else None
    if not isinstance(data, list):
        raise InputError(f"{file}: not JaQuAD/SQuAD JSON: no top-level 'data' list")
    for i, article in enumerate(data):
        where = f"{file}: data[{i}]"
        if not isinstance(article, dict) or not isinstance(article.get("title"), str):
            raise InputError(f"{where}: not JaQuAD/SQuAD JSON: no 'title' string")
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list):
            raise InputError(f"{where}: not JaQuAD/SQuAD JSON: no 'paragraphs' list")
        contexts = []
        for j, para in enumerate(paragraphs):
            ctx = para.get("context") if isinstance(para, dict) else None
            if not isinstance(ctx, str):
                raise InputError(f"{where}.paragraphs[{j}]: no 'context' string")
            if ctx.strip():  # newlines stay: the Japanese splitter handles them
                contexts.append(ctx.strip())
        yield Document(f"{prefix}:{i}", article["title"].strip(), contexts)
