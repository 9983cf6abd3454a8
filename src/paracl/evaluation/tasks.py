"""The task registry: every evaluation dataset, its files, splits, labels and metric.

One entry per dataset (English and Japanese), with the canonical source it comes from
and the fine-tuning hyper-parameters the papers give for it. Files are looked up under
the raw-data folder written by the fetch stage (`data/raw/`, same layout as the mirror).

Where a split is missing offline (JNLI train, PAWS train/test, CoLA train, GLUE test
labels, …), `load_task` builds a documented, seeded re-split of what exists and says so:
`TaskData.official_split` is False and `TaskData.provenance` names where each split came
from. A task with no data at all raises TaskUnavailable with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

from paracl.evaluation import readers

SPLITS = ("train", "dev", "test")


class TaskUnavailable(RuntimeError):
    """The task's data is not present; the message says which files and from where."""


@dataclass(frozen=True)
class Split:
    """One split: a file under the raw-data folder and how to read it."""

    path: str
    read: Callable[[Path], pd.DataFrame]


@dataclass(frozen=True)
class Task:
    name: str
    title: str  # column heading in the summary table
    lang: str
    kind: str  # regression | classification
    metric: str  # key of metrics.METRICS
    splits: dict[str, Split]
    source: str  # canonical source of the full dataset
    labels: tuple[str, ...] | None = None  # class names, in label-id order
    group: str = ""  # Table 3 group: Retrieval, Similarity, RTE, Paraphrase, GLUE
    # Fine-tuning hyper-parameters from the papers; `hp_source` says which.
    epochs: int = 3
    lr: float = 5e-5
    batch_size: int = 32
    max_length: int = 128
    hp_source: str = ""
    test_from_dev: bool = False  # labelled test not public: official dev serves as test
    # Regression: the gold scale; targets are mapped to [0, 1] for training (as
    # sentence-transformers' STS-B cross-encoder does), which a fresh head fits far
    # sooner than raw 0–5 scores. Correlations do not depend on the scale.
    score_range: tuple[float, float] = (0.0, 5.0)
    extra: dict = field(default_factory=dict)


@dataclass
class TaskData:
    task: Task
    train: pd.DataFrame
    dev: pd.DataFrame
    test: pd.DataFrame
    official_split: bool
    provenance: dict[str, str]  # split -> where its rows came from
    official_test: bool = False  # test is the official test split (train/dev may be re-split)

    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "dev": len(self.dev), "test": len(self.test)}


# -- readers bound to one split of one file ---------------------------------------


def _sick(split: str, label: str) -> Callable[[Path], pd.DataFrame]:
    def read(path: Path) -> pd.DataFrame:
        df = readers.read_sick(path)
        df = df[df["split"] == split].reset_index(drop=True)
        if label == "entailment":
            df["label"] = df["entailment"]
        return df[readers.COLUMNS]

    return read


def _jsick(splits: tuple[str, ...], label: str) -> Callable[[Path], pd.DataFrame]:
    def read(path: Path) -> pd.DataFrame:
        df = readers.read_jsick(path)
        df = df[df["split"].isin(splits)].reset_index(drop=True)
        if label == "entailment":
            df["label"] = df["entailment"]
        return df[readers.COLUMNS]

    return read


def _glue(s1: str, s2: str | None, label: str) -> Callable[[Path], pd.DataFrame]:
    return lambda path: readers.read_glue_tsv(path, s1, s2, label)


def _esci(locale: str, split: str) -> Callable[[Path], pd.DataFrame]:
    return lambda path: readers.read_esci(path, locale, split)


ESCI = "esci/shopping_queries_dataset_examples.parquet"
NLI = ("entailment", "neutral", "contradiction")
BINARY = ("0", "1")
EBSIM = "EBSIM paper Table 1"
RT_SMALL = "round-trip paper §6.1 (small GLUE tasks: 10 epochs, lr 2e-5, batch 32)"
RT_LARGE = "round-trip paper §6.1 (tasks > 10k pairs: 3 epochs, lr 2e-5, batch 32)"
PPDB = "not given in the PPDB paper; EBSIM Table 1's BERT-base setting (3 epochs, 5e-5, 32)"

