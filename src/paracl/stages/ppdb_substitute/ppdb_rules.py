"""Read paraphrase dictionaries of several formats into one rule table.

Every reader yields rules (source phrase s, target phrase d, p(d|s), extra fields) and
counts the lines it could not use, so that one broken line in a 100-million-line PPDB
file is reported (count + a sample of line numbers) instead of killing the stage. Only
a file with no valid rule at all is an error.

Formats (`FORMATS`):

- ``ppdb2``: PPDB 2.0 (and 1.0) lines ``LHS ||| phrase ||| paraphrase ||| features |||
  alignment ||| entailment``. PPDB does not store p(e|f) as a probability but as a
  *negative natural log*: the feature is ``-logp(e2|e1)=1.44238`` in PPDB 2.0 (e1 = the
  phrase, e2 = the paraphrase) and ``p(e|f)=…`` (same convention) in PPDB 1.0. So
  p(d|s) = exp(-value). The base is e: in a released PPDB 2.0 line,
  ``-logp(e1|e2)=2.39790`` is ln 11 (a count ratio of 1/11), not log10 or log2 of a
  ratio. Syntactic rules whose phrases contain non-terminals (``[NP/NP,1]``) cannot be
  substituted into plain text and are skipped (counted as ``skipped_nonterminal``).
- ``ehimer``: EhiMerPPDB lines ``src ||| tgt ||| prob ||| pivots``; prob is already a
  probability p(tgt|src).
- ``tsv``: ``source<TAB>target<TAB>prob`` (a header line is allowed).
- ``ppdb-sample``: the human-labelled PPDB 2.0 sample (``avg<TAB>category<TAB>phrase
  <TAB>paraphrase<TAB>scores``). It has no p(e|f): the **stand-in** probability is
  (avg - 1) / 4, the mean human score (1-5) rescaled to [0, 1].
- ``sudachi``: Sudachi synonym groups (CSV, blank line between groups). It has no
  probabilities: the **stand-in** is p(d|s) = 1 / |T(s)|, uniform over the other
  headwords T(s) that s may expand to in its group (the maximum-entropy distribution when
  only group membership is known; a small group gives each synonym more mass). Column 2
  (expansion control) is respected: 0 = trigger and target, 1 = target only, 2 = never
  used. Misuses (word-form type 4) and misspellings (variant type 3) are never targets;
  translations and alphabetic forms (column 4, 5 or 6 = 1, e.g. 日本 -> Japan) are left
  out altogether: they are not Japanese paraphrases.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

FORMATS = ("ppdb2", "ehimer", "tsv", "ppdb-sample", "sudachi")

#: How each format's probability is obtained; goes into metrics and artifact metadata.
DERIVATIONS = {
    "ppdb2": "p(d|s) = exp(-x) where x is the feature -logp(e2|e1) (PPDB 2.0) or p(e|f) "
    "(PPDB 1.0), a negative natural log probability",
    "ehimer": "p(d|s) = the probability column of EhiMerPPDB as stored",
    "tsv": "p(d|s) = the third column as stored",
    "ppdb-sample": "STAND-IN: (mean human score - 1) / 4 from the PPDB 2.0 human-labelled "
    "sample (scores 1-5); not the PPDB p(e|f)",
    "sudachi": "STAND-IN: 1 / |T(s)|, uniform over the headwords a trigger s may expand to "
    "in its Sudachi synonym group; the dictionary has no probabilities",
}
STAND_IN = {"ppdb-sample": True, "sudachi": True}

MALFORMED_SAMPLE = 10  # how many malformed line numbers the report keeps
_NONTERMINAL = re.compile(r"\[[^\]\s]+\]")
# PPDB feature names for p(paraphrase | phrase), as -log probabilities, best first.
PPDB_PROB_FEATURES = ("-logp(e2|e1)", "p(e|f)")


class DictionaryError(ValueError):
    """No valid rule in a dictionary file; the message names the file."""


@dataclass
class RuleTable:
    """Rules read from one dictionary plus what the reader saw on the way."""

    rules: pd.DataFrame  # source, target, prob, extra (JSON), line
    path: str
    format: str
    lines: int = 0
    malformed: int = 0
    malformed_lines: list[int] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def report(self) -> dict:
        """Counts for metrics: what was read, what was rejected and why."""
        return {
            "path": self.path,
            "format": self.format,
            "lines": self.lines,
            "rules_read": int(len(self.rules)),
            "malformed_lines": self.malformed,
            "malformed_line_sample": self.malformed_lines,
            "skipped": dict(sorted(self.skipped.items())),
            "probability": DERIVATIONS[self.format],
            "stand_in_probability": STAND_IN.get(self.format, False),
        }


Row = tuple[str, str, float, dict]


class _Collector:
    """Accumulates rules and malformed-line bookkeeping for one file."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, float, str, int]] = []
        self.lines = 0
        self.malformed = 0
        self.sample: list[int] = []
        self.skipped: dict[str, int] = defaultdict(int)

    def bad(self, lineno: int) -> None:
        self.malformed += 1
        if len(self.sample) < MALFORMED_SAMPLE:
            self.sample.append(lineno)

    def add(self, lineno: int, source: str, target: str, prob: float, extra: dict) -> None:
        source, target = " ".join(source.split()), " ".join(target.split())
        if not source or not target or not (0.0 <= prob <= 1.0) or math.isnan(prob):
            self.bad(lineno)
            return
        self.rows.append(
            (source, target, prob, json.dumps(extra, sort_keys=True, ensure_ascii=False), lineno)
        )


