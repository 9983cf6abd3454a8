"""Load params.yaml and check it against one schema before a stage does any work.

Why: a typo (`thetta: 0.4`) or an out-of-range value (`theta: 1.7`) must stop the
stage at once with a message naming the key, not an hour later with a traceback.

The schema is one class per section, a dataclass: each field is a key, its type says
what the key holds, `param(min=, max=, help=)` adds a range (for a list or a dict: each
item's), and `param(names=f)` a name that selects code: a string (or each item) must be
one of `f()`, read from the code's own registry (the evaluation jobs, the losses), so a
misspelt task fails when params load, not after the pipeline has trained. To add a key,
add a field and its value in params.yaml.

Each value is written once, in params.yaml (DVC reads it there); the schema holds no
second copy, so every key params.yaml sets is required. A default only makes optional a
key that an entry of a name-keyed mapping may leave out (a method's `data`, `seeds`, ...).
A preset is merged over params.yaml, so it names only what it changes. The checker knows

    int, float (ints pass), str, bool, X | None (null allowed), Literal["a", "b"],
    list[X], a Section (a nested mapping), dict[Lang, X] (exactly one key per language
    profile, as dict[Literal[...], X]), dict[str, X] (any names of [A-Za-z0-9_]+).

A key a section does not declare is an error, unless the section sets `extra_keys`.
"""

# No `from __future__ import annotations`: the checker reads each field's type as an object.
import dataclasses
import importlib
import re
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

import yaml

from paracl.core.errors import ParamsError
from paracl.core.languages import codes


class Section:
    """Base of a section: makes the subclass a keyword-only dataclass (fields with and
    without defaults in any order, as in params.yaml)."""

    extra_keys: ClassVar[bool] = False  # True: undeclared keys pass through unchecked

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(kw_only=True)(cls)


def param(
    default: Any = MISSING,
    *,
    min: float | None = None,
    max: float | None = None,
    help: str = "",
    names: Callable[[], Iterable[str]] | None = None,
) -> Any:
    """A field with a range (for a list or a dict: each item's), the names it accepts
    (`names()`, read when checked) and a line of help. `default` only for a key that an
    entry of a name-keyed mapping may leave out: params.yaml holds every other value."""
    meta = {"min": min, "max": max, "help": help, "names": names}
    return dataclasses.field(default=default, metadata=meta)


def job_names() -> tuple[str, ...]:
    """The evaluation jobs: paracl.parts.evaluation.tasks.JOBS (pandas, no torch). Imported by
    name, not by an `import` statement: the registry decides whether params are valid,
    never what a stage writes, so it is no DVC dep of every stage that loads params."""
    return importlib.import_module("paracl.parts.evaluation.tasks").JOBS


def loss_names() -> list[str]:
    """`none` and the keys of paracl.parts.losses.LOSSES, read from that module's
    source: importing it loads torch, which a params check must not wait for (a test
    checks the two agree)."""
    import ast

    source = Path(__file__).parents[1] / "parts" / "losses" / "__init__.py"
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", 0)]
        if any(getattr(t, "id", "") == "LOSSES" for t in targets):
            return ["none", *(k.value for k in node.value.keys)]
    raise RuntimeError(f"{source}: no `LOSSES = {{...}}` registry")


Lang = Literal[tuple(codes())]  # the languages with a profile (paracl.core.languages)

# -- the schema of params.yaml: one section per stage, then the top level (`Params`) --


class Fetch(Section):
    sources: list[str]
    mirror: str | None
    # sources whose registry files have no published checksum, used anyway (paracl.stages.fetch)
    allow_unverified: list[str] | None


class PrepareCorpus(Section):
    class CorpusInput(Section):
        source: str = param(
            help="a file or folder of the raw corpus: a fetched one (data/raw/...) or your own "
            "text file, hashed by DVC as a dep"
        )
        format: Literal["text", "wiki40b", "jaquad"] = param(
            help="its reader: text = one sentence or paragraph a line (.txt); wiki40b = "
            "Wiki-40B's marker format (.txt or Parquet); jaquad = JaQuAD's JSON contexts"
        )

    input: dict[Lang, CorpusInput]
    min_words: int = param(min=1, help="keep sentences with more than this many words")
    max_words: int = param(min=2, help="keep sentences with fewer than this many words")
    langdetect_threshold: float = param(min=0.0, max=1.0)
    max_sentences: int | None = param(min=1)
    workers: int = param(min=1, max=256)
    shard_size: int = param(min=1)


