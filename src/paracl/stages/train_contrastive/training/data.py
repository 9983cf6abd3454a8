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
- a user's pairs or triplets             -> as they are (Parquet, or TSV with a header
  (anchor, positive[, negative])            line; an empty negative cell is no negative)
- paraphrase identification              -> the cross-lingual PI paper's triples: each
  (sentence1, sentence2, label 0/1)         paraphrase pair (label 1) with a label-0
                                            partner of its anchor as hard negative.

A paraphrase_pairs output (the round-trip paper's §5.3, §5.5: `original_<column>` beside
each paraphrased column) trains on its paraphrased columns, or on those of `paraphrased`
alone (the others back to their input text: A'B, AB'), and with `with_original` on the
input rows too, before the paraphrased ones (the doubled corpus: AB + A'B').

Row selection before the mapping: an artifact with a `split` column (tag's
tagged.parquet) trains on its train rows only (dev and test are the paraphraser's
held-out pairs); `tags` (a method entry's key) keeps the rows of generate_paraphrases'
output generated for that tag pair; a round-trip candidates artifact (a `pivot` column:
stage roundtrip_baseline@greedy) drops the rows whose translation came back empty.

NLI files are Parquet/JSONL with those columns, JSNLI-style TSV (label, premise,
hypothesis; JSNLI's train_w_filtering.tsv too), SNLI/MultiNLI .jsonl (gold_label,
sentence1, sentence2), or SimCSE's nli_for_simcse.csv (sent0, sent1, hard_neg: already
triplets, used as they are); PI files are TSV with a header naming id, sentence1,
sentence2, label (PAWS-Wiki, PAWS-X: paracl.parts.evaluation.readers.read_paws). Bad input stops
with a message naming the file (and row or line).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd

from paracl.core.errors import InputError
from paracl.core.io import ArtifactError, read_metadata, read_parquet
from paracl.parts.evaluation.readers import read_paws
from paracl.parts.evaluation.tasks import TASKS, load_task

log = logging.getLogger(__name__)

COLUMNS = ["anchor", "positive", "negative"]
ORIGINAL = "original_"  # paraphrase_pairs' prefix of a paraphrased column's input text
PROVENANCE = ("source_row", "paraphrased_by")  # paraphrase_pairs' other added columns


def training_record(path: str | Path) -> dict | None:
    """The STS check an NLI-derived input records in its Parquet metadata (nli_triplets'
    `source` and `exclude_sts`, passed on by paraphrase_pairs): what evaluation reads to
    score the run only on sets its data was checked against; None for other inputs."""
    path = Path(path)
    if not path.exists() or not (path.suffix == ".parquet" or path.is_dir()):
        return None
    meta = read_metadata(path)
    if "exclude_sts" not in meta:
        return None
    return {"source": meta.get("source"), "exclude_sts": list(meta["exclude_sts"])}


def paraphrase_view(
    df: pd.DataFrame, paraphrased: list[str] | None, with_original: bool, where: str
) -> pd.DataFrame:
    """A paraphrase_pairs output as a method trains on it: the columns of `paraphrased`
    (None: every one the job paraphrased) keep their paraphrase, the job's other columns
    go back to their input text; `with_original` puts the input rows first (doubled)."""
    done = [c.removeprefix(ORIGINAL) for c in df.columns if c.startswith(ORIGINAL)]
    if not done:
        if paraphrased is not None or with_original:
            raise InputError(f"{where}: not a paraphrase_pairs output (no original_ column): "
                             "'paraphrased' and 'with_original' read one")  # fmt: skip
        return df
    keep = done if paraphrased is None else paraphrased
    missing = [c for c in keep if c not in done]
    if missing:
        raise InputError(f"{where}: column {missing[0]!r} was not paraphrased (has: {done})")
    view = df.assign(**{c: df[ORIGINAL + c] for c in done if c not in keep})
    rows = [df.assign(**{c: df[ORIGINAL + c] for c in done}), view] if with_original else [view]
    drop = [ORIGINAL + c for c in done] + [c for c in PROVENANCE if c in df.columns]
    return pd.concat(rows, ignore_index=True).drop(columns=drop)


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
    if path.suffix == ".tsv" and _is_pi_tsv(path):
        return read_paws(path)  # labels checked, PAWS-X's untranslated (NS) pairs dropped
    if path.suffix == ".tsv" and _header(path) >= {"anchor", "positive"}:  # a user's pairs
        return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=3)
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
    if path.suffix == ".csv":  # SimCSE's nli_for_simcse.csv: header sent0,sent1,hard_neg
        try:
            return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        except (pd.errors.ParserError, UnicodeDecodeError) as err:
            raise InputError(f"{path}: not a readable CSV: {err}") from None
    raise InputError(f"{path}: unknown format (expected .parquet, .jsonl, .tsv or .csv)")


