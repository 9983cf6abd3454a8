"""Stage nli_triplets: the offline English NLI triplets supervised SimCSE trains on, with
no triplet that shares a sentence with an STS set the trained rows are scored on.

Offline, SICK is the only English NLI set (issue 72, "What is offline"):
paracl.parts.nli reads its `splits` into (anchor, positive, negative) triplets. SICK-R,
one of the seven English STS sets, is SICK's TEST split, and most TRAIN sentences
reappear there, so training on a pair whose sentence an evaluation set scores would
leak. Every triplet any of whose sentences (anchor, positive or negative) appears in a
set of `exclude_sts` is dropped. The sets are read by the evaluation's own readers
(paracl.parts.evaluation.unsup_sts.sts_sets: the whole set, not a scored sample). How
sentences are compared is `match`: `stripped` compares them after `str.strip()`;
`folded` (the default) also lower-cases them, drops punctuation and collapses spaces,
because STS12's MSRvid and STS-B hold SICK sentences lower-cased with a final " ." (on
the mirror, 235 SICK TRAIN triplets share a folded sentence with STS12 and 119 with STS-B,
none a stripped one): a tokenizer that lower-cases sees the same text.

Two choices, both a param (docs/stages/nli-triplets.md gives their counts): list all
seven sets (the default: the rows may be scored on every set), or leave
`SICKRelatedness` out, keeping many more triplets, and score those rows on the other six.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import pandas as pd

from paracl.core.errors import ParamsError
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunWide, Section, param
from paracl.core.stage import args
from paracl.parts import nli

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class NliTriplets(Section):
    """The offline English NLI triplets for supervised SimCSE: data/nli/sick.parquet,
    minus every triplet sharing a sentence with an `exclude_sts` set."""

    source: Literal["sick"] = param(help="the NLI set under data/raw (offline: sick only)")
    splits: list[Literal["TRAIN", "TRIAL", "TEST"]] = param(help="SICK splits read")
    exclude_sts: list[
        Literal["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"]
    ] = param(help="STS sets whose sentences no kept triplet contains; [] = none")
    match: Literal["folded", "stripped"] = param(
        help="sentence comparison: folded (lower case, no punctuation) or stripped only"
    )


class Params(RunWide):
    """What stage nli_triplets reads of params.yaml: the run-wide keys and these."""

    nli_triplets: NliTriplets


log = logging.getLogger("nli_triplets")

# dvc.yaml's metrics (paracl.core.key_figures): triplets kept, and those with a negative
KEY_FIGURES = ("n_kept", "n_with_negative")
TEXT = ("anchor", "positive", "negative")  # the triplet's sentences, each checked
SOURCES = {"sick": Path("sick") / "SICK.txt"}  # source name -> its file under data/raw
MATCHES = ("folded", "stripped")  # nli_triplets.match: how sentences are compared
_PUNCT = re.compile(r"[^\w\s]")


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


def leaks(triplets: pd.DataFrame, sentences: set[str], match: str) -> pd.Series:
    """True for each triplet one of whose sentences (normalised by `match`; a null
    negative never counts) is in `sentences`."""
    hit = pd.Series(False, index=triplets.index)
    for column in TEXT:
        cells = triplets[column]
        hit |= cells.map(lambda t: isinstance(t, str) and normalise(t, match) in sentences)
    return hit


def drop_leaks(
    triplets: pd.DataFrame, sentences: dict[str, set[str]], match: str
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The triplets that share no sentence with any set of `sentences`, in their order,
    and per set how many triplets share one with it (a triplet may leak into several).
    `sentences` holds each set's sentences normalised by `match`."""
    hits = {name: leaks(triplets, words, match) for name, words in sentences.items()}
    dropped = pd.Series(False, index=triplets.index)
    for hit in hits.values():
        dropped |= hit
    kept = triplets[~dropped].reset_index(drop=True)
    kept["negative_pair_id"] = kept["negative_pair_id"].astype("Int64")
    return kept, {name: int(hit.sum()) for name, hit in hits.items()}


def check_names(values: Sequence[str], key: str, known: Iterable[str] | None = None) -> None:
    """A list param repeats no name (and, with `known`, names only those): else a one-line
    error naming the key."""
    repeated = sorted({v for v in values if list(values).count(v) > 1})
    if repeated:
        raise ParamsError(f"params.yaml: 'nli_triplets.{key}' lists {repeated[0]!r} twice")
    unknown = [v for v in values if known is not None and v not in set(known)]
    if unknown:
        names = ", ".join(known or ())
        raise ParamsError(f"params.yaml: 'nli_triplets.{key}': no {unknown[0]!r} ({names})")


def check_cfg(cfg: dict) -> None:
    """The section's values, checked before any file is read (load_params checks them
    too; a caller may hand in its own dict): a one-line error naming the key."""
    if cfg["source"] not in SOURCES:
        raise ParamsError(f"params.yaml: 'nli_triplets.source' must be sick, got {cfg['source']!r}")
    if cfg["match"] not in MATCHES:
        raise ParamsError(
            f"params.yaml: 'nli_triplets.match' must be one of {MATCHES}, got {cfg['match']!r}"
        )
    if not cfg["splits"]:
        raise ParamsError("params.yaml: 'nli_triplets.splits' lists no split")
    check_names(list(cfg["splits"]), "splits", nli.SICK_SPLITS)
    check_names(list(cfg["exclude_sts"]), "exclude_sts")


def build(cfg: dict, raw_dir: str | Path, out: str | Path) -> dict:
    """Read the source's triplets, drop those leaking into `exclude_sts`, write the rest
    to `out` atomically; the metrics record."""
    from paracl.core.io import write_parquet
    from paracl.parts.evaluation.unsup_sts import sts_sets

    check_cfg(cfg)
    splits, exclude, match = list(cfg["splits"]), list(cfg["exclude_sts"]), cfg["match"]
    triplets = nli.sick_triplets(nli.read_sick(Path(raw_dir) / SOURCES[cfg["source"]]), splits)
    sets = sts_sets("en", raw_dir) if exclude else {}
    check_names(exclude, "exclude_sts", sets)
    chosen = sts_sentences({n: sets[n] for n in exclude}, match)
    kept, leaked = drop_leaks(triplets, chosen, match)
    record = {
        "source": cfg["source"],
        "splits": splits,
        "exclude_sts": exclude,
        "match": match,
        "n_read": len(triplets),
        "n_leaking": leaked,
        "n_dropped": len(triplets) - len(kept),
        "n_kept": len(kept),
        "n_with_negative": int(kept["negative"].notna().sum()),
    }
    write_parquet(kept, out, nli.TRIPLETS, metadata=record)
    return record


def main(params: dict) -> None:
    """nli_triplets RAW OUT METRICS: the triplets of data/raw's source into OUT, its
    counts into METRICS (and the key figures beside it)."""
    paths = args("raw", "out", "metrics")
    record = build(params["nli_triplets"], paths.raw, paths.out)
    write_metrics(record, paths.metrics, KEY_FIGURES)
    log.info(
        "%d of %d triplets kept (%d with a negative); dropped for sharing a sentence with %s",
        record["n_kept"], record["n_read"], record["n_with_negative"], record["exclude_sts"],
    )  # fmt: skip
