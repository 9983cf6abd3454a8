"""The task registry: every evaluation dataset, its files, splits, labels and metric.

One entry per dataset (English and Japanese), with the canonical source it comes from
and the fine-tuning hyper-parameters the papers give for it. Files are looked up under
the raw-data folder written by the fetch stage (`data/raw/`, same layout as the mirror).

The splits are the papers' (PPDB paper Tables 1 and 2): a task declares the files it
reads; a split it does not declare is carved from train, seeded, as the paper did (JSTS
and JNLI test on the official valid set and carve dev from train; ESCI carves dev from
train by query). With every declared file present, `TaskData.official_split` is True.

Where a declared file is absent (offline: JNLI train, PAWS train, PAWS-X train/test, CoLA
train, …), `missing="fail"` (the paper presets) stops with one line naming the file and
the fetch source to add; `missing="resplit"` (the CPU default) builds a documented,
seeded re-split of what exists: `official_split` is then False and
`TaskData.provenance` names where each split came from. A task with no data at all
raises TaskUnavailable (resplit) or SplitMissing (fail).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from paracl.core.errors import InputError
from paracl.core.languages import ENGLISH, JAPANESE, profiles
from paracl.parts.evaluation import readers

EN, JA = ENGLISH.code, JAPANESE.code  # the datasets' languages (their profiles' codes)

SPLITS = ("train", "dev", "test")
MISSING = ("resplit", "fail")  # what load_task does when a declared split file is absent


class TaskUnavailable(RuntimeError):
    """The task's data is not present; the message says which files and from where."""


class SplitMissing(InputError):
    """A split the paper uses is absent and re-splitting is off: fetch its source."""


@dataclass(frozen=True)
class Split:
    """One split: a file under the raw-data folder, how to read it, the fetch source
    (src/paracl/fetch/sources.tsv) that writes it (default: its top folder), and another
    copy of the same split in another layout, read where this file is absent."""

    path: str
    read: Callable[[Path], pd.DataFrame]
    fetch: str | None = None
    alt: Split | None = None

    @property
    def source(self) -> str:
        return self.fetch or self.path.split("/", 1)[0]

    def find(self, raw_dir: Path) -> Split | None:
        """This split or its other copy, whichever file exists under raw_dir."""
        if (raw_dir / self.path).exists():
            return self
        return self.alt.find(raw_dir) if self.alt is not None else None


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
    carve_by: str | None = None  # dev carved from train by groups of this column (queries)
    paper_sizes: tuple[int, int, int] | None = None  # train/dev/test, PPDB paper Tables 1-2
    # Regression: the gold scale; targets are mapped to [0, 1] for training (as
    # sentence-transformers' STS-B cross-encoder does), which a fresh head fits far
    # sooner than raw 0–5 scores. Correlations do not depend on the scale.
    score_range: tuple[float, float] = (0.0, 5.0)
    extra: dict = field(default_factory=dict)
    # Further test sets, scored beside test with what dev chose (the threshold, the
    # fine-tuned model): zero-shot languages and cross-lingual pairs (TaskData.eval_sets).
    eval_sets: dict[str, Split] = field(default_factory=dict)
    # Held-out pairs drawn like each further set and disjoint from it: with dev, they choose
    # a cosine threshold (paraphrase_id.evaluate_pi), so that it is chosen on every kind of
    # pair it is applied to, as the cross-lingual PI paper's dev set is.
    threshold_sets: dict[str, Split] = field(default_factory=dict)
    # (fraction, seed) of a dev carved from train whatever the caller's seed: training (any
    # seed) and evaluation then hold out the same pairs, so no run trains on its dev.
    fixed_carve: tuple[float, int] | None = None
    # A variant of task `variant_of` (its data, splits and metric): few-shot (FEW_SHOT), its
    # train split a seeded sample of `train_cap` pairs whatever evaluate.max_train says
    # (EBSIM's Figure 2 offline), or on another paper's fine-tuning recipe (STILTS)
    train_cap: int | None = None
    variant_of: str | None = None