class PpdbSubstitute(Section):
    class Dictionary(Section):
        # format: see paracl.parts.ppdb_rules (ppdb2/ehimer = the paper's files)
        format: Literal["ppdb2", "ehimer", "tsv", "ppdb-sample", "sudachi"] = param(
            help="the dictionary's line format and where p(d|s) comes from (ppdb2, ehimer: "
            "the papers' files; tsv: source, target, prob; ppdb-sample, sudachi: stand-ins)"
        )
        path: str = param(help="the dictionary file (a DVC dep)")

    dictionary: dict[Lang, Dictionary]
    max_phrase_words: dict[Lang, int] = param(min=1, max=20)
    max_substitutions: int = param(min=1, max=4, help="rules combined per candidate")
    max_candidates: int = param(min=1, help="candidates kept per sentence")
    shard_size: int = param(min=1, help="corpus sentences per shard")


class RankFluency(Section):
    model: dict[Lang, str]
    batch_size: int = param(min=1)
    # padded tokens per batch: bounds the logits' memory
    max_batch_tokens: dict[Lang, int] = param(min=8)
    max_sentences: int | None = param(min=1, help="sentences scored; null = all")
    shard_size: int = param(min=1, help="candidates per shard, whole sentences")


class AdaptFiller(Section):
    class T5(Section):  # span-corruption denoising, Adafactor (JCSE §3.2, §4.4)
        noise_density: float = param(min=0.01, max=0.99)
        mean_noise_span_length: float = param(min=1.0, max=20.0)
        lr: float = param(min=0.0, max=1.0)
        max_steps: int = param(min=1)
        batch_size: int = param(min=1)
        eval_every: int = param(min=1)

    class CausalLM(Section):  # continued next-token training, AdamW
        lr: float = param(min=0.0, max=1.0)
        max_steps: int = param(min=1)
        batch_size: int = param(min=1)
        eval_every: int = param(min=1)
        train_layers: int | None = param(min=1, help="top layers trained; null = all")
        freeze_embeddings: bool = param(help="the vocabulary's embeddings fixed")

    class Standin(Section):
        vocab_size: int = param(min=200, max=64000)
        d_model: int = param(min=16, max=1024)
        num_layers: int = param(min=1, max=24)

    # a causal LM (default), a T5 hub id (paper: t5-base / sonoisa/t5-base-japanese-v1.1)
    # or tiny-random:t5 (test stand-in); the config picks the path (t5 / causal_lm)
    model: dict[Lang, str]
    enabled: bool = param(help="false: the filler as it is (T5 saved, causal LM recorded)")
    max_length: int = param(min=4, max=1024, help="tokens per sentence")
    dev_sentences: int = param(min=1, help="held-out sentences for the dev loss")
    max_sentences: int | None = param(min=2, help="corpus sentences; null = all")
    threads: int | None = param(min=1, max=256, help="torch CPU threads")
    t5: T5
    causal_lm: CausalLM
    standin: Standin


class Corrupt(Section):
    max_sentences: int | None = param(min=1, help="anchors sampled; null = all")
    num_beams: int = param(min=1, max=512, help="T5 beams (the authors' code: 200)")
    num_return_sequences: int = param(min=1, max=64, help="negatives per anchor (<= beams)")
    mask_mode: Literal["sequential", "all_at_once"] = param(
        help="sequential: one chunk at a time (JCSE's code); all_at_once: its text"
    )
    keep_rank: int = param(min=1, max=64, help="sequential: candidate kept per chunk (1 = best)")
    fill_max_length: int = param(
        min=2, max=128, help="sequential T5: decoder tokens per chunk, start token included"
    )
    batch_size: int = param(min=1)
    max_fill_tokens: int = param(min=1, max=128, help="T5: generation budget per blank")
    on_missing: Literal["original", "drop"]
    num_samples: int = param(min=1, max=64, help="causal LM: hypotheses per anchor")
    top_k: int = param(min=1, help="causal LM: top-k sampling")
    temperature: float = param(min=0.01, max=10.0, help="causal LM: sampling temperature")
    fill_slack_tokens: int = param(min=0, max=64, help="causal LM: fill tokens past the chunk's")
    max_blanks: int = param(min=0, help="causal LM: chunks replaced per negative; 0 = all")
    quantize: bool = param(help="causal LM on CPU: dynamic int8 Linear layers")
    chunk_batch_size: int = param(min=1)
    threads: int | None = param(min=1, max=256, help="torch CPU threads")
    shard_size: int = param(min=1, help="anchors per resumable shard")
    unadapted: list[str] = param(help="negatives sets of the filler not adapted; [] = none")


class PrepareDomain(Section):
    # name -> input, as prepare_corpus.input (data/corpus/<name>.parquet, <name>_mix.parquet)
    corpora: dict[str, PrepareCorpus.CorpusInput] = param(help="target-domain corpora")
    max_sentences: int | None = param(min=1, help="sentences kept per corpus; null = all")