def _header(path: Path) -> set[str]:
    """The names on a TSV's first line (a headerless file gives its first row's cells)."""
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        return set(f.readline().rstrip("\r\n").split("\t"))


def _is_pi_tsv(path: Path) -> bool:
    """A paraphrase-identification TSV: a header line naming sentence1, sentence2, label."""
    return {"sentence1", "sentence2", "label"} <= _header(path)


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


def pi_triplets(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """The cross-lingual PI paper's training rows (§III-A): positives are the label-1 pairs,
    hard negatives the label-0 pairs. A label-0 pair is a hard negative of the paraphrase
    pair that shares one of its sentences (PAWS builds both from one source sentence):
    (shared sentence, its paraphrase, its label-0 partner). Of several partners the first
    in file order is taken; a paraphrase pair with none keeps an empty negative (AMS then
    contrasts it with in-batch and mined negatives only), so every paraphrase pair trains
    and the methods that ignore hard negatives see the same positives. PAWS-Wiki dev less
    PAWS-X's dev sentences: 854 paraphrase pairs, 503 of them with a partner."""
    labels = df["label"].astype(str).str.strip()
    bad = df.index[~labels.isin(["0", "1"])]
    if len(bad):
        raise InputError(f"{where}: row {int(bad[0])} has label {labels[bad[0]]!r}, not 0 or 1")
    s1 = df["sentence1"].astype(str).str.strip()
    s2 = df["sentence2"].astype(str).str.strip()
    partner: dict[str, str] = {}  # sentence -> its first label-0 partner
    for a, b in zip(s1[labels == "0"], s2[labels == "0"], strict=True):
        partner.setdefault(a, b)
        partner.setdefault(b, a)
    rows = []
    for a, b in zip(s1[labels == "1"], s2[labels == "1"], strict=True):
        if b in partner and a not in partner:
            a, b = b, a
        rows.append((a, b, partner.get(a)))
    if not rows:
        raise InputError(f"{where}: no paraphrase pair (label 1) among {len(df)} rows")
    paired = sum(n is not None for *_, n in rows)
    log.info("%s: %d paraphrase pairs, %d with a label-0 partner", where, len(rows), paired)
    return pd.DataFrame(rows, columns=COLUMNS)


def select_rows(df: pd.DataFrame, where: str, tags: str | None = None) -> pd.DataFrame:
    """The rows a method trains on (see the module docstring): train split, `tags`, and
    no empty round-trip translations."""
    if "split" in df.columns:
        counts = df["split"].value_counts().to_dict()
        df = df[df["split"].astype(str).str.lower() == "train"]  # SICK's: TRAIN
        if df.empty:
            raise InputError(f"{where}: no 'train' rows in its split column (has: {counts})")
    if tags is not None:
        if "tags" not in df.columns:
            raise InputError(
                f"{where}: has no 'tags' column to select {tags!r} from (tags selects rows "
                "of generate_paraphrases' output, data/paraphraser/generated.parquet)"
            )
        have = sorted(df["tags"].astype(str).unique())
        df = df[df["tags"] == tags]
        if df.empty:
            raise InputError(
                f"{where}: no row was generated for tags {tags!r} (has: {', '.join(have)}); "
                "add it to generate_paraphrases.tags"
            )
    if "pivot" in df.columns:
        empty = df["paraphrase"].isna() | (df["paraphrase"].astype(str).str.strip() == "")
        if empty.any():
            log.info("%s: %d of %d round trips came back empty, left out", where, empty.sum(),
                     len(df))  # fmt: skip
        df = df[~empty]
    return df


def to_examples(df: pd.DataFrame, where: str) -> pd.DataFrame:
    """Map an artifact's columns onto (anchor, positive, negative); negative may be None."""
    cols = set(df.columns)
    if {"anchor", "positive"} <= cols:  # a user's own pairs or triplets, as they are
        neg = [n or None for n in df["negative"]] if "negative" in cols else None
        out = pd.DataFrame({"anchor": df["anchor"], "positive": df["positive"], "negative": neg})
    elif {"premise", "hypothesis", "label"} <= cols:
        out = nli_triplets(df, where)
    elif {"sent0", "sent1"} <= cols:  # SimCSE's supervised CSV: anchor, positive, hard neg
        neg = df["hard_neg"] if "hard_neg" in cols else None
        out = pd.DataFrame({"anchor": df["sent0"], "positive": df["sent1"], "negative": neg})
    elif {"gold_label", "sentence1", "sentence2"} <= cols:  # SNLI / MultiNLI .jsonl
        names = {"sentence1": "premise", "sentence2": "hypothesis", "gold_label": "label"}
        out = nli_triplets(df.rename(columns=names)[list(names.values())], where)
    elif {"sentence1", "sentence2", "label"} <= cols:
        out = pi_triplets(df, where)
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
            "expected anchor, positive[, negative], text[+paraphrase|+negative], "
            "premise, hypothesis, label or sentence1, sentence2, label"
        )
    return out.reset_index(drop=True)