@dataclass
class TaskData:
    task: Task
    train: pd.DataFrame
    dev: pd.DataFrame
    test: pd.DataFrame
    official_split: bool
    provenance: dict[str, str]  # split -> where its rows came from
    official_test: bool = False  # test is the official test split (train/dev may be re-split)
    official_dev: bool = False  # dev is the official dev file (not carved)
    eval_sets: dict[str, pd.DataFrame] = field(default_factory=dict)  # Task.eval_sets, read
    threshold_sets: dict[str, pd.DataFrame] = field(default_factory=dict)  # likewise

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
# The round-trip paper's §6.1 fine-tuning recipes, the one source of its GLUE tasks' values
# (TASKS) and of the STILTS variants': 10 epochs under 10k training pairs, else 3
RT_SMALL_HP = {"epochs": 10, "lr": 2e-5, "batch_size": 32, "hp_source": RT_SMALL}
RT_LARGE_HP = {"epochs": 3, "lr": 2e-5, "batch_size": 32, "hp_source": RT_LARGE}
PPDB = "not given in the PPDB paper; EBSIM Table 1's BERT-base setting (3 epochs, 5e-5, 32)"

SICK_SIZES = (4_439, 495, 4_906)
JSICK_SIZES = (4_500, 500, 4_927)


def _paws_wiki(split: str) -> Split:
    """PAWS-Wiki Labeled (Final) dev/test: the mirrored copy, or Google's archive (source
    `paws`, unpacked to paws/final/)."""
    return Split(f"paws-wiki/{split}.tsv", readers.read_paws,
                 alt=Split(f"paws/final/{split}.tsv", readers.read_paws))  # fmt: skip


def read_paws_unseen(path: Path) -> pd.DataFrame:
    """PAWS-Wiki pairs (`path`) less every pair that shares a sentence with PAWS-X's English
    dev (pawsx/dev-en.tsv under the same raw-data folder).

    PAWS-X's English dev is drawn from PAWS-Wiki dev: a model trained on those pairs has
    seen the English side of the Japanese pairs it is scored on. Matched by sentence, not
    by pair: PAWS builds several pairs from one source sentence, and a sibling pair shows
    the model the same sentence (PAWS-Wiki dev: 8,000 pairs -> 2,231 kept). PAWS-X's
    English test is drawn from it too but is not scored here (its labels are not in the
    mirror); a run that scores PAWS-X test must hold its sentences out as well."""
    xdev = path.parent.parent / "pawsx" / "dev-en.tsv"
    if not xdev.exists():
        raise InputError(f"{xdev}: not found; it is needed to keep PAWS-X's English dev out "
                         f"of training on {path} (fetch source pawsx)")  # fmt: skip
    seen = readers.pawsx_sentences(xdev)
    df = readers.read_paws(path)
    keep = ~(df["sentence1"].isin(seen) | df["sentence2"].isin(seen))
    return df[keep].reset_index(drop=True)


def _pawsx_dev_half(kind: str, half: str) -> Split:
    """One kind of pair (readers.PAIR_KINDS) of one half of PAWS-X dev (en + ja,
    line-aligned; readers.pawsx_half): the threshold half or the scored half."""
    return Split("pawsx/dev-en.tsv", lambda p: readers.read_pawsx_cross(
        p, p.with_name("dev-ja.tsv"), kind, readers.pawsx_half(p, half)))  # fmt: skip


def _pawsx_full_cross(kind: str, name: str) -> Split:
    """Cross-lingual pairs of PAWS-X dev_2k or test_2k as Google publishes it (x-final en + ja)."""
    return Split(f"pawsx/x-final/en/{name}.tsv", lambda p: readers.read_pawsx_cross(
        p, p.parents[1] / JA / f"{name}.tsv", kind), "pawsx-full")  # fmt: skip


def _pawsx_ja(name: str, alt: Split | None = None) -> Split:
    """PAWS-X Japanese as Google publishes it (x-final.tar.gz, labelled test included)."""
    return Split(f"pawsx/x-final/ja/{name}.tsv", readers.read_paws, "pawsx-full", alt)


