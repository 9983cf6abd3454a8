"""Readers for the evaluation datasets, one per file format, with their quirks handled.

Every reader returns a DataFrame with `sentence1`, `sentence2` (None for single-sentence
tasks) and `label` (float for scores, str for classes), plus any split column the
format carries. Quirks (see ../shared/data/README.md): SICK has CRLF endings, no
final newline and sentences ending in a space (stripped: _read_sick_layout); MRPC
starts with a UTF-8 BOM; the original STS-B rows may carry 7 or more fields; STS15/16
gold files mark unscored pairs with a blank line; CoLA has no header. A malformed line raises InputError naming the file and the line number; so
does an empty file (damage; an absent file is a task not available offline) and one
that is not UTF-8 text.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from paracl.core.errors import InputError

COLUMNS = ["sentence1", "sentence2", "label"]


def _lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) without the line ending; BOM, CRLF and a missing
    final newline are all tolerated."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: not found (did the fetch stage run?)")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: empty file")
    i = 0
    with open(path, encoding="utf-8-sig", newline="") as f:
        try:
            for i, line in enumerate(f, start=1):
                yield i, line.rstrip("\r\n")
        except UnicodeDecodeError:  # binary data: Parquet, gzip, ...
            raise InputError(f"{path}:{i + 1}: not UTF-8 text") from None


def _fields(path: str | Path, min_fields: int, header: bool) -> Iterator[tuple[int, list[str]]]:
    for i, line in _lines(path):
        if header and i == 1:
            continue
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) < min_fields:
            raise InputError(
                f"{path}:{i}: expected at least {min_fields} tab-separated fields, got {len(parts)}"
            )
        yield i, parts


def _float(value: str, path: str | Path, line: int) -> float:
    try:
        return float(value)
    except ValueError:
        raise InputError(f"{path}:{line}: score {value!r} is not a number") from None


def _header_index(path: str | Path, needed: list[str]) -> dict[str, int]:
    for _, line in _lines(path):
        names = line.split("\t")
        missing = [n for n in needed if n not in names]
        if missing:
            raise InputError(f"{path}:1: header lacks columns {missing} (has: {names})")
        return {n: names.index(n) for n in needed}
    raise InputError(f"{path}: empty file")


def read_stsb(path: str | Path) -> pd.DataFrame:
    """STS Benchmark: genre, file, year, id, score, s1, s2 [, extra source columns]; the
    genre (main-captions, main-forum, main-news) is kept: evaluation samples by it."""
    rows = [(p[5], p[6], _float(p[4], path, i), p[0]) for i, p in _fields(path, 7, header=False)]
    return pd.DataFrame(rows, columns=[*COLUMNS, "genre"])


def read_sts_pairs(path: str | Path) -> pd.DataFrame:
    """An STS file of either format the pipeline scores with: STS-B (.csv, tab-separated)
    or JSTS (.json, JSON Lines). The one STS reader of the training dev score, the STS
    scorer and evaluation; gold stays on the file's 0–5 scale."""
    df = read_jglue(path) if Path(path).suffix == ".json" else read_stsb(path)
    df["label"] = df["label"].astype(float)
    return df


def read_senteval_sts(input_path: str | Path, gold_path: str | Path) -> pd.DataFrame:
    """SentEval STS12–16: `s1<TAB>s2` lines aligned with one gold score per line.

    A blank gold line means the pair has no score (STS15/16); it is skipped, as SentEval
    does.
    """
    pairs = [line for _, line in _lines(input_path)]
    golds = [line for _, line in _lines(gold_path)]
    if pairs and pairs[-1] == "" and len(pairs) == len(golds) + 1:
        pairs.pop()
    if len(pairs) != len(golds):
        raise InputError(
            f"{gold_path}: {len(golds)} gold lines for {len(pairs)} pairs in {input_path}"
        )
    rows = []
    for i, (pair, gold) in enumerate(zip(pairs, golds, strict=True), start=1):
        if not gold.strip():
            continue
        parts = pair.split("\t")
        if len(parts) != 2:
            raise InputError(f"{input_path}:{i}: expected 2 tab-separated sentences")
        rows.append((parts[0], parts[1], _float(gold, gold_path, i)))
    return pd.DataFrame(rows, columns=COLUMNS)


