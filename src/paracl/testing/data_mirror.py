"""A small data mirror in the published formats, with its own registry.

Why: a paper preset fetches ~2 GB (SNLI, MultiNLI, ESCI, Wiki-40B, ...) that an offline
machine has not got, and a test that runs the whole pipeline needs small inputs. This
builds, for the sources a run fetches, a mirror directory of SMALL files in the SAME
formats and at the same paths as the registry's (`src/paracl/stages/fetch/sources/sources.tsv`):

- a file the origin mirror (../shared/data) holds is cut down in its own format (a
  stride sample of its lines, header kept; a few articles of a JSON file; the first
  synonym groups of Sudachi's file), so every split and genre keeps a few rows;
- a file it lacks is written from the publisher's documented layout (the zip and tar
  archives with their inner folders, JSON Lines, Parquet columns, Wiki-40B's markers),
  filled with real sentences of the origin (English Wikipedia, Japanese JaQuAD).

Their bytes differ from the published files, so the mirror carries its own registry,
`<mirror>/sources.tsv` (same columns, same URLs, its own sha256 and sizes). Point fetch
at both, as any user with a private mirror would:

    PARACL_DATA_MIRROR=<mirror> PARACL_DATA_REGISTRY=<mirror>/sources.tsv dvc repro

    python -m paracl.testing.data_mirror --sources snli esci --out /tmp/mini-mirror
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import io
import json
import math
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

from paracl.stages.fetch.sources.registry import (
    COLUMNS,
    SourceFile,
    file_digests,
    load_registry,
    select,
)
from paracl.testing.standins import TRAINING_TEXT

ROWS = 60  # data lines kept per table (plus its first line)
NOTE = "paracl.testing.data_mirror: a small file in the published format, not the published file"
WHOLE = ("README", "LICENSE", "LEGAL", "readme", "00-readme", "synonyms-format")


# --- cutting down a real file --------------------------------------------------------


def _stride(lines: list, rows: int) -> list:
    """The first line (a header, or a row) and a stride sample of the rest."""
    if len(lines) <= rows + 1:
        return lines
    step = math.ceil((len(lines) - 1) / rows)
    return [lines[0], *lines[1::step]]


def _shrink_lines(data: bytes, rows: int) -> bytes:
    return b"".join(_stride(data.splitlines(keepends=True), rows))


def _shrink_json(data: bytes, rows: int) -> bytes | None:
    """SQuAD-style JSON (JaQuAD): a few articles of a few paragraphs; None if not JSON."""
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except ValueError:
        return None  # JSON Lines (JGLUE): one object per line
    articles = doc["data"][: max(2, rows // 20)]
    for article in articles:
        article["paragraphs"] = article["paragraphs"][:3]
    return json.dumps({**doc, "data": articles}, ensure_ascii=False).encode("utf-8")


def _shrink_blocks(data: bytes, rows: int) -> bytes:
    """Blank-line separated groups (Sudachi synonyms): the first groups, whole."""
    blocks = data.split(b"\n\n")
    return b"\n\n".join(blocks[: rows // 2]) + b"\n"


def _shrink_csv_records(data: bytes, rows: int) -> bytes:
    """CSV whose quoted fields hold line breaks (JCSE QAbot): sample whole records."""
    text = data.decode("utf-8")
    records = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(_stride(records, rows))
    return out.getvalue().encode("utf-8")


def shrink(entry: SourceFile, data: bytes, rows: int = ROWS) -> bytes:
    """`data` (a real file of the registry) cut down in its own format."""
    name = Path(entry.file).name
    if name.startswith(WHOLE):
        return data  # (a table of at most `rows` lines stays whole below: STS inputs and
    # gold scores are cut at the same lines, so their pairs stay aligned)
    if name.endswith(".json"):
        shrunk = _shrink_json(data, rows)
        if shrunk is not None:
            return shrunk
    if entry.source == "sudachi-synonyms":
        return _shrink_blocks(data, rows)
    if fnmatch.fnmatch(entry.file, "jcse/QAbot/*/data.csv"):
        return _shrink_csv_records(data, rows)
    return _shrink_lines(data, rows)


# --- writing a file the origin lacks, from its documented layout ----------------------


class Text:
    """Real sentences to fill synthesised files with (English and Japanese)."""

    def __init__(self, origin: Path | None):
        self.en = _english(origin) or [s.capitalize() for s in TRAINING_TEXT[:7]]
        self.ja = _japanese(origin) or TRAINING_TEXT[9:]

    def pick(self, lang: str, i: int) -> str:
        pool = self.ja if lang == "ja" else self.en
        return pool[i % len(pool)]

    def pair(self, lang: str, i: int) -> tuple[str, str]:
        """A sentence and a related one (every pair differs; labels cycle outside)."""
        a, b = self.pick(lang, i), self.pick(lang, i + 7)
        return a, (b if i % 3 else a[: max(4, len(a) * 2 // 3)])


def _english(origin: Path | None) -> list[str]:
    path = origin / "wiki-en/wiki1m_for_simcse.txt" if origin else None
    if not path or not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[:-1]
    return [line for line in lines if 8 <= len(line.split()) <= 30][:400]


def _japanese(origin: Path | None) -> list[str]:
    path = origin / "wiki-ja/dev/jaquad_dev_0000.json" if origin else None
    if not path or not path.is_file():
        return []
    doc = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for article in doc["data"]:
        for para in article["paragraphs"]:
            sentences = " ".join(para["context"].split()).split("。")  # one line each
            out += [s + "。" for s in sentences if 10 <= len(s) <= 60]
    return out[:400]


def _lines(rows: Iterable[Iterable], crlf: bool = False) -> bytes:
    end = "\r\n" if crlf else "\n"
    return "".join("\t".join(map(str, r)) + end for r in rows).encode("utf-8")


def _jsonl(records: Iterable[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(2015, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


def _tar_gz(members: dict[str, bytes]) -> bytes:
    import gzip

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1420070400, 0o644
            tf.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


NLI = ("entailment", "neutral", "contradiction")


def _nli_jsonl(text: Text, n: int, genre: bool) -> bytes:
    """SNLI / MultiNLI JSON Lines: gold_label ('-' where annotators disagreed), the
    sentences and their parses, annotator labels."""
    rows = []
    for i in range(n):  # as published: each premise has three hypotheses, one per label
        s1, s2 = text.pick("en", i // 3), text.pair("en", i)[1]
        gold = "-" if i % 17 == 16 else NLI[i % 3]
        row = {"annotator_labels": [NLI[i % 3]] * 5, "gold_label": gold, "pairID": f"{i}e",
               "sentence1": s1, "sentence1_binary_parse": "( " + s1 + " )",
               "sentence1_parse": "(ROOT (S " + s1 + "))", "sentence2": s2,
               "sentence2_binary_parse": "( " + s2 + " )",
               "sentence2_parse": "(ROOT (S " + s2 + "))"}  # fmt: skip
        if genre:
            row |= {"genre": ("fiction", "government", "travel")[i % 3], "promptID": i}
        else:
            row["captionID"] = f"{i}.jpg#0"
        rows.append(row)
    return _jsonl(rows)


def _snli(text: Text, n: int) -> bytes:
    return _zip({f"snli_1.0/snli_1.0_{s}.jsonl": _nli_jsonl(text, n, False)
                 for s in ("train", "dev", "test")} | {"snli_1.0/README.txt": b"SNLI 1.0\n"})  # fmt: skip


def _mnli(text: Text, n: int) -> bytes:
    splits = ("train", "dev_matched", "dev_mismatched")
    return _zip({f"multinli_1.0/multinli_1.0_{s}.jsonl": _nli_jsonl(text, n, True)
                 for s in splits} | {"multinli_1.0/README.txt": b"MultiNLI 1.0\n"})  # fmt: skip


def _simcse_nli(text: Text, n: int) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["sent0", "sent1", "hard_neg"])
    for i in range(n):
        s1, s2 = text.pair("en", i)
        writer.writerow([s1, s2, text.pick("en", i + 3)])
    return out.getvalue().encode("utf-8")


def _wiki1m(text: Text, n: int) -> bytes:
    return "".join(text.pick("en", i) + "\n" for i in range(n * 4)).encode("utf-8")


def _paws_rows(text: Text, n: int, lang: str) -> list[list]:
    head = [["id", "sentence1", "sentence2", "label"]]
    return head + [[i + 1, *text.pair(lang, i), int(i % 3 == 0)] for i in range(n)]


def _paws(text: Text, n: int) -> bytes:
    """PAWS-Wiki Labeled (Final): final/{train,dev,test}.tsv, CRLF as published."""
    return _tar_gz({f"final/{s}.tsv": _lines(_paws_rows(text, n, "en"), crlf=True)
                    for s in ("train", "dev", "test")})  # fmt: skip


def _pawsx(text: Text, n: int) -> bytes:
    """PAWS-X: x-final/<lang>/{translated_train,dev_2k,test_2k}.tsv (en: train.tsv)."""
    members = {}
    for lang in ("en", "ja"):
        train = "train.tsv" if lang == "en" else "translated_train.tsv"
        for name in (train, "dev_2k.tsv", "test_2k.tsv"):
            members[f"x-final/{lang}/{name}"] = _lines(_paws_rows(text, n, lang))
    return _tar_gz(members)


def _jnli_train(text: Text, n: int) -> bytes:
    return _jsonl({"sentence_pair_id": str(i), "yjcaptions_id": f"{i}-{i + 1}-{i + 2}",
                   "sentence1": text.pair("ja", i)[0], "sentence2": text.pair("ja", i)[1],
                   "label": NLI[i % 3]} for i in range(n))  # fmt: skip


def _jsnli(text: Text, n: int) -> bytes:
    """JSNLI 1.1: label<TAB>premise<TAB>hypothesis, words separated by spaces; as SNLI,
    which it translates, each premise has hypotheses of every label."""

    def row(i: int) -> list[str]:
        premise, hypothesis = text.pick("ja", i // 3), text.pair("ja", i)[1]
        return [NLI[i % 3], " ".join(premise), " ".join(hypothesis)]

    def tsv() -> bytes:
        return _lines(row(i) for i in range(n))

    files = ("train_w_filtering.tsv", "train_wo_filtering.tsv", "dev.tsv")
    return _zip({f"jsnli_1.1/{f}": tsv() for f in files} | {"jsnli_1.1/README.md": b"JSNLI\n"})


def _qqp(text: Text, n: int) -> bytes:
    head = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    rows = [[i, 2 * i, 2 * i + 1, *text.pair("en", i), i % 2] for i in range(n)]
    test = [["id", "question1", "question2"], *([r[0], r[3], r[4]] for r in rows)]
    return _zip({"QQP/train.tsv": _lines([head, *rows]), "QQP/dev.tsv": _lines([head, *rows]),
                 "QQP/test.tsv": _lines(test)})  # fmt: skip


def _qnli(text: Text, n: int) -> bytes:
    head = ["index", "question", "sentence", "label"]
    labels = ("entailment", "not_entailment")
    rows = [[i, *text.pair("en", i), labels[i % 2]] for i in range(n)]
    test = [head[:3], *(r[:3] for r in rows)]
    return _zip({"QNLI/train.tsv": _lines([head, *rows]), "QNLI/dev.tsv": _lines([head, *rows]),
                 "QNLI/test.tsv": _lines(test)})  # fmt: skip


LOCALES = (("us", "en"), ("jp", "ja"), ("es", "en"))


def _parquet(columns: dict[str, list]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


def _esci_examples(text: Text, n: int) -> bytes:
    rows = [(i, loc, lang) for i in range(n) for loc, lang in LOCALES]
    return _parquet({
        "example_id": [j for j in range(len(rows))],
        "query": [" ".join(text.pick(lang, i // 4).split()[:3])[:20] for i, _, lang in rows],
        "query_id": [i // 4 for i, _, _ in rows],
        "product_id": [f"B{i:09d}" for i, _, _ in rows],
        "product_locale": [loc for _, loc, _ in rows],
        "esci_label": ["ESCI"[i % 4] for i, _, _ in rows],
        "small_version": [i % 2 for i, _, _ in rows],
        "large_version": [1 for _ in rows],
        "split": ["test" if (i // 4) % 4 == 3 else "train" for i, _, _ in rows],  # all labels in both
    })  # fmt: skip


def _esci_products(text: Text, n: int) -> bytes:
    rows = [(i, loc, lang) for i in range(n) for loc, lang in LOCALES]
    return _parquet({
        "product_id": [f"B{i:09d}" for i, _, _ in rows],
        "product_title": [text.pick(lang, i + 1) for i, _, lang in rows],
        "product_description": [None for _ in rows],
        "product_bullet_point": [text.pick(lang, i + 2) for i, _, lang in rows],
        "product_brand": ["paracl" for _ in rows],
        "product_color": [None for _ in rows],
        "product_locale": [loc for _, loc, _ in rows],
    })  # fmt: skip


def _esci_sources(text: Text, n: int) -> bytes:
    return _lines([["query_id", "source"], *([i, "other"] for i in range(n))]).replace(b"\t", b",")


def _wiki40b(lang: str) -> Callable[[Text, int], bytes]:
    """Wiki-40B as Hugging Face publishes it: Parquet (wikidata_id, text, version_id),
    `text` holding _START_ARTICLE_ / _START_SECTION_ / _START_PARAGRAPH_ markers."""

    def build(text: Text, n: int) -> bytes:
        docs = []
        for a in range(n // 2):
            paras = ["_NEWLINE_".join(text.pick(lang, a * 9 + p * 3 + k) for k in range(3))
                     for p in range(2)]  # fmt: skip
            title = " ".join(text.pick(lang, a * 5).split()[:2])[:24]
            docs.append(f"\n_START_ARTICLE_\n{title}\n_START_SECTION_\nOverview\n"
                        f"_START_PARAGRAPH_\n{paras[0]}\n_START_SECTION_\nHistory\n"
                        f"_START_PARAGRAPH_\n{paras[1]}\n")  # fmt: skip
        return _parquet({"wikidata_id": [f"Q{a + 1}" for a in range(len(docs))], "text": docs,
                         "version_id": [str(10**10 + a) for a in range(len(docs))]})  # fmt: skip

    return build


def _frequent(pool: list[str], n: int, split: Callable[[str], list[str]]) -> list[str]:
    from collections import Counter

    counts = Counter(w for line in pool for w in split(line))
    return [w for w, _ in counts.most_common(n)]


def _ppdb2(text: Text, n: int) -> bytes:
    """PPDB 2.0: `LHS ||| phrase ||| paraphrase ||| features ||| alignment ||| entailment`,
    p(e2|e1) stored as -logp(e2|e1) (natural log), over words the corpus holds."""
    words = _frequent(text.en, 2 * n, lambda s: [w for w in s.lower().split() if w.isalpha()])
    lines = []
    for i, (a, b) in enumerate(zip(words[0::2], words[1::2], strict=False)):
        feats = f"-logp(e1|e2)={0.3 + i % 5 / 10:.5f} -logp(e2|e1)={0.2 + i % 4 / 10:.5f} PPDB2.0Score={3 + i % 2}"
        lines.append(f"[NN] ||| {a} ||| {b} ||| {feats} ||| 0-0 ||| Equivalence\n")
    return "".join(lines).encode("utf-8")


def _ehimer(text: Text, n: int) -> bytes:
    """EhiMerPPDB: `src ||| tgt ||| prob ||| pivots` over 2-character strings of the corpus."""
    grams = _frequent(text.ja, 2 * n, lambda s: [s[i : i + 2] for i in range(len(s) - 1)])
    pairs = zip(grams[0::2], grams[1::2], strict=False)
    return "".join(f"{a} ||| {b} ||| {0.5 + i % 4 / 10:.3f} ||| pivot\n"
                   for i, (a, b) in enumerate(pairs)).encode("utf-8")  # fmt: skip


def _gz(write: Callable[[Text, int], bytes]) -> Callable[[Text, int], bytes]:
    import gzip

    return lambda text, n: gzip.compress(write(text, n), mtime=0)


# registry file (a glob) -> writer of a small file in its published format
# registry file (a glob) -> writer of a small file in its published format
SYNTHESIZERS: dict[str, Callable[[Text, int], bytes]] = {
    "snli/snli_1.0.zip": _snli,
    "multinli/multinli_1.0.zip": _mnli,
    "simcse-nli/nli_for_simcse.csv": _simcse_nli,
    "wiki1m/wiki1m_for_simcse.txt": _wiki1m,
    "paws/paws_wiki_labeled_final.tar.gz": _paws,
    "pawsx/x-final.tar.gz": _pawsx,
    "esci/shopping_queries_dataset_examples.parquet": _esci_examples,
    "esci/shopping_queries_dataset_products.parquet": _esci_products,
    "esci/shopping_queries_dataset_sources.csv": _esci_sources,
    "jglue/jnli-v1.3/train-v1.3.json": _jnli_train,
    "jsnli/jsnli_1.1.zip": _jsnli,
    "qqp/QQP-clean.zip": _qqp,
    "qnli/QNLIv2.zip": _qnli,
    "wiki40b/en/*.parquet": _wiki40b("en"),
    "wiki40b/ja/*.parquet": _wiki40b("ja"),
    "ppdb2/ppdb-2.0-*.gz": _gz(_ppdb2),
    "ppdb2/ppdb-2.0-*": _ppdb2,
    "ehimerppdb/*.gz": _gz(_ehimer),
    "ehimerppdb/*": _ehimer,
}


def synthesize(entry: SourceFile, text: Text, rows: int = ROWS) -> bytes:
    for pattern, write in SYNTHESIZERS.items():
        if fnmatch.fnmatch(entry.file, pattern):
            return write(text, rows)
    raise KeyError(
        f"{entry.file} (source {entry.source!r}): not in the origin mirror and no writer for "
        f"its format in paracl.testing.data_mirror.SYNTHESIZERS"
    )


# --- the mirror -------------------------------------------------------------------------


def _origin_bytes(entry: SourceFile, origin: Path | None) -> bytes | None:
    """The origin's copy of the file when it is the registered one (checked), else None."""
    path = origin / entry.file if origin else None
    if path is None or not path.is_file():
        return None
    sha256, blob = file_digests(path)
    if entry.sha256 not in (sha256, f"git-blob-sha1:{blob}"):
        return None
    return path.read_bytes()