def _lines(path: Path, out: _Collector) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without newline) of each non-blank line, every line
    counted in `out.lines`; undecodable bytes become U+FFFD."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            out.lines += 1
            if line.strip():
                yield lineno, line.rstrip("\r\n")


def _read_ppdb2(path: Path, out: _Collector) -> None:
    for lineno, line in _lines(path, out):
        parts = [p.strip() for p in line.split("|||")]
        if len(parts) < 4:
            out.bad(lineno)
            continue
        lhs, phrase, para, feats = parts[:4]
        features: dict[str, str] = {}
        for item in feats.split():
            key, sep, value = item.partition("=")
            if sep:
                features[key] = value
        raw = next((features[k] for k in PPDB_PROB_FEATURES if k in features), None)
        try:
            neglog = float(raw) if raw is not None else math.nan
        except ValueError:
            neglog = math.nan
        if math.isnan(neglog) or neglog < -1e-6:  # a -log probability is never negative
            out.bad(lineno)
            continue
        if _NONTERMINAL.search(phrase) or _NONTERMINAL.search(para):
            out.skipped["nonterminal"] += 1
            continue
        extra = {"lhs": lhs}
        if "PPDB2.0Score" in features:
            extra["ppdb2_score"] = features["PPDB2.0Score"]
        if len(parts) >= 6:
            extra["entailment"] = parts[5]
        out.add(lineno, phrase, para, min(1.0, math.exp(-neglog)), extra)


def _read_ehimer(path: Path, out: _Collector) -> None:
    for lineno, line in _lines(path, out):
        parts = [p.strip() for p in line.split("|||")]
        if len(parts) < 3:
            out.bad(lineno)
            continue
        try:
            prob = float(parts[2])
        except ValueError:
            out.bad(lineno)
            continue
        extra = {"pivots": parts[3]} if len(parts) > 3 else {}
        out.add(lineno, parts[0], parts[1], prob, extra)


def _read_tsv(path: Path, out: _Collector) -> None:
    for lineno, line in _lines(path, out):
        parts = line.split("\t")
        if len(parts) < 3:
            out.bad(lineno)
            continue
        try:
            prob = float(parts[2])
        except ValueError:
            if lineno == 1:  # a header such as "source target prob"
                continue
            out.bad(lineno)
            continue
        extra = {f"col{i}": v for i, v in enumerate(parts[3:], start=3)}
        out.add(lineno, parts[0], parts[1], prob, extra)


def _read_ppdb_sample(path: Path, out: _Collector) -> None:
    for lineno, line in _lines(path, out):
        parts = line.split("\t")
        if len(parts) < 4:
            out.bad(lineno)
            continue
        try:
            avg = float(parts[0])
        except ValueError:
            out.bad(lineno)
            continue
        if not 1.0 <= avg <= 5.0:
            out.bad(lineno)
            continue
        extra = {"category": parts[1], "human_mean": avg}
        if len(parts) > 4:
            extra["human_scores"] = parts[4]
        out.add(lineno, parts[2], parts[3], (avg - 1.0) / 4.0, extra)