class EbsimRetrieve(Section):
    # name -> titled corpus (data/ebsim/<name>.parquet; stage ebsim_retrieve@<name>)
    corpora: dict[str, str] = param(help="titled corpora EBSIM's methods train on; {} = none")
    retriever: str | None = param(
        help="ranks sentences (mean pooling, never trained); null: the base model"
    )
    eta: float = param(min=-1.0, max=1.0, help="word similarity that masks a word (Eq. 3)")
    max_mask: float = param(min=0.0, max=1.0, help="at most this share of its words")
    max_docs: int | None = param(min=1, help="the first N titled documents; null = all")


class Evaluate(Section):
    # the encoders evaluated are the keys of train_contrastive.methods
    tasks: list[str] = param(
        help="embedding jobs of every run: unsup_sts_<lang>, pi_<lang>, jacsts, qabot",
        names=job_names,
    )
    finetune_tasks: list[str] = param(
        help="fine-tuning tasks of finetune_methods' runs (stage evaluate_finetune)",
        names=job_names,
    )  # fmt: skip
    finetune_methods: list[str] | None = param(
        help="methods whose runs get finetune_tasks; null = every method"
    )
    finetune_runs: list[str] = param(help="their runs, written by `paracl expand`")
    raw_dir: str
    seeds: list[int] = param(min=0, help="fine-tuning seeds")
    baseline_seeds: list[int] | None = param(
        min=0, help="fine-tuning seeds of a run that trains nothing (loss none); null = seeds"
    )
    epochs: int | None = param(min=1, help="null: each task's paper value")
    lr: float | None = param(min=0.0, max=1.0, help="null: paper value")
    batch_size: int | None = param(min=1, help="null: paper value")
    patience: int = param(min=1, help="early stop after N epochs without dev gain")
    max_train: int | None = param(min=1, help="seeded train sample; null = all")
    max_dev: int | None = param(min=1, help="seeded dev sample; null = all")
    max_test: int | None = param(min=1, help="fine-tuning: seeded test sample; null = all")
    train_layers: int | None = param(
        min=1, help="fine-tuning: the top N layers (+ head) train; null = every layer"
    )
    length_grouping: bool = param(
        help="fine-tuning: batches of similar token length; false = random (papers)"
    )
    mini_batch_size: int | None = param(
        min=1, help="fine-tuning: rows per forward, length-sorted; same gradient; null = all"
    )
    finetune_head: Literal["pooled", "last_token"] = param(
        help="a causal LM's task head: on the last token, or on its sentence embedding",
    )
    max_eval_pairs: int | None = param(min=1, help="unsup/PI cap; null = all")
    max_seq_length: int = param(min=8, max=4096)
    encode_batch_size: int = param(min=1)
    missing_splits: Literal["resplit", "fail"] = param(
        help="a paper split file absent: re-split what exists, or stop"
    )
    dev_fraction: float = param(min=0.01, max=0.5, help="dev carved from train (and re-splits)")
    test_fraction: float = param(min=0.01, max=0.5, help="re-split of a single split: test share")


class Summary(Section):
    decimals: int = param(min=0, max=4)
    avg_over: Literal["finetune", "all"] = param(help="tasks in the Avg. column")


class Roundtrip(Section):
    forward_model: str = param(help="hub id, local dir, or tiny-random:<arch> stand-in")
    backward_model: str
    src_lang_code: str | None = param(help="NLLB/M2M source code, e.g. eng_Latn")
    pivot_lang_code: str | None = param(help="NLLB/M2M pivot code, e.g. deu_Latn")
    pivot: dict[Lang, str] = param(help="prompted causal LM: pivot language per corpus language")
    mode: Literal["sample", "greedy"]
    top_k: list[int] = param(min=1)
    temperature: list[float] = param(min=0.01)
    num_beams: int = param(min=1)
    max_sentences: int | None = param(min=1)
    batch_size: int = param(min=1)
    shard_size: int = param(min=1)
    max_new_tokens: int = param(min=1)
    length_ratio: float = param(min=0.1)


class RoundtripBaselines(Section):
    decodings: list[Literal["greedy"]] = param(help="roundtrip's sample decoded again: greedy")


class TrainStsScorer(Section):
    kind: Literal["bi_encoder", "cross_encoder"] = param(help="scorer kind; paper: cross_encoder")
    base_model: str
    n_seeds: int = param(min=1, max=100)
    epochs: float = param(min=0.0, help="0: bi_encoder as it is (zero-shot)")
    batch_size: int = param(min=1)
    lr: float = param(min=0.0, max=1.0)
    max_length: int = param(min=8)
    max_train_pairs: int | None = param(min=1)