STSB = "sts-benchmark (ixa2.si.ehu.es/stswiki); SentEval copy amao0o0/SynWMD"
TASKS: dict[str, Task] = {
    t.name: t
    for t in [
        # ---- English (Table 3 top, plus GLUE) ----
        Task(
            "esci_en", "Shopping Queries", EN, "classification", "micro_f1",
            splits={s: Split(ESCI, _esci("us", s)) for s in ("train", "test")},
            labels=("E", "S", "C", "I"), group="Retrieval", carve_by="sentence1",
            source="amazon-science/esci-data (not in the offline mirror)", hp_source=PPDB,
            paper_sizes=(1_254_438, 138_625, 425_762),
        ),
        Task(
            "stsb", "STS-B", EN, "regression", "spearman",
            splits={
                "train": Split("stsbenchmark/sts-train.csv", readers.read_stsb),
                "dev": Split("stsbenchmark/sts-dev.csv", readers.read_stsb),
                "test": Split("stsbenchmark/sts-test.csv", readers.read_stsb),
            },
            group="Similarity", source=STSB, epochs=3, lr=5e-5, hp_source=EBSIM,
            paper_sizes=(5_749, 1_500, 1_379),
        ),
        Task(
            "sickr", "SICK-R", EN, "regression", "spearman",
            splits={s: Split("sick/SICK.txt", _sick(o, "relatedness"))
                    for s, o in (("train", "train"), ("dev", "trial"), ("test", "test"))},
            group="Similarity", source="SICK (Marelli et al. 2014); kkalouli/SICK-processing",
            hp_source=PPDB, score_range=(1.0, 5.0), paper_sizes=SICK_SIZES,
        ),
        Task(
            "snli", "SNLI", EN, "classification", "macro_f1",
            splits={s: Split(f"snli/snli_1.0/snli_1.0_{s}.jsonl", readers.read_snli)
                    for s in SPLITS},
            labels=NLI, group="RTE",
            source="nlp.stanford.edu/projects/snli (not in the offline mirror)", hp_source=PPDB,
            paper_sizes=(549_367, 9_842, 9_824),
        ),
        Task(
            "sicke", "SICK-E", EN, "classification", "macro_f1",
            splits={s: Split("sick/SICK.txt", _sick(o, "entailment"))
                    for s, o in (("train", "train"), ("dev", "trial"), ("test", "test"))},
            labels=NLI, group="RTE",
            source="SICK (Marelli et al. 2014); kkalouli/SICK-processing", hp_source=PPDB,
            paper_sizes=SICK_SIZES,
        ),
        Task(
            "paws", "PAWS", EN, "classification", "macro_f1",
            splits={
                "train": Split("paws/final/train.tsv", readers.read_paws),
                "dev": _paws_wiki("dev"),
                "test": _paws_wiki("test"),
            },
            labels=BINARY, group="Paraphrase",
            source="google-research-datasets/paws, PAWS-Wiki Labeled (Final)", hp_source=PPDB,
            paper_sizes=(49_401, 8_000, 8_000),
        ),
        Task(
            "cola", "CoLA", EN, "classification", "mcc",
            splits={"dev": Split("glue/CoLA/dev.tsv", readers.read_cola)},
            labels=BINARY, group="GLUE", **RT_SMALL_HP,
            source="GLUE CoLA (nyu-mll; offline: dev only)", extra={"single": True},
        ),
        Task(
            "sst2", "SST-2", EN, "classification", "accuracy",
            splits={
                "train": Split("glue/SST-2/train.tsv", _glue("sentence", None, "label")),
                "test": Split("glue/SST-2/dev.tsv", _glue("sentence", None, "label")),
            },
            labels=BINARY, group="GLUE", **RT_LARGE_HP, test_from_dev=True,
            source="GLUE SST-2", extra={"single": True},
        ),
        Task(
            "mrpc", "MRPC", EN, "classification", "f1",
            splits={
                "train": Split("glue/MRPC/msr_paraphrase_train.txt", readers.read_mrpc),
                "test": Split("glue/MRPC/msr_paraphrase_test.txt", readers.read_mrpc),
            },
            labels=BINARY, group="GLUE", epochs=3, lr=5e-5, hp_source=EBSIM,
            source="GLUE MRPC (nyu-mll/GLUE-baselines)",
        ),
        Task(
            "qqp", "QQP", EN, "classification", "f1",
            # GLUE's QQP-clean.zip (source qqp) unpacks to qqp/QQP/
            splits={s: Split(f"qqp/QQP/{f}.tsv", _glue("question1", "question2", "is_duplicate"))
                    for s, f in (("train", "train"), ("test", "dev"))},
            labels=BINARY, group="GLUE", epochs=3, lr=5e-5, hp_source=EBSIM, test_from_dev=True,
            source="GLUE QQP (not in the offline mirror)",
        ),
        Task(
            "qnli", "QNLI", EN, "classification", "accuracy",
            # GLUE's QNLIv2.zip (source qnli) unpacks to qnli/QNLI/
            splits={s: Split(f"qnli/QNLI/{f}.tsv", _glue("question", "sentence", "label"))
                    for s, f in (("train", "train"), ("test", "dev"))},
            labels=("entailment", "not_entailment"), group="GLUE", **RT_LARGE_HP, test_from_dev=True,
            source="GLUE QNLI v2 (not in the offline mirror)",
        ),
        Task(
            "rte", "RTE", EN, "classification", "accuracy",
            splits={
                "train": Split("glue/RTE/train.tsv", _glue("sentence1", "sentence2", "label")),
                "test": Split("glue/RTE/dev.tsv", _glue("sentence1", "sentence2", "label")),
            },
            labels=("entailment", "not_entailment"), group="GLUE", **RT_SMALL_HP,
            test_from_dev=True, source="GLUE RTE",
        ),
        Task(
            "mnli", "MNLI", EN, "classification", "accuracy",
            # MultiNLI 1.0's JSON Lines (SNLI's format; source multinli, also SimCSE's data)
            splits={s: Split(f"multinli/multinli_1.0/multinli_1.0_{f}.jsonl", readers.read_snli)
                    for s, f in (("train", "train"), ("test", "dev_matched"))},
            labels=NLI, group="GLUE", **RT_LARGE_HP, test_from_dev=True,
            source="GLUE MNLI (not in the offline mirror)",
            # MNLI-mm (round-trip paper Table 5): the same model on the mismatched genres
            eval_sets={"mismatched": Split("multinli/multinli_1.0/multinli_1.0_dev_mismatched.jsonl",
                                           readers.read_snli)},
        ),
        # ---- Japanese (Table 3 bottom) ----
        Task(
            "esci_ja", "Shopping Queries", JA, "classification", "micro_f1",
            splits={s: Split(ESCI, _esci("jp", s)) for s in ("train", "test")},
            labels=("E", "S", "C", "I"), group="Retrieval", carve_by="sentence1",
            source="amazon-science/esci-data (not in the offline mirror)", hp_source=PPDB,
            paper_sizes=(294_874, 32_272, 118_907),
        ),
        Task(
            "jsts", "JSTS", JA, "regression", "spearman",
            # the paper's Table 2: test = official valid, dev = a seeded 10% of train
            splits={
                "train": Split("jglue/jsts-v1.3/train-v1.3.json", readers.read_jglue),
                "test": Split("jglue/jsts-v1.3/valid-v1.3.json", readers.read_jglue),
            },
            group="Similarity", source="yahoojapan/JGLUE v1.3", hp_source=PPDB,
            paper_sizes=(11_205, 1_246, 1_457),
        ),
        Task(
            "jsickr", "JSICK", JA, "regression", "spearman",
            splits={
                "train": Split("jsick/jsick.tsv", _jsick(("train",), "relatedness")),
                "dev": Split("jsick/jsick.tsv", _jsick(("trial",), "relatedness")),
                "test": Split("jsick/jsick.tsv", _jsick(("test",), "relatedness")),
            },
            group="Similarity", source="verypluming/JSICK", hp_source=PPDB,
            score_range=(1.0, 5.0), paper_sizes=JSICK_SIZES,
        ),
        Task(
            "jnli", "JNLI", JA, "classification", "macro_f1",
            # the paper's Table 2: test = official valid, dev = a seeded 10% of train
            splits={
                "train": Split("jglue/jnli-v1.3/train-v1.3.json", readers.read_jglue,
                               "jnli-train"),
                "test": Split("jglue/jnli-v1.3/valid-v1.3.json", readers.read_jglue),
            },
            labels=NLI, group="RTE", source="yahoojapan/JGLUE v1.3 (train missing offline)",
            hp_source=PPDB, paper_sizes=(18_065, 2_008, 2_434),
        ),
        Task(
            "jsicke", "JSICK-E", JA, "classification", "macro_f1",
            splits={
                "train": Split("jsick/jsick.tsv", _jsick(("train",), "entailment")),
                "dev": Split("jsick/jsick.tsv", _jsick(("trial",), "entailment")),
                "test": Split("jsick/jsick.tsv", _jsick(("test",), "entailment")),
            },
            labels=NLI, group="RTE", source="verypluming/JSICK", hp_source=PPDB,
            paper_sizes=JSICK_SIZES,
        ),
        Task(
            "pawsx_ja", "PAWS-X", JA, "classification", "macro_f1",
            splits={
                "train": _pawsx_ja("translated_train"),
                # XTREME's copy of the same dev set (the offline mirror's) where x-final is absent
                "dev": _pawsx_ja("dev_2k", Split("pawsx/dev-ja.tsv", readers.read_pawsx)),
                "test": _pawsx_ja("test_2k"),
            },
            labels=BINARY, group="Paraphrase",
            source="google-research-datasets/paws, PAWS-X (offline: Japanese dev only)",
            hp_source=PPDB, paper_sizes=(49_401, 2_000, 2_000),
        ),
        # ---- the cross-lingual PI paper offline (presets/pi-en-ja.yaml) ----
        Task(
            "paws_xling", "PAWS en→ja", EN, "classification", "accuracy",
            # train: PAWS-Wiki dev less PAWS-X's English dev/test sentences; dev: a fixed
            # seeded 20% of it (the threshold / model selection); test: PAWS-Wiki test;
            # Japanese and cross-lingual pairs: PAWS-X dev, halved by line (one half
            # chooses the threshold with dev, the other is scored)
            splits={"train": Split("paws-wiki/dev.tsv", read_paws_unseen),
                    "test": _paws_wiki("test")},
            eval_sets={k: _pawsx_dev_half(k, "scored") for k in readers.PAIR_KINDS},
            threshold_sets={k: _pawsx_dev_half(k, "threshold") for k in readers.PAIR_KINDS},
            labels=BINARY, group="Paraphrase", fixed_carve=(0.2, 42),
            source="google-research-datasets/paws: PAWS-Wiki (Final) dev and test, PAWS-X dev "
                   "en + ja (line-aligned)", hp_source="",
        ),
        # the same on the full PAWS-X (the paper presets): English train, the official dev
        # chooses the threshold, English and Japanese test (labelled) and their cross pairs.
        # PAWS-X en train is PAWS-Wiki train; its dev and test come from PAWS-Wiki dev.
        Task(
            "pawsx_xling", "PAWS-X en→ja", EN, "classification", "accuracy",
            splits={s: Split(f"pawsx/x-final/en/{f}.tsv", readers.read_paws, "pawsx-full")
                    for s, f in (("train", "train"), ("dev", "dev_2k"), ("test", "test_2k"))},
            eval_sets={JA: _pawsx_ja("test_2k"),
                       **{k: _pawsx_full_cross(k, "test_2k") for k in readers.CROSS}},
            threshold_sets={JA: _pawsx_ja("dev_2k"),
                            **{k: _pawsx_full_cross(k, "dev_2k") for k in readers.CROSS}},
            labels=BINARY, group="Paraphrase",
            source="google-research-datasets/paws, PAWS-X x-final (en train/dev/test, ja test)",
            hp_source="", paper_sizes=(49_401, 2_000, 2_000),
        ),
    ]
}  # fmt: skip


