"""Readers that turn raw Wikipedia dumps into documents (id, title, paragraphs).

Three formats, chosen by `prepare_corpus.input.<lang>.format`:

- `text`: one sentence or paragraph per line (e.g. SimCSE's wiki1m). Each line is a
  document whose id is `<file>:<line number>`; it has no title.
- `wiki40b`: Wiki-40B's text format. `_START_ARTICLE_` is followed by the title line,
  `_START_SECTION_` by a heading (skipped: headings are not sentences),
  `_START_PARAGRAPH_` by one line of text in which `_NEWLINE_` separates paragraphs.
  Either a `.txt` file of such articles (document `<file>:<article number>`) or the
  Parquet files Hugging Face publishes (`google/wiki40b`: columns `wikidata_id`, `text`,
  `version_id`; one article per row, its `text` in the marker format; document
  `<file>:<wikidata_id>`). The title becomes the document's title (EBSIM needs it).
- `jaquad`: JaQuAD's SQuAD-style JSON (`data[].title`, `data[].paragraphs[].context`).
  Each article is a document: `<file>:<article number>`.
- `wiki_lines`: one sentence a line in article order, each article opening with its title
  line, as SimCSE's wiki1m (the mirror's English Wikipedia) is laid out, with no marker:
  the English titled corpus offline (EBSIM, presets/ebsim-en.yaml). A line is a title
  when `is_title` says so (Wikipedia's lead sentence names its subject); the lines up to
  the next title are its article (`<file>:<article number>`). Lines before the first
  title belong to no article and are skipped (logged).

Why the care with bytes: a real crawl holds stray undecodable lines and lines with
control characters, and a dump may be cut off mid-write (the mirrored wiki1m sample
is). Such lines are skipped and counted in `ReadStats` (the stage metrics), never kept
half-decoded, and the valid lines around them are kept. A file is refused as binary
only when it really is: a known binary signature (gzip, zip, Parquet, ...), or most of
its lines fail. A file in the wrong format raises `InputError` naming the file and
line instead of producing garbage sentences.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from paracl.core.errors import InputError

log = logging.getLogger(__name__)

FORMATS = ("text", "wiki40b", "jaquad", "wiki_lines")
SUFFIXES = {
    "text": (".txt",),
    "wiki40b": (".txt", ".parquet"),
    "jaquad": (".json",),
    "wiki_lines": (".txt",),
}
MAX_EXAMPLES = 5  # file:line examples kept per kind of skip, for the metrics
SAMPLE_BYTES = 1 << 16  # the start of a file, judged before any work
# C0 controls other than tab/newline/carriage return, and DEL: not text in a corpus line
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
SIGNATURES = {  # file starts that are never text
    b"PAR1": "Parquet",
    b"\x1f\x8b": "gzip",
    b"PK\x03\x04": "zip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"7z\xbc\xaf\x27\x1c": "7z",
    b"\x28\xb5\x2f\xfd": "zstd",
}

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
    lines: int = 0  # lines (or Parquet rows) seen in line-based files
    undecodable_lines: int = 0
    control_char_lines: int = 0
    truncated_final_lines: int = 0
    undecodable_examples: list[str] = field(default_factory=list)
    control_char_examples: list[str] = field(default_factory=list)
    truncated_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "files": self.files,
            "documents": self.documents,
            "paragraphs": self.paragraphs,
            "lines": self.lines,
            "undecodable_lines": self.undecodable_lines,
            "undecodable_examples": self.undecodable_examples,
            "control_char_lines": self.control_char_lines,
            "control_char_examples": self.control_char_examples,
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
        suffixes = SUFFIXES[fmt]
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in suffixes)
        files = [(p, p.relative_to(path).with_suffix("").as_posix()) for p in found]
        if not files:
            wanted = " or ".join(f"*{s}" for s in suffixes)
            raise InputError(f"{path}: directory holds no {wanted} files for format {fmt!r}")
    for file, _ in files:
        if file.stat().st_size == 0:
            raise InputError(f"{file}: corpus input is empty")
        _check_not_binary(file, fmt)
    return files


def is_parquet(file: Path) -> bool:
    with open(file, "rb") as f:
        return f.read(4) == b"PAR1"


def _check_not_binary(file: Path, fmt: str) -> None:
    """Refuse a file that is not text: a binary signature, or (line formats) a start
    where most lines are undecodable or hold control characters."""
    with open(file, "rb") as f:
        head = f.read(SAMPLE_BYTES)
    if fmt == "wiki40b" and head.startswith(b"PAR1"):
        return  # Hugging Face's Wiki-40B Parquet
    kind = next((k for sig, k in SIGNATURES.items() if head.startswith(sig)), None)
    if kind is not None:
        hint = " (Wiki-40B Parquet: use format: wiki40b)" if kind == "Parquet" else ""
        raise InputError(f"{file}: binary data ({kind}), not a {fmt!r} corpus file{hint}")
    if fmt == "jaquad":
        if b"\x00" in head:
            raise InputError(f"{file}: binary data, not a {fmt!r} corpus file")
        return
    lines = head.split(b"\n")
    if len(head) == SAMPLE_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the sample cut the last one
    bad = sum(not _usable(line) for line in lines if line.strip())
    total = sum(1 for line in lines if line.strip())
    _refuse_if_mostly_bad(file, fmt, bad, total)


def _usable(raw: bytes) -> bool:
    try:
        return not CONTROL.search(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return False


def _refuse_if_mostly_bad(file: Path, fmt: str, bad: int, total: int) -> None:
    if total and bad * 2 > total:
        raise InputError(
            f"{file}: binary data, not a {fmt!r} corpus file ({bad} of {total} lines are "
            "undecodable or hold control characters)"
        )


def read_documents(source: str | Path, fmt: str, stats: ReadStats) -> Iterator[Document]:
    """Yield the documents of `source` in a fixed order (files sorted by path)."""
    reader = {
        "text": _read_text,
        "wiki40b": _read_wiki40b,
        "jaquad": _read_jaquad,
        "wiki_lines": _read_wiki_lines,
    }[fmt]
    for file, prefix in input_files(source, fmt):
        stats.files += 1
        before = stats.documents
        for doc in reader(file, prefix, stats):
            stats.documents += 1
            stats.paragraphs += len(doc.paragraphs)
            yield doc
        if stats.documents == before:
            raise InputError(f"{file}: no text could be read from this file (format {fmt!r})")


def _decoded_lines(file: Path, stats: ReadStats, fmt: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every complete, decodable line; skips are counted.

    A last line without its newline is what a cut-off copy leaves (the mirrored
    wiki1m sample ends mid-word): it is dropped and counted, not kept truncated.
    """
    with open(file, "rb") as f:
        head = f.read(64).lstrip()
        if head.startswith((b"{", b"[")) and file.suffix.lower() == ".json":
            raise InputError(f"{file}: this is JSON, not text (use format: jaquad)")
        f.seek(0)
        bad = total = 0
        for lineno, raw in enumerate(f, 1):
            stats.lines += 1
            if not raw.endswith(b"\n"):
                stats.truncated_final_lines += 1
                _example(stats.truncated_examples, f"{file}:{lineno}")
                log.warning("%s:%d: last line has no newline (cut off?); dropped", file, lineno)
                continue
            total += bool(raw.strip())
            try:
                text = raw.decode("utf-8").rstrip("\r\n").lstrip("\ufeff")
            except UnicodeDecodeError:
                bad += 1
                stats.undecodable_lines += 1
                _example(stats.undecodable_examples, f"{file}:{lineno}")
                continue
            if CONTROL.search(text):
                bad += 1
                stats.control_char_lines += 1
                _example(stats.control_char_examples, f"{file}:{lineno}")
                continue
            yield lineno, text
    _refuse_if_mostly_bad(file, fmt, bad, total)