class Tag(Section):
    dev_per_share: int | None = param(min=0)
    test_per_share: int | None = param(min=0)
    train_per_share: int | None = param(min=0)
    batch_size: int = param(min=1)
    heatmap_min_words: int = param(min=0)
    heatmap_max_pairs: int = param(min=1)
    shard_size: int = param(min=1, help="candidates per shard, whole sentences")


class TrainParaphraser(Section):
    base_model: dict[Lang, str] = param(help="hub id per language (seq2seq or causal LM)")
    lr: float = param(min=0.0, max=1.0)
    batch_size: int = param(min=1)
    max_epochs: int = param(min=1)
    patience: int = param(min=1)
    max_length: int = param(min=8)
    min_train_pairs: int = param(min=1, help="fewer train pairs: saved untrained")
    max_train_pairs: int | None = param(min=1, help="seeded train sample; null = all")
    train_layers: int | None = param(min=1, help="top layers trained; null = all")
    freeze_embeddings: bool = param(help="decoder-only: vocabulary embeddings fixed")
    train_new_tokens: bool = param(help="with frozen embeddings: tag rows still train")
    threads: int | None = param(min=1, max=256, help="torch CPU threads")


class GenerateParaphrases(Section):
    tags: list[str]
    num_beams: int = param(min=1)
    min_ratio: float = param(min=0.0)
    max_ratio: float = param(min=0.0)
    heatmap_min_words: int = param(min=0, help="shorter outputs are left out of heatmaps")
    max_sentences: int | None = param(min=1)
    batch_size: int = param(min=1)
    max_length: int = param(min=8)
    shard_size: int = param(min=1, help="sentences per resumable shard")
    baseline: bool = param(help="also generate untagged (Figure 3's baseline)")
    threads: int | None = param(min=1, max=256, help="torch CPU threads per worker")


class ParaphrasePairs(Section):
    """The round-trip paper's augmentation of labelled pairs (§5.3, §5.5, §6): one stage
    per job (paraphrase_pairs@NAME writes data/paraphrased/NAME.parquet). The round trip
    reads roundtrip's translators, a tag cell generate_paraphrases' decoding keys."""

    class Job(Section):
        input: str = param(help="a Parquet of sentence pairs or triplets (its DVC dep)")
        columns: list[str] = param(help="the text columns paraphrased, e.g. [anchor, positive]")
        by: str = param(help="roundtrip_greedy, or a tag cell SIMxx_BLEUyy (e.g. SIM95_BLEU0_5)")

    jobs: dict[str, Job] = param(help="job name -> its entry; {} = none")


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


class TrainContrastive(Section):
    class Method(Section):
        """One entry of train_contrastive.methods. Its other keys are shared training keys it
        sets for itself (METHOD_SETTINGS, checked as the shared key is) and the loss's own
        params, checked by paracl.parts.training.methods, which knows each loss."""

        extra_keys: ClassVar[bool] = True
        input: str = param(help="the artifact it trains on (its DVC dep)")
        loss: str = param(help="none, or a loss of paracl.parts.losses", names=loss_names)
        data: str | None = param(None, help="with data: input is the encoder it continues from")
        seeds: list[int] | None = param(None, min=0, help="one run each; null: shared seeds")
        tags: str | None = param(None, help="generated paraphrases of this tag pair only")
        task: str | None = param(
            None, help="train on this evaluation task's train split (input: its file)"
        )

    class Run(Section):
        """One entry of train_contrastive.runs, which `paracl expand` writes (expand_runs)."""

        method: str = param(help="its entry of train_contrastive.methods")
        seed: int | None = param(min=0, help="null: the top-level seed")
        input: str = param(help="its DVC dep (a continued run: the same seed's encoder)")

    methods: dict[str, Method] = param(help="method name -> its entry; evaluate scores each")
    seeds: list[int] | None = param(min=0, help="seeds of a method without its own")
    runs: dict[str, Run] = param(help="methods x seeds, written by `paracl expand`")
    base_model: str
    pooling: Literal["mean", "weighted_mean", "last", "cls", "cls_mlp", "cls_mlp_always"]
    dropout: float | None = param(
        min=0.0,
        max=0.9,
        help="every dropout rate of the base's config; null = the base's own",
    )
    max_seq_length: int = param(min=4, max=4096)
    batch_size: int = param(min=2, help="pairs per batch = the in-batch negatives pool")
    length_grouping: bool = param(help="batches of similar length (less padding)")
    mini_batch_size: int | None = param(min=1, help="GradCache chunk; null = all")
    processes: int = param(min=1, help="training processes (torchrun)")
    checkpoint_every: int | None = param(min=1, help="steps between resumable checkpoints")
    lr: float = param(min=0.0, max=1.0)
    temperature: float = param(min=1e-4, max=10.0)
    epochs: int = param(min=1)
    patience: int = param(min=1, help="early stop after this many epochs w/o dev gain")
    selection: Literal["sts_dev", "dev_loss", "none"] = param(
        help="the weights kept: best STS dev, best dev loss, or the last"
    )
    sts_dev_every: int | None = param(
        min=1, help="sts_dev: score every N steps (SimCSE: 125); null: each epoch"
    )
    dev_loss_examples: int = param(
        min=2, help="dev_loss: training examples held out and scored (at most a tenth)"
    )
    max_grad_norm: float | None = param(
        min=0.0, help="clip the gradient norm (SimCSE's HF Trainer: 1.0); null: no clip"
    )
    max_examples: int | None = param(min=2)
    freeze_embeddings: bool
    train_layers: int | None = param(
        min=1, help="top layers trained (+ final norm), the rest frozen; null = all"
    )
    dev_max_pairs: int | None = param(min=2, help="seeded STS-dev sample")
    prompt: str | None = param(
        help="text put before every sentence (training, dev, saved encoder); null: none"
    )