# EBSIM's Figure 2 (few-shot fine-tuning at growing training sizes) offline: each task of
# FEW_SHOT_TASKS at each size is a fine-tuning job of its own, `<task>_n<size>` (e.g.
# stsb_n250), the task with its train split a seeded sample of that size. The task itself,
# at evaluate.max_train, is the curve's point at that size (presets/ebsim-en.yaml).
FEW_SHOT_SIZES = (125, 250, 500, 2000)
FEW_SHOT_TASKS = ("stsb", "mrpc")


def few_shot(task: Task, size: int) -> Task:
    """`task` fine-tuned on a seeded sample of `size` train pairs (a FEW_SHOT job)."""
    return replace(task, name=f"{task.name}_n{size}", title=f"{task.title} ({size} train)",
                   train_cap=size, variant_of=task.name)  # fmt: skip


FEW_SHOT = {
    v.name: v for t in FEW_SHOT_TASKS for v in (few_shot(TASKS[t], n) for n in FEW_SHOT_SIZES)
}


# The round-trip paper's §6 fine-tunes every GLUE task on its own recipe (§6.1, RT_*_HP);
# MRPC, QQP and STS-B carry EBSIM's in TASKS (its Table 2 and the PPDB paper's Table 3
# rows). `<task>_stilts` is the task (same data, splits, metric) on §6's recipe, which the
# STILTs rows run (paper-en's train_intermediate.tasks), so no column mixes two recipes.
STILTS_RECIPES = {"mrpc": RT_SMALL_HP, "qqp": RT_LARGE_HP, "stsb": RT_SMALL_HP}