def read_sts_year(folder: str | Path) -> dict[str, pd.DataFrame]:
    """All scored subsets of one SentEval STS year folder, by subset name (sorted).

    Subsets whose input file is absent (STS13 SMT, not redistributable) and the
    concatenated `ALL` gold file are left out.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not found (did the fetch stage run?)")
    subsets = {}
    for gold in sorted(folder.glob("STS.gs.*.txt")):
        name = gold.name[len("STS.gs.") : -len(".txt")]
        inp = folder / f"STS.input.{name}.txt"
        if name == "ALL" or not inp.exists():
            continue
        subsets[name] = read_senteval_sts(inp, gold)
    if not subsets:
        raise InputError(f"{folder}: no STS.input.*.txt / STS.gs.*.txt pairs found")
    return subsets


NLI_LABELS = ("entailment", "neutral", "contradiction")  # SICK's and JSICK's, lower-cased
SICK_SPLITS = ("train", "trial", "test")  # SICK's SemEval_set and JSICK's data, lower-cased


def _sick_row(path: str | Path, i: int, cells: list[str]) -> tuple:
    """One SICK-layout row, cells (a, b, score, label, split, pair id) stripped: checked,
    a bad value a one-line error naming the file and line."""
    a, b, score, label, split, pair_id = (c.strip() for c in cells)
    if label.lower() not in NLI_LABELS:
        raise InputError(f"{path}:{i}: entailment label {label!r} is not one of {NLI_LABELS}")
    if split.lower() not in SICK_SPLITS:
        raise InputError(f"{path}:{i}: split {split!r} is not one of {SICK_SPLITS}")
    if not (pair_id.isascii() and pair_id.isdigit()):
        raise InputError(f"{path}:{i}: pair_ID {pair_id!r} is not a number")
    return a, b, _float(score, path, i), label.lower(), split.lower(), int(pair_id)


def _read_sick_layout(path: str | Path, a: str, b: str, score: str, label: str, split: str):
    """SICK and JSICK share one layout under different column names (read by header).

    Whitespace rule: each cell read loses its leading and trailing whitespace and keeps
    what is inside. SICK.txt ends 51 sentence_A and 53 sentence_B cells with a space;
    SentEval's SICK loader splits sentences on whitespace (SimCSE re-joins the tokens with
    single spaces), so the text an encoder sees has none at either end either."""
    names = [a, b, score, label, split, "pair_ID"]
    idx = _header_index(path, names)
    n = max(idx.values()) + 1
    rows = [
        _sick_row(path, i, [p[idx[k]] for k in names]) for i, p in _fields(path, n, header=True)
    ]
    return pd.DataFrame(rows, columns=[*COLUMNS, "entailment", "split", "pair_id"])


def read_sick(path: str | Path) -> pd.DataFrame:
    """SICK.txt, the one SICK reader (evaluation's SICK-R and SICK-E, stages nli_triplets
    and nli_pairs): sentence1/2 = sentence_A/B, label = relatedness_score (float),
    entailment and split (SemEval_set) lower-cased, pair_id (int); columns by header
    name, cells stripped (_read_sick_layout). Callers pick their split and columns."""
    return _read_sick_layout(
        path, "sentence_A", "sentence_B", "relatedness_score", "entailment_label", "SemEval_set"
    )


def read_jsick(path: str | Path) -> pd.DataFrame:
    """JSICK jsick.tsv/test.tsv: Japanese sentences, relatedness and entailment; split
    from the `data` column (train, trial, test)."""
    return _read_sick_layout(
        path,
        "sentence_A_Ja",
        "sentence_B_Ja",
        "relatedness_score_Ja",
        "entailment_label_Ja",
        "data",
    )


def read_jglue(path: str | Path) -> pd.DataFrame:
    """JGLUE JSTS/JNLI JSON Lines: sentence1, sentence2, label (float or class name)."""
    rows = []
    for i, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            label = obj["label"]
            rows.append((obj["sentence1"], obj["sentence2"], label))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise InputError(f"{path}:{i}: not a JGLUE record ({err})") from None
    df = pd.DataFrame(rows, columns=COLUMNS)
    if len(df) and not isinstance(df["label"].iloc[0], str):
        df["label"] = df["label"].astype(float)
    return df


UNTRANSLATED = "NS"  # PAWS-X's placeholder for a sentence that was not translated


def _paws_rows(path: str | Path, fields: Iterator[tuple[int, list[str]]], at: tuple[int, ...]):
    """(s1, s2, label) of PAWS lines; label 0/1 checked; untranslated (NS) pairs dropped,
    as the PAWS-X README asks."""
    rows = []
    for i, p in fields:
        s1, s2, label = (p[k] for k in at)
        if label not in ("0", "1"):
            raise InputError(f"{path}:{i}: label {label!r} is not 0 or 1")
        if UNTRANSLATED not in (s1, s2):
            rows.append((s1, s2, label))
    return pd.DataFrame(rows, columns=COLUMNS)


def read_pawsx(path: str | Path) -> pd.DataFrame:
    """PAWS-X in the XTREME layout: s1, s2, label 0/1; no header. XTREME wrote it with
    Python's csv writer, so a field holding `"` is quoted (and its quotes doubled)."""

    def fields() -> Iterator[tuple[int, list[str]]]:
        for i, line in _lines(path):
            if line.strip():
                p = next(csv.reader([line], delimiter="\t"))
                if len(p) < 3:
                    raise InputError(f"{path}:{i}: expected 3 tab-separated fields, got {len(p)}")
                yield i, p

    return _paws_rows(path, fields(), (0, 1, 2))