def _read_sudachi(path: Path, out: _Collector) -> None:
    # group id -> entries (lineno, headword, expansion flag, lexeme, form, abbr, variant, domain)
    groups: dict[str, list[tuple]] = defaultdict(list)
    for lineno, line in _lines(path, out):
        try:
            cols = next(csv.reader([line]))
        except csv.Error:
            out.bad(lineno)
            continue
        if len(cols) < 9 or not re.fullmatch(r"\d{6}", cols[0]) or not cols[8].strip():
            out.bad(lineno)
            continue
        flag = cols[2] or "0"  # omitted = 0, "always expand"
        if flag not in ("0", "1", "2"):
            out.bad(lineno)
            continue
        groups[cols[0]].append((lineno, cols[8].strip(), flag, *cols[3:8]))
    for gid in sorted(groups):
        # entry: (line, headword, flag, lexeme, form type, abbreviation, variant, domain)
        entries = [e for e in groups[gid] if e[2] != "2" and not _latin(e)]
        if len(entries) < 2:
            out.skipped["singleton_group"] += 1
            continue
        targets = [e for e in entries if e[4] != "4" and e[6] != "3"]  # no misuse/misspelling
        for src in entries:
            if src[2] != "0":  # 1: expanded to, never a trigger
                continue
            dests = sorted({t[1] for t in targets if t[1] != src[1]})
            if not dests:
                continue
            by_word = {t[1]: t for t in targets}
            for d in dests:
                extra = {"group": gid, "same_lexeme": by_word[d][3] == src[3], "domain": src[7]}
                out.add(src[0], src[1], d, 1.0 / len(dests), extra)


def _latin(entry: tuple) -> bool:
    """A translation (form 1), alphabetic abbreviation (1) or alphabetic spelling (1):
    substituting it would put a foreign word into a Japanese sentence."""
    return entry[4] == "1" or entry[5] == "1" or entry[6] == "1"


READERS = {
    "ppdb2": _read_ppdb2,
    "ehimer": _read_ehimer,
    "tsv": _read_tsv,
    "ppdb-sample": _read_ppdb_sample,
    "sudachi": _read_sudachi,
}


def read_dictionary(path: str | Path, fmt: str) -> RuleTable:
    """Read one dictionary file into a RuleTable; raise DictionaryError if none valid.

    Duplicate (source, target) pairs (PPDB lists a pair once per syntactic label,
    Sudachi a word once per group) keep their highest probability and first line.
    """
    path = Path(path)
    if fmt not in READERS:
        raise DictionaryError(f"unknown dictionary format {fmt!r} (known: {', '.join(FORMATS)})")
    if not path.is_file():
        raise DictionaryError(f"{path}: dictionary file not found (format {fmt})")
    if path.stat().st_size == 0:
        raise DictionaryError(f"{path}: empty file (format {fmt})")
    with open(path, "rb") as f:
        if b"\x00" in f.read(8192):  # Parquet, gzip, ...: not a text dictionary
            raise DictionaryError(f"{path}: binary data, not a {fmt} dictionary")
    out = _Collector()
    READERS[fmt](path, out)
    if not out.rows:
        sample = ", ".join(map(str, out.sample)) or "none"
        raise DictionaryError(
            f"{path}: no valid {fmt} rule in {out.lines} lines ({out.malformed} malformed; "
            f"first malformed lines: {sample}). Is the format right?"
        )
    rules = pd.DataFrame(out.rows, columns=["source", "target", "prob", "extra", "line"])
    rules = rules.sort_values(["source", "target", "prob", "line"], ascending=[1, 1, 0, 1])
    n_before = len(rules)
    rules = rules.drop_duplicates(["source", "target"], keep="first").reset_index(drop=True)
    out.skipped["duplicate_pair"] += n_before - len(rules)
    return RuleTable(
        rules=rules,
        path=str(path),
        format=fmt,
        lines=out.lines,
        malformed=out.malformed,
        malformed_lines=out.sample,
        skipped=dict(out.skipped),
    )
