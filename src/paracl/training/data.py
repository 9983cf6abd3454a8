"""Training inputs: every artifact a method trains on, read into (anchor, positive, negative).

One frame layout serves all bi-encoder methods, whatever the artifact:

- corpus sentences (schemas.CORPUS)      -> anchor = positive = text (dropout is the view)
- positives (id, text, paraphrase, ...)  -> anchor = text, positive = paraphrase
                                            (+ negative when the artifact has that column)
- negatives (id, text, negative, ...)    -> anchor = positive = text, negative = negative
                                            (JCSE stage one: v+ is v under another dropout)
- NLI (premise, hypothesis, label)       -> SimCSE supervised: for each premise, an
                                            entailed hypothesis as positive and a
                                            contradicted one as hard negative.

NLI files are Parquet/JSONL with those columns or JSNLI-style TSV (label, premise,
hypothesis). Bad input stops with a message naming the file (and row or line).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from paracl.errors import InputError
from paracl.io import ArtifactError, read_parquet

COLUMNS = ["anchor", "positive", "negative"]


def _read_table(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise ArtifactError(
            f"{path}: not found; the stage that writes it has not run (or this method's "
            "input is not produced by the default pipeline)"
        )
    if path.suffix == ".parquet" or path.is_dir():
        return read_parquet(path)
    if path.suffix in (".jsonl", ".json"):
        rows = []
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise InputError(f"{path}:{no}: not a JSON line: {err}") from None
        return pd.DataFrame(rows)
    if path.suffix == ".tsv":
        rows = []
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            cells = line.split("\t")
            if len(cells) < 3:
                raise InputError(f"{path}:{no}: expected label<TAB>premise<TAB>hypothesis")
            rows.append({"label": cells[0], "premise": cells[1], "hypothesis": cells[2]})
        return pd.DataFrame(rows)
    raise InputError(f"{path}: unknown format (expected .parquet, .jsonl or .tsv)")


def nli_triplets(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """SimCSE's supervised triplets: (premise, entailment hypothesis, contradiction one)."""
    labels = df["label"].astype(str).str.strip().str.lower()
    # numeric SNLI/MNLI labels: 0 entailment, 1 neutral, 2 contradiction
    labels = labels.replace({"0": "entailment", "1": "neutral", "2": "contradiction"})
    frame = df.assign(label=labels, premise=df["premise"].astype(str).str.strip())
    ent = frame[frame.label == "entailment"].drop_duplicates("premise")
    con = frame[frame.label == "contradiction"].drop_duplicates("premise")
    merged = ent.merge(con, on="premise", suffixes=("_pos", "_neg"), sort=True)
    if merged.empty:
        raise InputError(
            f"{where}: no premise has both an entailment and a contradiction hypothesis "
            f"({len(ent)} entailment, {len(con)} contradiction rows)"
        )
    return pd.DataFrame(
        {
            "anchor": merged["premise"],
            "positive": merged["hypothesis_pos"].astype(str),
            "negative": merged["hypothesis_neg"].astype(str),
        }
    )


def to_examples(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Map an artifact's columns onto (anchor, positive, negative); negative may be None."""
    cols = set(df.columns)
    if {"premise", "hypothesis", "label"} <= cols:
        out = nli_triplets(df, where)
    elif {"text", "paraphrase"} <= cols:
        neg = df["negative"] if "negative" in cols else None
        out = pd.DataFrame({"anchor": df["text"], "positive": df["paraphrase"], "negative": neg})
    elif {"text", "negative"} <= cols:
        out = pd.DataFrame(
            {"anchor": df["text"], "positive": df["text"], "negative": df["negative"]}
        )
    elif "text" in cols:
        out = pd.DataFrame({"anchor": df["text"], "positive": df["text"], "negative": None})
    else:
        raise InputError(
            f"{where}: no training columns found (has: {', '.join(map(str, df.columns))}); "
            "expected text[+paraphrase|+negative] or premise, hypothesis, label"
        )
    return out.reset_index(drop=True)


def check_examples(ex: pd.DataFrame, where: str, min_examples: int) -> None:
    """Refuse empty strings and training sets too small to form one batch of negatives."""
    for col in COLUMNS:
        if ex[col].isna().all() and col == "negative":
            continue
        values = ex[col].astype(str).str.strip()
        bad = ex.index[ex[col].isna() | (values == "")]
        if len(bad):
            raise InputError(
                f"{where}: row {int(bad[0])} has an empty {col!r} "
                f"({len(bad)} such rows); drop them in the stage that writes this artifact"
            )
    if len(ex) < min_examples:
        raise InputError(
            f"{where}: {len(ex)} training examples, fewer than the {min_examples} needed for "
            "in-batch negatives (at least 2, and a full batch when drop_last); an empty "
            "artifact means its stage found nothing to keep — check that stage's metrics"
        )


def load_examples(
    path: str | Path, max_examples: int | None, seed: int, min_examples: int = 2
) -> pd.DataFrame:
    """Read, map, check and (seeded) subsample one method's training input."""
    path = Path(path)
    ex = to_examples(_read_table(path), str(path))
    check_examples(ex, str(path), min_examples)
    if max_examples is not None and len(ex) > max_examples:
        ex = ex.sample(n=max_examples, random_state=seed).sort_index().reset_index(drop=True)
    return ex