class RunSettings(Section):
    """The run-wide keys a stage reads beside its own section: a stage function takes its
    section and these, typed, never the whole params (so it names what it reads). Declared
    once: Params inherits them, so they stay top-level keys of params.yaml."""

    seed: int = param(min=0, help="seed for every random choice in every stage")
    lang: Lang
    device: Literal["auto", "cpu", "cuda", "mps"]
    precision: Literal["auto", "bf16", "fp16", "fp32"] = param(
        help="autocast dtype of training, generation and encoding (paracl.core.device); auto: "
        "bf16/fp16 on CUDA, bf16 on a CPU with AMX or AVX512_BF16, fp32 elsewhere",
    )

    @classmethod
    def of(cls, params: dict) -> "RunSettings":
        """The run-wide keys of a validated params dict (load_params' result)."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})


class Params(RunSettings):
    """The whole of params.yaml: the run-wide keys (RunSettings), then the rest."""

    theta: float = param(min=0.0, max=1.0, help="keep paraphrase rules with p(d|s) >= theta")
    executor: Literal["local", "ray"] = param(help="per-shard engine")
    ray_address: str | None = param(help="null: start a local Ray")
    workers: int = param(min=1, help="CPU stages: processes / Ray tasks in flight")
    model_workers: int = param(min=1, help="model stages on Ray: actors")
    gpus_per_model_worker: float = param(min=0.0, help="GPUs per Ray model actor")
    fetch: Fetch
    prepare_corpus: PrepareCorpus
    ppdb_substitute: PpdbSubstitute
    rank_fluency: RankFluency
    target_corpus: str = param(help="the corpus the filler adapts to and corrupt draws from")
    prepare_domain: PrepareDomain
    adapt_filler: AdaptFiller
    corrupt: Corrupt
    ebsim_retrieve: EbsimRetrieve
    evaluate: Evaluate
    summary: Summary
    roundtrip: Roundtrip
    roundtrip_baselines: RoundtripBaselines
    train_sts_scorer: TrainStsScorer
    tag: Tag
    train_paraphraser: TrainParaphraser
    generate_paraphrases: GenerateParaphrases
    train_contrastive: TrainContrastive
    paraphrase_pairs: ParaphrasePairs
    nli_triplets: NliTriplets
    # -- stage sections above this line --


# -- the checker, driven by the declarations above -----------------------------------

Keys = dict[str, tuple[Any, Mapping[str, Any], Any]]  # name -> (type, metadata, default)
NO_META: Mapping[str, Any] = types.MappingProxyType({})
NAME = re.compile(r"[A-Za-z0-9_]+")  # of a key in a dict[str, X]


def _keys(tp: Any, meta: Mapping[str, Any] = NO_META, values: Iterable = (), key: str = "") -> Keys:
    """The keys a section or a dict[...] declares. dict[str, X] declares those it is given."""
    if is_dataclass(tp):
        return {f.name: (f.type, f.metadata, f.default) for f in fields(tp)}
    names, item = get_args(tp)
    if get_origin(names) is Literal:  # a fixed set, e.g. one entry per language
        return {name: (item, meta, MISSING) for name in get_args(names)}
    for name in values:  # any names, e.g. the methods of train_contrastive
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ParamsError(f"'{key}': bad name {name!r} (use letters, digits and _)")
    return {name: (item, meta, MISSING) for name in values}


# The top-level keys, to check a few sections alone: validate(v, {k: SCHEMA[k] for k in ...}).
SCHEMA: Keys = _keys(Params)


def _describe(tp: Any, meta: Mapping[str, Any], nullable: bool) -> str:
    """The allowed values, in words, for error messages."""
    if get_origin(tp) is Literal:
        words = "one of " + ", ".join(repr(c) for c in get_args(tp))
    else:
        words = "int or float" if tp is float else (get_origin(tp) or tp).__name__
    lo, hi = meta.get("min"), meta.get("max")
    if get_origin(tp) is list:  # a list's range is its items'
        lo = hi = None
    if lo is not None and hi is not None:
        words += f" in [{lo}, {hi}]"
    elif lo is not None:
        words += f" >= {lo}"
    elif hi is not None:
        words += f" <= {hi}"
    return words + (" (or null)" if nullable else "")


def _check(value: Any, tp: Any, meta: Mapping[str, Any], key: str) -> Any:
    """Check one value against its declared type; return it with defaults filled in."""
    nullable = get_origin(tp) in (Union, types.UnionType)  # `X | None`, the only union
    if nullable:
        if value is None:
            return None
        (tp,) = [t for t in get_args(tp) if t is not type(None)]
    origin = get_origin(tp) or tp
    if is_dataclass(tp) or origin is dict:
        if not isinstance(value, dict):
            raise ParamsError(f"'{key}' must be a section (a mapping), got {value!r}")
        return _check_keys(value, _keys(tp, meta, value, key), key + ".", tp)
    if origin is list and isinstance(value, list):
        return [_check(v, get_args(tp)[0], meta, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is Literal:
        ok = value in get_args(tp)
    else:  # bool is a subclass of int: `seed: true` must not pass as an int
        accepted = (int, float) if origin is float else origin  # YAML writes 1 for 1.0
        ok = isinstance(value, accepted) and (origin is bool or not isinstance(value, bool))
    lo, hi = meta.get("min"), meta.get("max")
    if not ok or lo is not None and value < lo or hi is not None and value > hi:
        got = "null" if value is None else repr(value)
        raise ParamsError(f"'{key}' must be {_describe(tp, meta, nullable)}, got {got}")
    names = meta.get("names")
    if names is not None and value not in (known := list(names())):
        raise ParamsError(f"'{key}': unknown name {value!r} (known: {', '.join(known)})")
    return value


def _check_keys(values: dict, keys: Keys, prefix: str, section: Any = None) -> dict:
    """Check a section's values key by key; fill in defaults; keep extra keys if allowed."""
    unknown = sorted(set(values) - set(keys), key=str)
    if unknown and not getattr(section, "extra_keys", False):
        known = ", ".join(sorted(keys))
        raise ParamsError(f"unknown key '{prefix}{unknown[0]}' (known here: {known})")
    checked = {}
    for name, (tp, meta, default) in keys.items():
        if name in values:
            checked[name] = _check(values[name], tp, meta, prefix + name)
        elif default is not MISSING:
            checked[name] = default
        else:
            raise ParamsError(f"missing key '{prefix}{name}'")
    return checked | {name: v for name, v in values.items() if name not in keys}