def check_examples(ex: pd.DataFrame, where: str, min_examples: int) -> None:
    """Refuse empty strings and training sets too small to form one batch of negatives."""
    for col in COLUMNS:
        values = ex[col].astype(str).str.strip()
        # a row may lack a negative (a PI pair without a label-0 partner); never an anchor
        absent = ex[col].isna() if col != "negative" else pd.Series(False, index=ex.index)
        bad = ex.index[absent | (ex[col].notna() & (values == ""))]
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


def check_task_input(task: str, input_path: str, where: str) -> Path:
    """A method's `task` (a registry task) and its `input` (that task's train file, the
    DVC dep): the raw-data folder the task's files are read from."""
    from paracl.core.params import ParamsError

    if task not in TASKS:
        raise ParamsError(f"{where}: unknown task {task!r} (known: {', '.join(TASKS)})")
    if "dev" not in TASKS[task].splits and TASKS[task].fixed_carve is None:
        raise ParamsError(f"{where}: task {task} carves its dev with the evaluation seed; "
                          "give it a fixed_carve so training holds out the same pairs")  # fmt: skip
    split = TASKS[task].splits.get("train")
    if split is None or not input_path.endswith("/" + split.path):
        need = split.path if split else "none: it has no train split"
        raise ParamsError(f"{where}: input {input_path!r} is not task {task}'s train file ({need})")
    return Path(input_path[: -len(split.path) - 1])


def task_rows(task: str, path: Path) -> pd.DataFrame:
    """A registry task's train split (its dev held out, as evaluation holds it out: the
    task's fixed carve, so every training seed leaves out the same pairs)."""
    raw_dir = check_task_input(task, path.as_posix(), f"task {task}")
    data = load_task(task, raw_dir, seed=0, missing="fail")
    log.info("%s: task %s's train split, %d pairs (%s)", path, task, len(data.train),
             data.provenance["train"])  # fmt: skip
    return data.train


def load_examples(
    path: str | Path,
    max_examples: int | None,
    seed: int,
    min_examples: int = 2,
    tags: str | None = None,
    task: str | None = None,
    paraphrased: list[str] | None = None,
    with_original: bool = False,
) -> pd.DataFrame:
    """Read, select, map, check and (seeded) subsample one method's training input; with
    `task`, the rows are that registry task's train split (its file is `path`); a
    paraphrase_pairs output as `paraphrased` and `with_original` ask (paraphrase_view)."""
    path = Path(path)
    table = task_rows(task, path) if task else _read_table(path)
    table = paraphrase_view(table, paraphrased, with_original, str(path))
    ex = to_examples(select_rows(table, str(path), tags), str(path))
    check_examples(ex, str(path), min_examples)
    if max_examples is not None and len(ex) > max_examples:
        ex = ex.sample(n=max_examples, random_state=seed).sort_index().reset_index(drop=True)
    return ex