STSB = "sts-benchmark (ixa2.si.ehu.es/stswiki); SentEval copy amao0o0/SynWMD"
TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        # ---- English (Table 3 top, plus GLUE) ----
        Task(
            "esci_en", "Shopping Queries", "en", "classification", "micro_f1",
            splits={s: Split(ESCI, _esci("us", s)) for s in ("train", "test")},
            labels=("E", "S", "C", "I"), group="Retrieval",
            source="amazon-science/esci-data (not in the offline mirror)", hp_source=PPDB,
        ),
        Task(
            "stsb", "STS-B", "en", "regression", "spearman",
            splits={
                "train": Split("stsbenchmark/sts-train.csv", readers.read_stsb),
                "dev": Split("stsbenchmark/sts-dev.csv", readers.read_stsb),
                "test": Split("stsbenchmark/sts-test.csv", readers.read_stsb),
            },
            group="Similarity", source=STSB, epochs=3, lr=5e-5, hp_source=EBSIM,
        ),
        Task(
            "sickr", "SICK-R", "en", "regression", "spearman",
            splits={s: Split("sick/SICK.txt", _sick(o, "relatedness"))
                    for s, o in (("train", "train"), ("dev", "trial"), ("test", "test"))},
            group="Similarity", source="SICK (Marelli et al. 2014); kkalouli/SICK-processing",
            hp_source=PPDB, score_range=(1.0, 5.0),
        ),
        Task(
            "snli", "SNLI", "en", "classification", "macro_f1",
            splits={s: Split(f"snli/snli_1.0_{s}.jsonl", readers.read_snli) for s in SPLITS},
            labels=NLI, group="RTE",
            source="nlp.stanford.edu/projects/snli (not in the offline mirror)", hp_source=PPDB,
        ),
        Task(
            "sicke", "SICK-E", "en", "classification", "macro_f1",
            splits={s: Split("sick/SICK.txt", _sick(o, "entailment"))
                    for s, o in (("train", "train"), ("dev", "trial"), ("test", "test"))},
            labels=NLI, group="RTE",
            source="SICK (Marelli et al. 2014); kkalouli/SICK-processing", hp_source=PPDB,
        ),
        Task(
            "paws", "PAWS", "en", "classification", "macro_f1",
            splits={"dev": Split("pawsx/dev-en.tsv", readers.read_pawsx)},
            labels=BINARY, group="Paraphrase",
            source="google-research-datasets/paws (offline: PAWS-X English dev only)",
            hp_source=PPDB,
        ),
        Task(
            "cola", "CoLA", "en", "classification", "mcc",
            splits={"dev": Split("glue/CoLA/dev.tsv", readers.read_cola)},
            labels=BINARY, group="GLUE", epochs=10, hp_source=RT_SMALL, lr=2e-5,
            source="GLUE CoLA (nyu-mll; offline: dev only)", extra={"single": True},
        ),
        Task(
            "sst2", "SST-2", "en", "classification", "accuracy",
            splits={
                "train": Split("glue/SST-2/train.tsv", _glue("sentence", None, "label")),
                "test": Split("glue/SST-2/dev.tsv", _glue("sentence", None, "label")),
            },
            labels=BINARY, group="GLUE", hp_source=RT_LARGE, lr=2e-5, test_from_dev=True,
            source="GLUE SST-2", extra={"single": True},
        ),
        Task(
            "mrpc", "MRPC", "en", "classification", "f1",
            splits={
                "train": Split("glue/MRPC/msr_paraphrase_train.txt", readers.read_mrpc),
                "test": Split("glue/MRPC/msr_paraphrase_test.txt", readers.read_mrpc),
            },
            labels=BINARY, group="GLUE", epochs=3, lr=5e-5, hp_source=EBSIM,
            source="GLUE MRPC (nyu-mll/GLUE-baselines)",
        ),
        Task(
            "qqp", "QQP", "en", "classification", "f1",
            splits={s: Split(f"glue/QQP/{f}.tsv", _glue("question1", "question2", "is_duplicate"))
                    for s, f in (("train", "train"), ("test", "dev"))},
            labels=BINARY, group="GLUE", epochs=3, lr=5e-5, hp_source=EBSIM, test_from_dev=True,
            source="GLUE QQP (not in the offline mirror)",
        ),
        Task(
            "qnli", "QNLI", "en", "classification", "accuracy",
            splits={s: Split(f"glue/QNLI/{f}.tsv", _glue("question", "sentence", "label"))
                    for s, f in (("train", "train"), ("test", "dev"))},
            labels=("entailment", "not_entailment"), group="GLUE", hp_source=RT_LARGE, lr=2e-5,
            test_from_dev=True,
            source="GLUE QNLI v2 (not in the offline mirror)",
        ),
        Task(
            "rte", "RTE", "en", "classification", "accuracy",
            splits={
                "train": Split("glue/RTE/train.tsv", _glue("sentence1", "sentence2", "label")),
                "test": Split("glue/RTE/dev.tsv", _glue("sentence1", "sentence2", "label")),
            },
            labels=("entailment", "not_entailment"), group="GLUE", epochs=10,
            hp_source=RT_SMALL, lr=2e-5, test_from_dev=True, source="GLUE RTE",
        ),
        Task(
            "mnli", "MNLI", "en", "classification", "accuracy",
            splits={s: Split(f"glue/MNLI/{f}.tsv", _glue("sentence1", "sentence2", "gold_label"))
                    for s, f in (("train", "train"), ("test", "dev_matched"))},
            labels=NLI, group="GLUE", hp_source=RT_LARGE, lr=2e-5, test_from_dev=True,
            source="GLUE MNLI (not in the offline mirror)",
        ),
        # ---- Japanese (Table 3 bottom) ----
        Task(
            "esci_ja", "Shopping Queries", "ja", "classification", "micro_f1",
            splits={s: Split(ESCI, _esci("jp", s)) for s in ("train", "test")},
            labels=("E", "S", "C", "I"), group="Retrieval",
            source="amazon-science/esci-data (not in the offline mirror)", hp_source=PPDB,
        ),
        Task(
            "jsts", "JSTS", "ja", "regression", "spearman",
            splits={
                "train": Split("jglue/jsts-v1.3/train-v1.3.json", readers.read_jglue),
                "dev": Split("jglue/jsts-v1.3/valid-v1.3.json", readers.read_jglue),
                "test": Split("jglue/jsts-v1.3/test-v1.3.json", readers.read_jglue),
            },
            group="Similarity", source="yahoojapan/JGLUE v1.3", hp_source=PPDB,
        ),
        Task(
            "jsickr", "JSICK", "ja", "regression", "spearman",
            splits={
                "train": Split("jsick/jsick.tsv", _jsick(("train",), "relatedness")),
                "dev": Split("jsick/jsick.tsv", _jsick(("trial",), "relatedness")),
                "test": Split("jsick/jsick.tsv", _jsick(("test",), "relatedness")),
            },
            group="Similarity", source="verypluming/JSICK", hp_source=PPDB,
            score_range=(1.0, 5.0),
        ),
        Task(
            "jnli", "JNLI", "ja", "classification", "macro_f1",
            splits={
                "train": Split("jglue/jnli-v1.3/train-v1.3.json", readers.read_jglue),
                "dev": Split("jglue/jnli-v1.3/valid-v1.3.json", readers.read_jglue),
                "test": Split("jglue/jnli-v1.3/test-v1.3.json", readers.read_jglue),
            },
            labels=NLI, group="RTE", source="yahoojapan/JGLUE v1.3 (train missing offline)",
            hp_source=PPDB,
        ),
        Task(
            "jsicke", "JSICK-E", "ja", "classification", "macro_f1",
            splits={
                "train": Split("jsick/jsick.tsv", _jsick(("train",), "entailment")),
                "dev": Split("jsick/jsick.tsv", _jsick(("trial",), "entailment")),
                "test": Split("jsick/jsick.tsv", _jsick(("test",), "entailment")),
            },
            labels=NLI, group="RTE", source="verypluming/JSICK", hp_source=PPDB,
        ),
        Task(
            "pawsx_ja", "PAWS-X", "ja", "classification", "macro_f1",
            splits={"dev": Split("pawsx/dev-ja.tsv", readers.read_pawsx)},
            labels=BINARY, group="Paraphrase",
            source="google-research-datasets/paws (PAWS-X; offline: Japanese dev only)",
            hp_source=PPDB,
        ),
    ]
}  # fmt: skip


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r} (known: {', '.join(sorted(TASKS))})")
    return TASKS[name]