def build_mirror(
    sources: list[str], out: str | Path, origin: str | Path | None = None, rows: int = ROWS
) -> Path:
    """Write the small mirror of `sources` under `out` and its registry
    `out/sources.tsv`; return that registry's path."""
    out = Path(out)
    origin = Path(origin) if origin else None
    text = Text(origin)
    registry_rows = []
    for entry in select(load_registry(), sources):
        real = _origin_bytes(entry, origin)
        data = shrink(entry, real, rows) if real is not None else synthesize(entry, text, rows)
        target = out / entry.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        sha256, _ = file_digests(target)
        registry_rows.append([entry.source, entry.file, entry.url, sha256, len(data),
                              entry.license, NOTE])  # fmt: skip
    registry = out / "sources.tsv"
    with open(registry, "w", encoding="utf-8", newline="") as f:
        f.write("# A small mirror built by paracl.testing.data_mirror (not the published files)\n")
        csv.writer(f, delimiter="\t", lineterminator="\n").writerows([COLUMNS, *registry_rows])
    return registry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sources", nargs="+", required=True, help="fetch.sources names")
    parser.add_argument("--out", required=True)
    parser.add_argument("--origin", default=None, help="a mirror of the real files to cut down")
    parser.add_argument("--rows", type=int, default=ROWS)
    args = parser.parse_args(argv)
    registry = build_mirror(args.sources, args.out, args.origin, args.rows)
    print(f"export PARACL_DATA_MIRROR={Path(args.out).resolve()}")
    print(f"export PARACL_DATA_REGISTRY={registry.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