def _pawsx_lines(path: str | Path) -> list[tuple[int, list[str]]]:
    """(line number, [s1, s2, label, id]) of every pair of a PAWS-X file, untranslated ones
    included (line alignment with the other language's file depends on them): the XTREME
    layout (s1, s2, label; no header, csv-quoted) or Google's (a header `id sentence1
    sentence2 label`; id last here, "" in the XTREME layout)."""
    out, at = [], (0, 1, 2, None)
    for i, line in _lines(path):
        if not line.strip():
            continue
        p = next(csv.reader([line], delimiter="\t")) if at[3] is None else line.split("\t")
        if i == 1 and {"id", "sentence1", "sentence2", "label"} <= set(p):
            at = tuple(p.index(k) for k in ("sentence1", "sentence2", "label", "id"))
            continue
        if len(p) <= max(k for k in at if k is not None):
            raise InputError(f"{path}:{i}: expected {len(at)} tab-separated fields, got {len(p)}")
        row = [p[k] if k is not None else "" for k in at]
        if row[2] not in ("0", "1"):
            raise InputError(f"{path}:{i}: label {row[2]!r} is not 0 or 1")
        out.append((i, row))
    return out


def pawsx_sentences(path: str | Path) -> set[str]:
    """Every sentence of an XTREME-layout PAWS-X file, labelled or not (the test files
    have no label column)."""
    out: set[str] = set()
    for i, line in _lines(path):
        if line.strip():
            p = next(csv.reader([line], delimiter="\t"))
            if len(p) < 2:
                raise InputError(f"{path}:{i}: expected 2 tab-separated sentences, got {len(p)}")
            out |= {p[0], p[1]}
    return out


CROSS = ("en_ja", "ja_en", "translation")  # read_pawsx_cross's cross-lingual pair kinds
PAIR_KINDS = ("ja", *CROSS)  # and the Japanese pairs themselves
HALVES = ("threshold", "scored")
HALF_SEED = 42  # pawsx_half's draw: fixed, so every run and method scores the same half