def _carve(
    df: pd.DataFrame, fraction: float, seed: int, stratify: bool
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split off a seeded `fraction` of `df` (stratified by label for classes)."""
    strat = df["label"] if stratify and df["label"].value_counts().min() >= 2 else None
    rest, part = train_test_split(df, test_size=fraction, random_state=seed, stratify=strat)
    return rest.reset_index(drop=True), part.reset_index(drop=True)


def load_task(
    task: Task | str,
    raw_dir: str | Path,
    seed: int,
    dev_fraction: float = 0.1,
    test_fraction: float = 0.2,
) -> TaskData:
    """Read a task's splits; re-split (seeded, documented) what the mirror lacks.

    Rules, applied in order to the splits that exist:
    - train, dev, test: the official split, unchanged;
    - the test labels are not public (GLUE): official dev is the test, and dev is a
      seeded `dev_fraction` of train;
    - no dev: dev is a seeded `dev_fraction` of train;
    - no train (JNLI): train and dev are a seeded re-split of the official dev;
    - one split only (PAWS-X dev, CoLA dev): seeded train/dev/test re-split of it.
    """
    task = get_task(task) if isinstance(task, str) else task
    raw_dir = Path(raw_dir)
    have = {s: sp for s, sp in task.splits.items() if (raw_dir / sp.path).exists()}
    if not have:
        paths = sorted({str(raw_dir / sp.path) for sp in task.splits.values()})
        raise TaskUnavailable(
            f"task {task.name}: no data found (looked for {', '.join(paths)}); "
            f"canonical source: {task.source}"
        )
    frames = {s: sp.read(raw_dir / sp.path) for s, sp in have.items()}
    for s, df in frames.items():
        if df.empty:
            raise TaskUnavailable(f"task {task.name}: split {s} ({have[s].path}) has no rows")
    strat = task.kind == "classification"
    official = {s: f"official {s} ({have[s].path})" for s in frames}
    pct = f"{dev_fraction:.0%}"
    if set(frames) == set(SPLITS):
        train, dev, test = frames["train"], frames["dev"], frames["test"]
        prov = official
    elif "train" in frames and "test" in frames:
        train, dev = _carve(frames["train"], dev_fraction, seed, strat)
        test = frames["test"]
        prov = {
            "train": f"official train minus a seeded {pct} (seed {seed})",
            "dev": f"seeded {pct} of official train (seed {seed})",
            "test": official["test"],
        }
    elif "dev" in frames and "test" in frames:
        train, dev = _carve(frames["dev"], dev_fraction, seed, strat)
        test = frames["test"]
        prov = {
            "train": f"official dev minus a seeded {pct} (seed {seed}); train is missing",
            "dev": f"seeded {pct} of official dev (seed {seed})",
            "test": official["test"],
        }
    elif "train" in frames and "dev" in frames:
        train, dev = _carve(frames["train"], dev_fraction, seed, strat)
        test = frames["dev"]
        prov = {
            "train": f"official train minus a seeded {pct} (seed {seed})",
            "dev": f"seeded {pct} of official train (seed {seed})",
            "test": f"official dev ({have['dev'].path}); test is missing",
        }
    else:
        (only,) = frames
        rest, test = _carve(frames[only], test_fraction, seed, strat)
        train, dev = _carve(rest, dev_fraction / (1 - test_fraction), seed, strat)
        where = f"of official {only} ({have[only].path}), the only split offline"
        prov = {
            "train": f"seeded {1 - dev_fraction - test_fraction:.0%} {where} (seed {seed})",
            "dev": f"seeded {pct} {where} (seed {seed})",
            "test": f"seeded {test_fraction:.0%} {where} (seed {seed})",
        }
    if task.test_from_dev and "train" in frames:
        prov["test"] = f"official dev ({task.splits['test'].path}): test labels are not public"
    is_official = set(frames) == set(SPLITS) and not task.test_from_dev
    official_test = "test" in frames and not task.test_from_dev
    return TaskData(task, train, dev, test, is_official, prov, official_test)
