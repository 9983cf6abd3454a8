"""NLI pairs as the triplets supervised SimCSE trains on: (anchor, positive, hard negative).

SimCSE's supervised recipe (and the round-trip paper's §5.3, §5.5) takes the entailment
hypothesis of a premise as its positive and a contradiction hypothesis of the same
premise as its hard negative. Offline, the only English NLI set is SICK
(../shared/data/sick/SICK.txt, registry name `sick`): 4,439 TRAIN pairs, 1,274 of them
entailments, and only ~100 premises with both an entailment and a contradiction partner,
so most triplets have no negative (null): a trainer uses in-batch negatives for those.

A part of its own: the stage that writes the triplets and the stages that train on them
or paraphrase them (paraphrase_pairs) read the same layout, TRIPLETS.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pyarrow as pa

from paracl.core.errors import InputError
from paracl.core.io import write_parquet

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
SICK_COLUMNS = ("pair_ID", "sentence_A", "sentence_B", "entailment_label", "SemEval_set")
SICK_SPLITS = ("TRAIN", "TRIAL", "TEST")


def read_sick(path: str | Path) -> pd.DataFrame:
    """SICK.txt's pairs (tab-separated with a header, CRLF line ends, no final newline):
    the columns SICK_COLUMNS, labels and splits upper-cased. A missing column or a
    non-numeric pair id names the file."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3)
    except FileNotFoundError:
        raise InputError(f"{path}: not found (fetch source `sick`)") from None
    except (UnicodeDecodeError, pd.errors.ParserError) as err:
        raise InputError(f"{path}: not a SICK file ({' '.join(str(err).split())})") from None
    missing = [c for c in SICK_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: no column {missing[0]!r}; not a SICK file")
    frame = frame[list(SICK_COLUMNS)].apply(lambda c: c.str.strip())
    if not frame["pair_ID"].str.fullmatch(r"\d+").all():
        line = int((~frame["pair_ID"].str.fullmatch(r"\d+")).to_numpy().argmax()) + 2
        raise InputError(f"{path}:{line}: pair_ID is not a number")
    frame["pair_ID"] = frame["pair_ID"].astype("int64")
    for column in ("entailment_label", "SemEval_set"):
        frame[column] = frame[column].str.upper()
    return frame


def sick_triplets(pairs: pd.DataFrame, splits: Sequence[str] = ("TRAIN",)) -> pd.DataFrame:
    """One triplet per entailment pair of `splits` (sentence_A entails sentence_B):
    anchor A, positive B, and as negative a sentence B that A contradicts (same split),
    else null. A premise with several of each pairs its i-th entailment (by pair id) with
    its (i mod n)-th contradiction, so each negative is used about equally."""
    unknown = sorted(set(splits) - set(SICK_SPLITS))
    if unknown:
        raise ValueError(f"unknown SICK split {unknown[0]!r} (SICK has {', '.join(SICK_SPLITS)})")
    rows = pairs[pairs["SemEval_set"].isin(splits)].sort_values("pair_ID", kind="stable")
    entail = rows[rows["entailment_label"] == "ENTAILMENT"]
    contra = rows[rows["entailment_label"] == "CONTRADICTION"]
    negatives = {
        (split, anchor): list(zip(group["sentence_B"], group["pair_ID"], strict=True))
        for (split, anchor), group in contra.groupby(["SemEval_set", "sentence_A"], sort=False)
    }
    out, seen = [], {}
    for pair_id, anchor, positive, split in entail[
        ["pair_ID", "sentence_A", "sentence_B", "SemEval_set"]
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