def validate(values: dict, schema: type[Section] | Keys = Params) -> dict:
    """Validate a params mapping against a Section (or some of SCHEMA's keys); raise
    ParamsError naming the first bad key."""
    if not isinstance(values, dict):
        raise ParamsError("params must be a mapping of sections")
    return _check_keys(values, _keys(schema) if is_dataclass(schema) else schema, "", schema)


# -- train_contrastive: a method's own settings, and its runs (methods x seeds) -------

# Shared training keys a method entry may set for itself, checked as the shared key is.
METHOD_SETTINGS = (
    "lr",
    "batch_size",
    "epochs",
    "patience",
    "selection",  # each paper's model selection (paracl.parts.training.selection)
    "sts_dev_every",
    "dev_loss_examples",
    "max_grad_norm",
    "max_seq_length",
    "freeze_embeddings",
    "train_layers",
    "pooling",
    "max_examples",  # a learning curve: one method at several lengths (issue 33 item 5)
    "precision",  # the top-level key: each paper's code trains in its own (paper presets)
    "base_model",  # a paper's rows on its own base beside the others (cross-lingual PI: LaBSE)
)
ENCODERS = "models/encoders/"  # dvc.yaml: train_contrastive@<run> writes ENCODERS + <run>
EXPAND = "paracl expand"  # the command that rewrites train_contrastive.runs
EBSIM_RANKINGS = "data/ebsim/"  # dvc.yaml: ebsim_retrieve@<corpus> writes <corpus>.parquet here