def on_recipe(task: Task, hp: dict, suffix: str, note: str) -> Task:
    """`task` fine-tuned with the epochs, lr, batch_size and hp_source of `hp`, as a task
    of its own (`<name>_<suffix>`, titled with `note`): one registry entry per recipe."""
    return replace(task, name=f"{task.name}_{suffix}", title=f"{task.title} ({note})",
                   variant_of=task.name, **hp)  # fmt: skip


STILTS = {
    v.name: v for v in (on_recipe(TASKS[t], hp, "stilts", "§6") for t, hp in STILTS_RECIPES.items())
}


def base_task(name: str) -> str:
    """The task whose data a job reads: a STILTS variant's own task, else `name` (Table 5's
    column of `mrpc_stilts` is MRPC)."""
    return STILTS[name].variant_of if name in STILTS else name


def get_task(name: str) -> Task:
    if name in FEW_SHOT:
        return FEW_SHOT[name]
    if name in STILTS:
        return STILTS[name]
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r} (known: {', '.join(sorted(TASKS))})")
    return TASKS[name]


# -- the jobs of the two evaluate stages ---------------------------------------------
# (params.yaml's check reads these when params load, so this module stays light to import)
# Stage `evaluate` (evaluate.tasks, every run): jobs that only embed sentences. Stage
# `evaluate_finetune` (evaluate.finetune_tasks): the fine-tuning tasks of TASKS. Two
# stages, so that a fine-tuning setting or fix reruns no embedding score.

