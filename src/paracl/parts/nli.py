"""SICK's splits as NLI rows, and sentences compared with the STS sets: what stages
nli_triplets (supervised SimCSE's triplets) and nli_pairs (STILTs' 3-way pairs) share.

Both keep no row that shares a sentence with an STS set it is checked against, and both
must compare sentences the same way, so `normalise` and `sts_sentences` live here once.
SICK.txt itself is read by the one SICK reader, the evaluation's
(paracl.parts.evaluation.readers.read_sick: pair ids, labels, splits, cells stripped);
`sick_split` picks a stage's splits from its frame. Kept apart from
paracl.parts.evaluation so that a change here reruns these two stages and no evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import pandas as pd

from paracl.core.errors import ParamsError

SICK_FILE = Path("sick") / "SICK.txt"  # under data/raw (fetch source `sick`)
SICK_SPLITS = ("TRAIN", "TRIAL", "TEST")
# The params both stages share, one type each: a SICK split, an STS set a kept row shares
# no sentence with, and how sentences are compared (`normalise`).
SickSplit = Literal["TRAIN", "TRIAL", "TEST"]
StsSet = Literal["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"]
Match = Literal["folded", "stripped"]
_PUNCT = re.compile(r"[^\w\s]")


def sick_split(sick: pd.DataFrame, splits: Sequence[str]) -> pd.DataFrame:
    """The rows of `splits` (named as the params name them: TRAIN, TRIAL, TEST) of
    readers.read_sick's frame, by pair id, `split` named as the params name it."""
    unknown = sorted(set(splits) - set(SICK_SPLITS))
    if unknown:
        raise ValueError(f"unknown SICK split {unknown[0]!r} (SICK has {', '.join(SICK_SPLITS)})")
    rows = sick[sick["split"].isin([s.lower() for s in splits])]
    rows = rows.sort_values("pair_id", kind="stable").reset_index(drop=True)
    return rows.assign(split=rows["split"].str.upper())


def normalise(text: str, match: str) -> str:
    """The form two sentences are compared in: stripped, or also folded (lower case, no
    punctuation, single spaces)."""
    if match == "stripped":
        return text.strip()
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def sts_sentences(sets: dict[str, pd.DataFrame], match: str) -> dict[str, set[str]]:
    """Each STS set's sentences (both sides of every pair), normalised by `match`."""
    return {
        name: {normalise(s, match) for c in ("sentence1", "sentence2") for s in frame[c]}
        for name, frame in sets.items()
    }


def check_names(values: Sequence[str], key: str, known: Iterable[str] | None = None) -> None:
    """A list param repeats no name (and, with `known`, names only those): else a one-line
    error naming `key` (the param's dotted name, `nli_pairs.splits`)."""
    repeated = sorted({v for v in values if list(values).count(v) > 1})
    if repeated:
        raise ParamsError(f"params.yaml: '{key}' lists {repeated[0]!r} twice")
    unknown = [v for v in values if known is not None and v not in set(known)]
    if unknown:
        names = ", ".join(known or ())
        raise ParamsError(f"params.yaml: '{key}': no {unknown[0]!r} ({names})")


def leaks(
    frame: pd.DataFrame, columns: Sequence[str], sentences: set[str], match: str
) -> pd.Series:
    """True for each row one of whose `columns` (normalised by `match`; a null cell never
    counts) is in `sentences`."""
    hit = pd.Series(False, index=frame.index)
    for column in columns:
        hit |= frame[column].map(lambda t: isinstance(t, str) and normalise(t, match) in sentences)
    return hit


def drop_leaks(
    frame: pd.DataFrame, columns: Sequence[str], sentences: dict[str, set[str]], match: str
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The rows that share no sentence with any set of `sentences`, in their order, and per
    set how many rows share one with it (a row may leak into several). `sentences` holds
    each set's sentences normalised by `match` (sts_sentences)."""
    hits = {name: leaks(frame, columns, words, match) for name, words in sentences.items()}
    dropped = pd.Series(False, index=frame.index)
    for hit in hits.values():
        dropped |= hit
    return frame[~dropped].reset_index(drop=True), {n: int(h.sum()) for n, h in hits.items()}