def pawsx_half(en_path: str | Path, half: str) -> set[int]:
    """Line numbers of one half of a PAWS-X file: `threshold` is a seeded draw of half its
    pairs, stratified by label (never the first lines: the file is ordered), `scored` the
    rest. A threshold chosen on one half and scored on the other is chosen on pairs drawn
    like the scored ones, and disjoint from them: every pair kind read from one line (ja,
    en_ja, ja_en, translation) falls in the same half."""
    from paracl.parts.evaluation.sample import sample_rows

    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    lines = pd.DataFrame([(i, p[2]) for i, p in _pawsx_lines(en_path)], columns=["line", "label"])
    drawn, _ = sample_rows(lines, len(lines) // 2, HALF_SEED, "label")
    chosen = set(drawn["line"].tolist())
    return chosen if half == "threshold" else set(lines["line"]) - chosen


def read_pawsx_cross(
    en_path: str | Path, ja_path: str | Path, kind: str, lines: set[int] | None = None
) -> pd.DataFrame:
    """Pairs of two line-aligned PAWS-X files (line k of each is the same pair,
    translated): `ja` = the Japanese pair itself with its own label; `en_ja` = English
    sentence 1 with Japanese sentence 2 of the same pair, `ja_en` = the reverse, both with
    the pair's label; `translation` = each sentence with its own translation (label 1: the
    paper's "inter-same" pairs). `lines`: only those line numbers (pawsx_half).

    A line where either file has the untranslated placeholder NS in a sentence used is
    dropped. Where the two files' labels differ (PAWS-X dev en/ja: 9 lines), the pair's
    meaning is disputed between its two annotations and a cross pair has no gold label of
    its own, so `en_ja`/`ja_en` drop the line (`translation` keeps it: a sentence and its
    translation are paraphrases whatever the pair's label)."""
    if kind not in PAIR_KINDS:
        raise ValueError(f"kind must be one of {PAIR_KINDS}, got {kind!r}")
    en, ja = _pawsx_lines(en_path), _pawsx_lines(ja_path)
    if len(en) != len(ja):
        raise InputError(f"{ja_path}: {len(ja)} pairs, not line-aligned with {en_path} ({len(en)})")
    for (_, e), (i, j) in zip(en, ja, strict=True):
        if e[3] != j[3]:  # Google's layout names each pair: the ids must match line by line
            raise InputError(f"{ja_path}:{i}: id {j[3]!r}, not line-aligned with {en_path} "
                             f"(id {e[3]!r})")  # fmt: skip
    rows = []
    for (k, e), (_, j) in zip(en, ja, strict=True):
        if lines is not None and k not in lines:
            continue
        if kind == "ja":
            rows += [(j[0], j[1], j[2])] if UNTRANSLATED not in j[:2] else []
        elif kind == "translation":
            rows += [(a, b, "1") for a, b in ((e[0], j[0]), (e[1], j[1])) if UNTRANSLATED != b]
        elif e[2] == j[2]:
            a, b = (e[0], j[1]) if kind == "en_ja" else (j[0], e[1])
            if UNTRANSLATED not in (a, b):
                rows.append((a, b, e[2]))
    return pd.DataFrame(rows, columns=COLUMNS)


def read_paws(path: str | Path) -> pd.DataFrame:
    """PAWS-Wiki Labeled (Final) and PAWS-X as Google publishes them: header `id sentence1
    sentence2 label`, tab-separated, no quoting."""
    idx = _header_index(path, ["sentence1", "sentence2", "label"])
    at = (idx["sentence1"], idx["sentence2"], idx["label"])
    return _paws_rows(path, _fields(path, max(at) + 1, header=True), at)


def read_mrpc(path: str | Path) -> pd.DataFrame:
    """MSR paraphrase corpus: Quality, #1 ID, #2 ID, #1 String, #2 String (BOM header)."""
    rows = []
    for i, p in _fields(path, 5, header=True):
        if p[0] not in ("0", "1"):
            raise InputError(f"{path}:{i}: Quality {p[0]!r} is not 0 or 1")
        rows.append((p[3], p[4], p[0]))
    return pd.DataFrame(rows, columns=COLUMNS)


def read_glue_tsv(path: str | Path, s1: str, s2: str | None, label: str) -> pd.DataFrame:
    """A GLUE TSV with a header (RTE: sentence1/sentence2/label; SST-2: sentence/label)."""
    needed = [s1, label] + ([s2] if s2 else [])
    idx = _header_index(path, needed)
    n = max(idx.values()) + 1
    rows = [
        (p[idx[s1]].strip(), p[idx[s2]].strip() if s2 else None, p[idx[label]].strip())
        for _, p in _fields(path, n, header=True)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def read_cola(path: str | Path) -> pd.DataFrame:
    """CoLA: source, label, original mark, sentence; no header, no final newline."""
    rows = []
    for i, p in _fields(path, 4, header=False):
        if p[1] not in ("0", "1"):
            raise InputError(f"{path}:{i}: label {p[1]!r} is not 0 or 1")
        rows.append((p[3], None, p[1]))
    return pd.DataFrame(rows, columns=COLUMNS)


def read_snli(path: str | Path) -> pd.DataFrame:
    """SNLI 1.0 JSON Lines: sentence1, sentence2, gold_label; pairs without annotator
    consensus (gold_label "-") are dropped, as in the SNLI paper."""
    rows = []
    for i, line in _lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if obj["gold_label"] != "-":
                rows.append((obj["sentence1"], obj["sentence2"], obj["gold_label"]))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise InputError(f"{path}:{i}: not an SNLI record ({err})") from None
    return pd.DataFrame(rows, columns=COLUMNS)


def read_esci(path: str | Path, locale: str, split: str) -> pd.DataFrame:
    """Shopping Queries (ESCI) task 2: query × product title → E/S/C/I, 4 classes.

    `path` is shopping_queries_dataset_examples.parquet; the product titles come from
    shopping_queries_dataset_products.parquet next to it. One locale (us, es, jp) and one
    split (train, test) of the large version: every row, not only `small_version == 1`
    (Task 1's subset), as the PPDB paper's Tables 1 and 2 count them (us: 1,393,063
    train = 1,254,438 + 138,625 dev, 425,762 test).
    """
    path = Path(path)
    products = path.with_name("shopping_queries_dataset_products.parquet")
    for p in (path, products):
        if not p.exists():
            raise InputError(f"{p}: not found (did the fetch stage run?)")
    ex = pd.read_parquet(path)
    need = {"query", "product_id", "product_locale", "esci_label", "split"}
    if not need <= set(ex.columns):
        raise InputError(f"{path}: lacks columns {sorted(need - set(ex.columns))}")
    ex = ex[(ex["product_locale"] == locale) & (ex["split"] == split)]
    pr = pd.read_parquet(products, columns=["product_id", "product_locale", "product_title"])
    df = ex.merge(pr, on=["product_id", "product_locale"], how="left")
    df = df.sort_values(["query", "product_id"], kind="stable").reset_index(drop=True)
    return pd.DataFrame(
        {
            "sentence1": df["query"].astype(str),
            "sentence2": df["product_title"].fillna("").astype(str),
            "label": df["esci_label"].astype(str),
        }
    )