UNSUP = {p.unsup_sts: p.code for p in profiles()}  # cosine STS of the encoder, no training
PI = {p.pi: p.code for p in profiles()}  # cosine-threshold paraphrase identification
# the cross-lingual PI paper offline: threshold on held-out English PAWS, accuracy on
# English PAWS-Wiki test, Japanese PAWS-X dev and their cross-lingual pairs (job -> task)
PI_XLING = {"pi_xling": "paws_xling", "pi_xling_full": "pawsx_xling"}
PI_XLING_SETS = (EN, JA, "en_ja", "ja_en")  # the labelled sets (translation: all positive)
TABLE6 = "Domain (JCSE Table 6)"
DOMAIN = {  # JCSE's domain tasks: clinical STS by cosine, educational question retrieval
    "jacsts": {"kind": "domain_sts", "lang": JA, "metric": "spearman", "title": "JACSTS",
               "group": TABLE6},
    "qabot": {"kind": "retrieval", "lang": JA, "metric": "map", "title": "QAbot",
              "group": TABLE6},
}  # fmt: skip
EMBEDDING_JOBS = (*UNSUP, *PI, *PI_XLING, *DOMAIN)
FINETUNE_JOBS = (*TASKS, *FEW_SHOT, *STILTS)
JOBS = (*EMBEDDING_JOBS, *FINETUNE_JOBS)