def _example(examples: list[str], where: str) -> None:
    if len(examples) < MAX_EXAMPLES:
        examples.append(where)


def _read_text(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    for lineno, line in _decoded_lines(file, stats, "text"):
        text = line.strip()
        if not text:
            continue
        if text in (START_ARTICLE, START_PARAGRAPH):
            raise InputError(
                f"{file}:{lineno}: '{text}' marker: this looks like Wiki-40B text; "
                "use format: wiki40b"
            )
        yield Document(f"{prefix}:{lineno}", "", [text])


TITLE_WORDS = 12  # a title line has at most this many words
# a sentence ends so; a title does not (a closing parenthesis may: "Nile (ship)")
SENTENCE_END = re.compile(r"[.!?:;,\"']$")
QUALIFIER = re.compile(r"\s*\([^()]*\)$")  # Wikipedia's "(disambiguation)" after a title


def is_title(line: str, following: str) -> bool:
    """Whether `line` opens an article of Wikipedia text laid out a sentence a line
    (wiki_lines): a short line (at most TITLE_WORDS words) that starts with a capital or a
    digit, ends in no sentence punctuation, and whose every word (its trailing
    parenthesised qualifier left out) occurs in `following`, the next line: a Wikipedia
    lead sentence names its subject ("Raymar Jose" / "Raymar A. Jose is a Filipino ...")."""
    words = line.split()
    if not 1 <= len(words) <= TITLE_WORDS or SENTENCE_END.search(line):
        return False
    if not (line[0].isupper() or line[0].isdigit()):
        return False
    head = QUALIFIER.sub("", line).split()
    return bool(head) and all(word in following for word in head)


def _read_wiki_lines(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    """Articles of a sentence-a-line Wikipedia text, each from its title line (is_title)
    to the next one."""
    lines = [text.strip() for _, text in _decoded_lines(file, stats, "wiki_lines")]
    lines = [text for text in lines if text]
    article: tuple[str, list[str]] | None = None
    n = before = 0
    for i, text in enumerate(lines):
        if i + 1 < len(lines) and is_title(text, lines[i + 1]):
            if article is not None and article[1]:
                yield Document(f"{prefix}:{n}", *article)
                n += 1
            article = (text, [])
        elif article is None:
            before += 1
        else:
            article[1].append(text)
    if article is not None and article[1]:
        yield Document(f"{prefix}:{n}", *article)
    if before:
        log.info("%s: %d line(s) before the first title skipped (no article)", file, before)


def _read_wiki40b(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    if is_parquet(file):
        yield from _read_wiki40b_parquet(file, prefix, stats)
        return
    lines = ((f"{file}:{n}", line) for n, line in _decoded_lines(file, stats, "wiki40b"))
    for n, (title, paragraphs) in enumerate(_wiki40b_articles(lines)):
        yield Document(f"{prefix}:{n}", title, paragraphs)


def _read_wiki40b_parquet(file: Path, prefix: str, stats: ReadStats) -> Iterator[Document]:
    """One article per row of Hugging Face's google/wiki40b Parquet (`text` in the
    marker format, `wikidata_id` naming the article)."""
    try:
        pf = pq.ParquetFile(file)
    except Exception as err:  # pyarrow raises several types for a damaged file
        raise InputError(f"{file}: not a readable Parquet file ({err})") from None
    names = pf.schema_arrow.names
    if "text" not in names:
        raise InputError(f"{file}: not Wiki-40B Parquet: no 'text' column (has: {names})")
    columns = ["text"] + (["wikidata_id"] if "wikidata_id" in names else [])
    row = 0
    for batch in pf.iter_batches(batch_size=512, columns=columns):
        data = batch.to_pydict()
        ids = data.get("wikidata_id", [None] * batch.num_rows)
        for text, wikidata_id in zip(data["text"], ids, strict=True):
            where = f"{file}: row {row}"
            row += 1
            stats.lines += 1
            if not text or not text.strip():
                stats.undecodable_lines += 1
                _example(stats.undecodable_examples, where)
                continue
            lines = ((f"{where} line {n}", ln) for n, ln in enumerate(text.split("\n"), 1))
            articles = list(_wiki40b_articles(lines))
            if len(articles) != 1:
                raise InputError(f"{where}: {len(articles)} articles in one row, expected 1")
            title, paragraphs = articles[0]
            yield Document(f"{prefix}:{wikidata_id or row - 1}", title, paragraphs)


def _wiki40b_articles(lines: Iterable[tuple[str, str]]) -> Iterator[tuple[str, list[str]]]:
    """(title, paragraphs) of each article in marker-format lines ((where, text) pairs)."""
    article: tuple[str, list[str]] | None = None
    expect = None  # the marker whose content line comes next
    for where, line in lines:
        text = line.strip()
        if not text:
            continue
        if text in (START_ARTICLE, START_SECTION, START_PARAGRAPH):
            if expect is not None:
                raise InputError(f"{where}: {text} where the line after {expect} belongs")
            if text == START_ARTICLE:
                if article is not None:
                    yield article
                article = ("", [])
            elif article is None:
                raise InputError(f"{where}: {text} before any {START_ARTICLE}")
            expect = text
            continue
        if article is None:
            raise InputError(
                f"{where}: not Wiki-40B text format: expected {START_ARTICLE} "
                f"first, got {text[:60]!r}"
            )
        if expect == START_ARTICLE:
            article = (text, article[1])
        elif expect == START_PARAGRAPH:
            article[1].extend(p.strip() for p in text.split(NEWLINE) if p.strip())
        elif expect is None:
            raise InputError(f"{where}: text outside a paragraph (expected a _START_..._ marker)")
        expect = None
    if article is not None:
        yield article


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