def method_settings(name: str, entry: dict) -> dict:
    """The shared keys `train_contrastive.methods.<name>` sets for itself, checked with the
    shared key's own type and range (one declaration: TrainContrastive's field, or the
    top-level one for `precision`)."""
    shared = {f.name: f for f in fields(Params) if f.name == "precision"}
    shared |= {f.name: f for f in fields(TrainContrastive)}
    where = f"train_contrastive.methods.{name}."
    return {
        key: _check(entry[key], shared[key].type, shared[key].metadata, where + key)
        for key in METHOD_SETTINGS
        if key in entry
    }


def _method_seeds(name: str, entry: dict, shared: list[int] | None) -> list[int | None]:
    """A method's training seeds: its own `seeds`, else train_contrastive.seeds, else
    [None] (one run with the top-level seed). `none` trains nothing: one run."""
    where = f"train_contrastive.methods.{name}"
    if "seed" in entry:
        raise ParamsError(f"'{where}.seed' was replaced by seeds: [{entry['seed']}]")
    own = entry.get("seeds")
    if entry.get("loss") == "none":
        if own is not None:
            raise ParamsError(f"'{where}.seeds': loss none trains nothing (every seed is alike)")
        return [None]
    seeds = own if own is not None else shared
    if seeds is not None and (not seeds or len(set(seeds)) != len(seeds)):
        key = f"{where}.seeds" if own is not None else "train_contrastive.seeds"
        raise ParamsError(f"'{key}' must list distinct seeds, got {seeds}")
    return [None] if seeds is None else list(seeds)


def _run_name(method: str, seed: int | None, seeds: list) -> str:
    """A method with one seed keeps its name (models/encoders/ppdb); several: ppdb_s1, …"""
    return method if len(seeds) == 1 else f"{method}_s{seed}"


def expand_runs(tc: dict) -> dict[str, dict]:
    """train_contrastive.runs as `paracl expand` writes it: one run per method and seed,
    {run name: {method, seed, input}}. `input` is the run's DVC dep: the method's input,
    or, for a method that continues from another's encoder (`data` set, input
    models/encoders/<method>), that method's run of the same seed.

    Why written into params.yaml: dvc.yaml's foreach cannot compute a product, a name or
    the encoder of the same seed, so DVC reads the runs and every stage checks them."""
    methods = tc["methods"]
    seeds = {name: _method_seeds(name, entry, tc.get("seeds")) for name, entry in methods.items()}
    runs: dict[str, dict] = {}
    for name, entry in methods.items():
        parent = str(entry["input"]).rstrip("/").removeprefix(ENCODERS)
        continued = entry.get("data") is not None and parent in seeds
        for seed in seeds[name]:
            run = _run_name(name, seed, seeds[name])
            if run in runs:
                raise ParamsError(
                    f"train_contrastive.methods: {name}'s run {run!r} is another method's "
                    "run name too: rename one"
                )
            path = entry["input"]
            if continued:
                if seed not in seeds[parent]:
                    which = "the top-level seed" if seed is None else f"seed {seed}"
                    raise ParamsError(
                        f"'train_contrastive.methods.{name}': its run with {which} continues "
                        f"from {parent}'s, which {parent} does not train (seeds: "
                        f"{'the top-level seed' if seeds[parent] == [None] else seeds[parent]})"
                    )
                path = ENCODERS + _run_name(parent, seed, seeds[parent])
            runs[run] = {"method": name, "seed": seed, "input": path}
    return runs


def check_train_contrastive(values: dict) -> None:
    """Every method's own settings, and train_contrastive.runs as expand_runs writes it:
    a stale one would make DVC run other runs than the methods say, so it is refused."""
    tc = values["train_contrastive"]
    for name, entry in tc["methods"].items():
        method_settings(name, entry)
        if entry.get("loss") == "ebsim":
            _check_ebsim_input(name, entry["input"], values["ebsim_retrieve"]["corpora"])
    want, have = expand_runs(tc), tc["runs"]
    if list(want.items()) != list(have.items()):
        differs = [n for n in want if have.get(n) != want[n]]
        extra = [n for n in have if n not in want]
        what = (
            f"{differs[0]} {'differs' if differs[0] in have else 'is missing'}"
            if differs
            else (f"{extra[0]} is no method's run" if extra else "its order differs")
        )
        raise ParamsError(
            f"'train_contrastive.runs' is out of date with train_contrastive.methods and seeds "
            f"({what}): run `{EXPAND}` to rewrite it"
        )