def job_info(name: str) -> dict:
    """Kind, language, metric and column title of a job (for the summary table)."""
    if name in UNSUP:
        return {"kind": "unsup_sts", "lang": UNSUP[name], "metric": "spearman",
                "title": "STS avg (unsup.)", "group": "Unsupervised"}  # fmt: skip
    if name in PI:
        return {"kind": "pi", "lang": PI[name], "metric": "accuracy",
                "title": "PI acc (cosine)", "group": "Unsupervised"}  # fmt: skip
    if name in PI_XLING:
        return {"kind": "pi_xling", "lang": EN, "metric": "accuracy",
                "title": "PI acc en/ja (cosine)", "group": "Unsupervised"}  # fmt: skip
    if name in DOMAIN:
        return dict(DOMAIN[name])
    t = get_task(name)
    return {"kind": "finetune", "lang": t.lang, "metric": t.metric, "title": t.title,
            "group": t.group}  # fmt: skip


def _carve(
    df: pd.DataFrame, fraction: float, seed: int, stratify: bool, groups: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split off a seeded `fraction` of `df` (stratified by label for classes; with
    `groups`, a fraction of the groups, so that no query is on both sides)."""
    # imported here: params validation reads this module's JOBS, and sklearn is slow to load
    from sklearn.model_selection import GroupShuffleSplit, train_test_split

    if groups is not None:
        split = GroupShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)
        rest, part = next(split.split(df, groups=df[groups]))
        return df.iloc[rest].reset_index(drop=True), df.iloc[part].reset_index(drop=True)
    strat = df["label"] if stratify and df["label"].value_counts().min() >= 2 else None
    rest, part = train_test_split(df, test_size=fraction, random_state=seed, stratify=strat)
    return rest.reset_index(drop=True), part.reset_index(drop=True)


def _missing_message(task: Task, raw_dir: Path, absent: list[str]) -> str:
    """One line: the first absent file, its fetch source, and the way out."""
    if not absent:  # CoLA: only its dev file is known, no train/test source exists here
        return (
            f"task {task.name}: only {', '.join(task.splits)} has a known file "
            f"(canonical: {task.source}); set evaluate.missing_splits: resplit to re-split it"
        )
    sp = task.splits[absent[0]]
    more = f" (and {', '.join(absent[1:])})" if absent[1:] else ""
    return (
        f"task {task.name}: {absent[0]} split {raw_dir / sp.path} not found{more}: add "
        f"source {sp.source!r} to fetch.sources (canonical: {task.source}), or set "
        "evaluate.missing_splits: resplit to re-split what exists"
    )


def load_task(
    task: Task | str,
    raw_dir: str | Path,
    seed: int,
    dev_fraction: float = 0.1,
    test_fraction: float = 0.2,
    missing: str = "resplit",
) -> TaskData:
    """Read a task's splits: the paper's when every declared file exists; otherwise stop
    (`missing="fail"`) or re-split what exists (`"resplit"`, seeded and documented)."""
    task = get_task(task) if isinstance(task, str) else task
    if missing not in MISSING:
        raise ValueError(f"missing must be one of {MISSING}, got {missing!r}")
    raw_dir = Path(raw_dir)
    found = {s: sp.find(raw_dir) for s, sp in task.splits.items()}
    have = {s: sp for s, sp in found.items() if sp is not None}
    absent = [s for s in task.splits if s not in have]
    partial = bool(absent) or not {"train", "test"} <= set(task.splits)
    if partial and missing == "fail":
        raise SplitMissing(_missing_message(task, raw_dir, absent))
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
    if partial:
        return _resplit(task, frames, have, seed, dev_fraction, test_fraction)
    official = {s: f"official {s} ({have[s].path})" for s in frames}
    if "dev" in frames:
        train, dev = frames["train"], frames["dev"]
    else:  # the paper's split: dev carved from train (JSTS, JNLI, ESCI, GLUE)
        strat = task.kind == "classification"
        dev_fraction, seed = task.fixed_carve or (dev_fraction, seed)
        train, dev = _carve(frames["train"], dev_fraction, seed, strat, task.carve_by)
        by = f" by {task.carve_by}" if task.carve_by else ""
        official["train"] += f" minus a seeded {dev_fraction:.0%}{by} (seed {seed})"
        official["dev"] = f"seeded {dev_fraction:.0%} of official train{by} (seed {seed})"
    if task.test_from_dev:
        official["test"] = f"official dev ({have['test'].path}): test labels are not public"
    return TaskData(
        task, train, dev, frames["test"], not task.test_from_dev, official,
        official_test=not task.test_from_dev, official_dev="dev" in frames,
        eval_sets=_read_sets(task, task.eval_sets, raw_dir),
        threshold_sets=_read_sets(task, task.threshold_sets, raw_dir),
    )  # fmt: skip


def _read_sets(task: Task, sets: dict[str, Split], raw_dir: Path) -> dict[str, pd.DataFrame]:
    """Task.eval_sets or threshold_sets, read; one absent makes the task unavailable (it
    is its point)."""
    out = {}
    for name, sp in sets.items():
        if not (raw_dir / sp.path).exists():
            raise TaskUnavailable(
                f"task {task.name}: evaluation set {name} ({raw_dir / sp.path}) not found; "
                f"canonical source: {task.source}"
            )
        out[name] = sp.read(raw_dir / sp.path)
    return out


def load_task_for(task: Task | str, cfg: dict, seed: int) -> TaskData:
    """load_task with the evaluate section's split settings (`cfg`)."""
    return load_task(
        task, cfg["raw_dir"], seed, cfg["dev_fraction"], cfg["test_fraction"],
        cfg["missing_splits"],
    )  # fmt: skip


def _resplit(
    task: Task,
    frames: dict[str, pd.DataFrame],
    have: dict[str, Split],
    seed: int,
    dev_fraction: float,
    test_fraction: float,
) -> TaskData:
    """The offline fallback where a declared file is absent, applied in order:
    - train and test (no dev file): dev is a seeded `dev_fraction` of train;
    - dev and test (no train: PAWS offline): train and dev re-split from the official dev;
    - train and dev (no test): official dev is the test, dev a seeded share of train;
    - one split only (PAWS-X dev, CoLA dev, JNLI valid): seeded train/dev/test re-split.
    """
    strat = task.kind == "classification"
    pct = f"{dev_fraction:.0%}"
    official_test = "test" in frames and not task.test_from_dev
    if "test" in frames and ("train" in frames or "dev" in frames):
        src = "train" if "train" in frames else "dev"
        train, dev = _carve(frames[src], dev_fraction, seed, strat, task.carve_by)
        test = frames["test"]
        prov = {
            "train": f"official {src} minus a seeded {pct} (seed {seed})"
            + ("; train is missing" if src == "dev" else ""),
            "dev": f"seeded {pct} of official {src} (seed {seed})",
            "test": f"official test ({have['test'].path})",
        }
    elif "train" in frames and "dev" in frames:
        train, dev = _carve(frames["train"], dev_fraction, seed, strat, task.carve_by)
        test = frames["dev"]
        prov = {
            "train": f"official train minus a seeded {pct} (seed {seed})",
            "dev": f"seeded {pct} of official train (seed {seed})",
            "test": f"official dev ({have['dev'].path}); test is missing",
        }
    else:
        (only,) = frames
        rest, test = _carve(frames[only], test_fraction, seed, strat, task.carve_by)
        train, dev = _carve(rest, dev_fraction / (1 - test_fraction), seed, strat, task.carve_by)
        where = f"of official {only} ({have[only].path}), the only split offline"
        prov = {
            "train": f"seeded {1 - dev_fraction - test_fraction:.0%} {where} (seed {seed})",
            "dev": f"seeded {pct} {where} (seed {seed})",
            "test": f"seeded {test_fraction:.0%} {where} (seed {seed})",
        }
    if task.test_from_dev and "test" in frames:
        prov["test"] = f"official dev ({have['test'].path}): test labels are not public"
    return TaskData(task, train, dev, test, False, prov, official_test=official_test)
