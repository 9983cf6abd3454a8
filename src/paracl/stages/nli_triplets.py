"""Stage nli_triplets: the offline English NLI triplets supervised SimCSE trains on, with
no triplet that shares a sentence with an STS set the trained rows are scored on.

Offline, SICK is the only English NLI set (issue 72, "What is offline"):
`sick_triplets` reads its `splits` (paracl.parts.evaluation.readers.read_sick, the one SICK
reader) into (anchor, positive, negative) triplets, as SimCSE's supervised recipe takes
them (below). SICK-R,
one of the seven English STS sets, is SICK's TEST split, and most TRAIN sentences
reappear there, so training on a pair whose sentence an evaluation set scores would
leak. Every triplet any of whose sentences (anchor, positive or negative) appears in a
set of `exclude_sts` is dropped. The sets are read by the evaluation's own readers
(paracl.parts.evaluation.unsup_sts.sts_sets: the whole set, not a scored sample). How
sentences are compared is `match` (paracl.parts.nli.normalise, as nli_pairs compares): `stripped` compares them after `str.strip()`;
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
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import pandas as pd
import pyarrow as pa

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunWide, Section, param
from paracl.core.stage import args
from paracl.parts import nli
from paracl.parts.evaluation.readers import read_sick
from paracl.parts.nli import (
    SICK_FILE,
    SICK_SPLITS,
    Match,
    SickSplit,
    StsSet,
    check_names,
    sick_split,
    sts_sentences,
)

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class NliTriplets(Section):
    """The offline English NLI triplets for supervised SimCSE: data/nli/triplets.parquet,
    minus every triplet sharing a sentence with an `exclude_sts` set."""

    source: Literal["sick", "simcse-nli"] = param(
        help="the NLI set under data/raw: sick (offline), simcse-nli (MNLI + SNLI, fetched)"
    )
    splits: list[SickSplit] = param(help="SICK splits read")
    exclude_sts: list[StsSet] = param(
        help="STS sets whose sentences no kept triplet contains; [] = none"
    )
    match: Match = param(
        help="sentence comparison: folded (lower case, no punctuation) or stripped only"
    )
    max_triplets: int | None = param(
        min=2, help="seeded sample of the kept triplets (the run's seed); null = all"
    )


class Params(RunWide):
    """What stage nli_triplets reads of params.yaml: the run-wide keys and these."""

    nli_triplets: NliTriplets


log = logging.getLogger("nli_triplets")

# dvc.yaml's metrics (paracl.core.key_figures): triplets kept, and those with a negative
KEY_FIGURES = ("n_kept", "n_with_negative")
TEXT = ("anchor", "positive", "negative")  # the triplet's sentences, each checked
# source name -> its file under data/raw (simcse-nli: SimCSE's MNLI + SNLI triplets)
SOURCES = {"sick": SICK_FILE,
           "simcse-nli": Path("simcse-nli") / "nli_for_simcse.csv"}  # fmt: skip
MATCHES = ("folded", "stripped")  # nli_triplets.match: how sentences are compared


# -- SICK's pairs as the triplets supervised SimCSE trains on --------------------------
# SimCSE's supervised recipe (and the round-trip paper's §5.3, §5.5) takes the entailment
# hypothesis of a premise as its positive and a contradiction hypothesis of the same
# premise as its hard negative. SICK (../shared/data/sick/SICK.txt, registry name `sick`)
# has 4,439 TRAIN pairs, 1,274 of them entailments, and only ~100 premises with both an
# entailment and a contradiction partner, so most triplets have no negative (null): a
# trainer uses in-batch negatives for those. train_contrastive's supervised rows train on
# the file and paraphrase_pairs may paraphrase its columns; both read it as any Parquet.

# anchor, positive, negative (null: the premise has no contradiction partner), and the
# SICK pair ids they come from (so a trainer can leave out pairs an STS set scores)
TRIPLETS = pa.schema(
    [
        ("anchor", pa.string()),
        ("positive", pa.string()),
        ("negative", pa.string()),
        ("pair_id", pa.int64()),
        ("negative_pair_id", pa.int64()),
        ("split", pa.string()),
    ]
)


def sick_triplets(pairs: pd.DataFrame, splits: Sequence[str] = ("TRAIN",)) -> pd.DataFrame:
    """One triplet per entailment pair of `splits` (sentence_A entails sentence_B) of
    readers.read_sick's frame: anchor A, positive B, and as negative a sentence B that A
    contradicts (same split), else null. A premise with several of each pairs its i-th
    entailment (by pair id) with its (i mod n)-th contradiction, so each negative is used
    about equally."""
    rows = sick_split(pairs, splits)
    entail = rows[rows["entailment"] == "entailment"]
    contra = rows[rows["entailment"] == "contradiction"]
    negatives = {
        (split, anchor): list(zip(group["sentence2"], group["pair_id"], strict=True))
        for (split, anchor), group in contra.groupby(["split", "sentence1"], sort=False)
    }
    out, seen = [], {}
    for pair_id, anchor, positive, split in entail[
        ["pair_id", "sentence1", "sentence2", "split"]
    ].itertuples(index=False):
        options = negatives.get((split, anchor), [])
        i = seen[(split, anchor)] = seen.get((split, anchor), -1) + 1
        negative, negative_id = options[i % len(options)] if options else (None, None)
        out.append((anchor, positive, negative, pair_id, negative_id, split))
    frame = pd.DataFrame(out, columns=TRIPLETS.names)
    frame["negative_pair_id"] = frame["negative_pair_id"].astype("Int64")
    return frame


def write_sick_triplets(
    sick: str | Path, out: str | Path, splits: Sequence[str] = ("TRAIN",)
) -> pd.DataFrame:
    """SICK.txt's `splits` as a TRIPLETS Parquet at `out`, written atomically; returned."""
    frame = sick_triplets(read_sick(sick), splits)
    write_parquet(frame, out, TRIPLETS, metadata={"source": "sick", "splits": list(splits)})
    return frame