def _check_ebsim_input(name: str, path: str, corpora: dict[str, str]) -> None:
    """An ebsim method trains on a ranking that stage ebsim_retrieve writes
    (data/ebsim/<corpus>.parquet); without its corpus there, no stage would write it."""
    writes = [f"{EBSIM_RANKINGS}{key}.parquet" for key in corpora]
    if path not in writes:
        what = ", ".join(writes) or "none: ebsim_retrieve.corpora is empty"
        raise ParamsError(
            f"'train_contrastive.methods.{name}.input': {path} is no ranking that stage "
            f"ebsim_retrieve writes (it writes: {what}); name the titled corpus in "
            "ebsim_retrieve.corpora"
        )


def finetune_runs(values: dict) -> list[str]:
    """evaluate.finetune_runs as `paracl expand` writes it: the runs of the methods in
    evaluate.finetune_methods (every seed; null: every method), which alone get
    evaluate.finetune_tasks.

    Why a list in params.yaml: DVC's matrix crosses whole lists; it cannot pick the runs
    of some methods, so the evaluate_finetune stage reads this one."""
    ev, tc = values["evaluate"], values["train_contrastive"]
    _check_job_kinds(ev)
    methods = ev["finetune_methods"]
    methods = list(tc["methods"]) if methods is None else methods
    unknown = [m for m in methods if m not in tc["methods"]]
    if unknown:
        raise ParamsError(
            f"'evaluate.finetune_methods': {unknown[0]!r} is not a method of "
            f"train_contrastive.methods (known: {', '.join(tc['methods'])})"
        )
    return [run for run, r in expand_runs(tc).items() if r["method"] in methods]


def _check_job_kinds(ev: dict) -> None:
    """evaluate.tasks holds embedding jobs, evaluate.finetune_tasks fine-tuning tasks: two
    stages, so that a fine-tuning setting reruns no embedding score."""
    tasks = importlib.import_module("paracl.parts.evaluation.tasks")
    for i, name in enumerate(ev["tasks"]):
        if name in tasks.FINETUNE_JOBS:
            raise ParamsError(
                f"'evaluate.tasks[{i}]': {name!r} is a fine-tuning task: list it in "
                "evaluate.finetune_tasks (finetune_methods: null runs it for every method)"
            )
    for i, name in enumerate(ev["finetune_tasks"]):
        if name in tasks.EMBEDDING_JOBS:
            raise ParamsError(
                f"'evaluate.finetune_tasks[{i}]': {name!r} is an embedding job, not a "
                "fine-tuning task: list it in evaluate.tasks"
            )


def check_finetune_runs(values: dict) -> None:
    """A stale evaluate.finetune_runs would fine-tune other runs than the methods say."""
    if values["evaluate"]["finetune_runs"] != finetune_runs(values):
        raise ParamsError(
            "'evaluate.finetune_runs' is out of date with evaluate.finetune_methods and "
            f"train_contrastive.runs: run `{EXPAND}` to rewrite it"
        )


def with_runs(values: dict) -> dict:
    """`values` with train_contrastive.runs and evaluate.finetune_runs rewritten from the
    methods and seeds, as `paracl expand` rewrites params.yaml (for params built in code)."""
    tc = values["train_contrastive"]
    out = {**values, "train_contrastive": {**tc, "runs": expand_runs(tc)}}
    if "evaluate" in values:
        out["evaluate"] = {**values["evaluate"], "finetune_runs": finetune_runs(out)}
    return out


def _yaml_problem(path: Path, err: yaml.YAMLError) -> str:
    """One line for a YAML error: file:line (1-based), then what is wrong there. PyYAML's
    own message spans several lines and names the file "<unicode string>"."""
    mark = getattr(err, "problem_mark", None)
    if mark is not None:
        where = f"{path}:{mark.line + 1}:{mark.column + 1}"
        what = " ".join(filter(None, (getattr(err, "context", None), err.problem)))
        return f"{where}: not valid YAML: {what}"
    if isinstance(err, yaml.reader.ReaderError):  # a control character: binary data
        char = err.character if isinstance(err.character, int) else ord(err.character)
        return f"{path}: not valid YAML: {err.reason}: #x{char:04x} at offset {err.position}"
    return f"{path}: not valid YAML: {' '.join(str(err).split())}"


def load_params(path: str | Path = "params.yaml") -> dict:
    """Read and validate params.yaml. Errors name the file and the key (or the line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text (byte {err.start}): not a YAML file") from None
    except OSError as err:  # a directory, no permission, ...
        raise ParamsError(f"{path}: cannot be read: {err.strerror or err}") from None
    if not text.strip():
        raise ParamsError(f"{path}: the file is empty")
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ParamsError(_yaml_problem(path, err)) from None
    try:
        checked = validate(values)
        check_train_contrastive(checked)
        check_finetune_runs(checked)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None
    return checked
