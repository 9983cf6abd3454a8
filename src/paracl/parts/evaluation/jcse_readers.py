"""Readers for the JCSE authors' evaluation data (mu-kindai/JCSE; ../shared/data/jcse/).

Read as the authors' evaluation code reads them, quirks included (the mirror README):
- JACSTS (`JAC-STS/JAC-sts-{dev,test}.csv`): tab-separated despite the suffix, no
  header, `score<TAB>sentence1<TAB>sentence2`, integer scores 0-5. JCSE's SentEval
  (`JACSTSEval`) strips each line, splits on tabs, and splits each sentence on whitespace
  before its batcher joins the words with one space: so runs of whitespace (the
  ideographic space U+3000 too) become one ASCII space here as well.
- STS12-16-ja (`STS1x-ja-test/`): the SentEval layout of the English years (read by
  paracl.parts.evaluation.readers.read_sts_year), whitespace normalised the same way. 191 pairs
  are identical on both sides after machine translation; they stay, as the authors
  score them (`identical_pairs` counts them).
- QAbot (`QAbot/<n>/`): `question.txt` is one query ending in LF; `data.csv` its
  candidate pool, UTF-8 with a BOM, header `question,answer,label`, CRLF after each
  record and bare LF inside quoted multi-line fields: parsed as CSV, never by lines.
  The query's final LF is dropped (the authors' BERT tokenizer drops it as whitespace;
  a causal LM would embed it); the candidates' inner line breaks stay. All 20 pools are
  the same 1142 Q/A pairs (folders 1, 2 and 4-12 leave out the query's own row).
A malformed file raises InputError naming the file and line (or record).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from paracl.core.errors import InputError
from paracl.parts.evaluation.readers import COLUMNS, read_sts_year

QABOT_HEADER = ["question", "answer", "label"]


def normalize_space(text: str) -> str:
    """SentEval's `s.split()` then `' '.join(...)`: whitespace runs → one space, stripped."""
    return " ".join(text.split())


def _text(path: Path) -> str:
    if not path.is_file():
        raise InputError(f"{path}: not found (did the fetch stage run with source jcse?)")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte {err.start})") from None


def read_jacsts(path: str | Path) -> pd.DataFrame:
    """JACSTS pairs: sentence1, sentence2, label (the gold score, float)."""
    path = Path(path)
    rows = []
    for i, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.strip().split("\t")
        if len(parts) != 3:
            raise InputError(f"{path}:{i}: expected score<TAB>sentence1<TAB>sentence2")
        try:
            score = float(parts[0])
        except ValueError:
            raise InputError(f"{path}:{i}: score {parts[0]!r} is not a number") from None
        rows.append((normalize_space(parts[1]), normalize_space(parts[2]), score))
    if not rows:
        raise InputError(f"{path}: no pairs")
    return pd.DataFrame(rows, columns=COLUMNS)


def read_sts_ja_year(folder: str | Path) -> pd.DataFrame:
    """One STS1x-ja year, its subsets concatenated (SimCSE's "all"), each row its subset."""
    subsets = read_sts_year(folder)
    frame = pd.concat([df.assign(subset=k) for k, df in subsets.items()], ignore_index=True)
    for col in ("sentence1", "sentence2"):
        frame[col] = frame[col].map(normalize_space)
    return frame


def identical_pairs(pairs: pd.DataFrame) -> int:
    """Pairs whose two sentences are the same text (cosine 1 whatever the encoder)."""
    return int((pairs["sentence1"] == pairs["sentence2"]).sum())


@dataclass(frozen=True)
class QAbotPool:
    """One query and its candidate pool (question, answer, label 0/1)."""

    name: str
    query: str
    pool: pd.DataFrame


def read_qabot_pool(folder: str | Path) -> QAbotPool:
    folder = Path(folder)
    query = _text(folder / "question.txt").removesuffix("\n").removesuffix("\r")
    if not query.strip():
        raise InputError(f"{folder / 'question.txt'}: empty query")
    path = folder / "data.csv"
    _text(path)  # present and UTF-8
    with open(path, encoding="utf-8-sig", newline="") as f:  # quoted fields keep their LF
        records = list(csv.reader(f))
    if not records or records[0] != QABOT_HEADER:
        got = records[0] if records else "nothing"
        raise InputError(f"{path}:1: expected the header {','.join(QABOT_HEADER)}, got {got}")
    rows = []
    for i, rec in enumerate(records[1:], start=1):
        if len(rec) != 3 or rec[2].strip() not in ("0", "1"):
            raise InputError(f"{path}: record {i}: expected question,answer,label (0/1), got {rec}")
        rows.append((rec[0], rec[1], int(rec[2])))
    pool = pd.DataFrame(rows, columns=QABOT_HEADER)
    if not pool["label"].any():
        raise InputError(f"{path}: no relevant row (label 1) for the query")
    return QAbotPool(folder.name, query, pool)


def read_qabot(root: str | Path) -> list[QAbotPool]:
    """Every pool under `root` (QAbot/<n>/), in the order of n."""
    root = Path(root)
    folders = [p for p in root.iterdir() if p.is_dir()] if root.is_dir() else []
    if not folders:
        raise InputError(f"{root}: no QAbot pool folders (did the fetch stage run with jcse?)")
    return [read_qabot_pool(p) for p in sorted(folders, key=lambda p: (len(p.name), p.name))]