def simcse_triplets(path: str | Path) -> pd.DataFrame:
    """SimCSE's nli_for_simcse.csv (sent0, sent1, hard_neg: MNLI + SNLI entailment and
    contradiction, 275,601 rows) as TRIPLETS, pair_id its row, split `train`."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: not found (fetch source `simcse-nli`)") from None
    except (UnicodeDecodeError, pd.errors.ParserError) as err:
        raise InputError(f"{path}: not a SimCSE NLI CSV ({' '.join(str(err).split())})") from None
    missing = [c for c in ("sent0", "sent1", "hard_neg") if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: no column {missing[0]!r}; not SimCSE's nli_for_simcse.csv")
    out = pd.DataFrame({"anchor": frame["sent0"], "positive": frame["sent1"],
                        "negative": frame["hard_neg"].replace("", None),
                        "pair_id": range(len(frame)), "negative_pair_id": None,
                        "split": "train"})  # fmt: skip
    out["negative_pair_id"] = out["negative_pair_id"].astype("Int64")
    return out


def drop_leaks(
    triplets: pd.DataFrame, sentences: dict[str, set[str]], match: str
) -> tuple[pd.DataFrame, dict[str, int]]:
    """parts.nli.drop_leaks on the triplet's three sentences (a null negative never counts),
    the negative's pair id kept a nullable integer."""
    kept, leaked = nli.drop_leaks(triplets, TEXT, sentences, match)
    kept["negative_pair_id"] = kept["negative_pair_id"].astype("Int64")
    return kept, leaked


def check_cfg(cfg: dict) -> None:
    """The section's values, checked before any file is read (load_params checks them
    too; a caller may hand in its own dict): a one-line error naming the key."""
    if cfg["source"] not in SOURCES:
        raise ParamsError(
            f"params.yaml: 'nli_triplets.source' must be one of {list(SOURCES)}, got {cfg['source']!r}"
        )
    if cfg["match"] not in MATCHES:
        raise ParamsError(
            f"params.yaml: 'nli_triplets.match' must be one of {MATCHES}, got {cfg['match']!r}"
        )
    if not cfg["splits"]:
        raise ParamsError("params.yaml: 'nli_triplets.splits' lists no split")
    check_names(list(cfg["splits"]), "nli_triplets.splits", SICK_SPLITS)
    check_names(list(cfg["exclude_sts"]), "nli_triplets.exclude_sts")


def build(cfg: dict, raw_dir: str | Path, out: str | Path, seed: int = 0) -> dict:
    """Read the source's triplets, drop those leaking into `exclude_sts`, keep a seeded
    sample of `max_triplets`, write them to `out` atomically; the metrics record."""
    from paracl.parts.evaluation.unsup_sts import sts_sets

    check_cfg(cfg)
    splits, exclude, match = list(cfg["splits"]), list(cfg["exclude_sts"]), cfg["match"]
    path = Path(raw_dir) / SOURCES[cfg["source"]]
    if cfg["source"] == "sick":
        triplets = sick_triplets(read_sick(path), splits)
    else:  # SimCSE's file has no splits: all of it is training data
        triplets = simcse_triplets(path)
    sets = sts_sets("en", raw_dir) if exclude else {}
    check_names(exclude, "nli_triplets.exclude_sts", sets)
    chosen = sts_sentences({n: sets[n] for n in exclude}, match)
    kept, leaked = drop_leaks(triplets, chosen, match)
    cap = cfg.get("max_triplets")
    n_clean = len(kept)
    if cap is not None and len(kept) > cap:  # seeded; the file keeps the source's order
        kept = kept.sample(n=cap, random_state=seed).sort_index().reset_index(drop=True)
    record = {
        "source": cfg["source"],
        "splits": splits,
        "exclude_sts": exclude,
        "match": match,
        "n_read": len(triplets),
        "n_leaking": leaked,
        "n_dropped": len(triplets) - n_clean,
        "max_triplets": cap,
        "n_kept": len(kept),
        "n_with_negative": int(kept["negative"].notna().sum()),
    }
    write_parquet(kept, out, TRIPLETS, metadata=record)
    return record


def main(params: dict) -> None:
    """nli_triplets RAW OUT METRICS: the triplets of data/raw's source into OUT, its
    counts into METRICS (and the key figures beside it)."""
    paths = args("raw", "out", "metrics")
    record = build(params["nli_triplets"], paths.raw, paths.out, params["seed"])
    write_metrics(record, paths.metrics, KEY_FIGURES)
    log.info(
        "%d of %d triplets kept (%d with a negative); dropped for sharing a sentence with %s",
        record["n_kept"], record["n_read"], record["n_with_negative"], record["exclude_sts"],
    )  # fmt: skip
