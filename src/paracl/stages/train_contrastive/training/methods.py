"""A training method is one entry of params.yaml's `train_contrastive.methods`: the input
it trains on, its loss (a module of paracl.parts.losses) and that loss's own params,
the shared training keys it sets for itself (lr, batch_size, ...: `run_config`) and its
seeds. Each seed is one run (train_contrastive.runs, params.expand_runs), one DVC stage.

`method_spec` checks an entry; `train_method` is everything the stage does with a run:
read the input, build the encoder, train, save the inference model with its card
(training/encoder.py, training/card.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paracl.core.configs import from_section
from paracl.core.device import precision_record, seed_everything
from paracl.core.errors import InputError, ParamsError
from paracl.core.freeze import freeze
from paracl.core.models import ResolvedModel, resolve_model
from paracl.parts.losses import LOSSES
from paracl.parts.tags.tagging import parse_tags
from paracl.stages.train_contrastive.training import parallel
from paracl.stages.train_contrastive.training.checkpoint import Checkpoint
from paracl.stages.train_contrastive.training.data import (
    check_task_input,
    load_examples,
    training_record,
)

if TYPE_CHECKING:  # the encoder and trainer modules (sentence_transformers, transformers)
    # load in the functions that train: the params check (method_spec) runs without them
    from paracl.stages.train_contrastive.training.trainer import TrainConfig, TrainResult

TRAIN_LAYERS = "train_contrastive.train_layers"  # the param a refusal of freeze names

SIMCSE = "Gao et al., SimCSE: Simple Contrastive Learning of Sentence Embeddings (EMNLP 2021)"
PPDB = "Sugiyama et al., Paraphrase-based Contrastive Learning for Sentence Pair Modeling"
ROUNDTRIP = "Ogasa, Kajiwara, Arase, 意味と表層の類似度を制御した言い換えによるデータ拡張"
JCSE = "Chen et al., JCSE: Contrastive Learning of Japanese Sentence Embeddings"
XPI = "Fedorova & Musatow, Cross-lingual paraphrase identification"
EBSIM = (
    "Enhancing Transformer-based Semantic Matching for Few-shot Learning through Weakly "
    "Contrastive Pre-training"
)

# What the model card and metrics say about the papers' methods (documentation only: a
# method's behaviour is its entry). Other names are described by their loss.
PAPERS: dict[str, tuple[str, str]] = {
    "none": ("base model, no additional training", ""),
    "simcse_unsup": ("SimCSE unsupervised: dropout positives", SIMCSE),
    "simcse_sup": ("SimCSE supervised: NLI entailment/contradiction", SIMCSE),
    "ppdb": ("PPDB paper Eq. 1: PPDB paraphrase positives", PPDB),
    "roundtrip": ("round-trip paper: SimCSE + sampled, tagged round trips (train)", ROUNDTRIP),
    "roundtrip_greedy": ("round-trip paper §4.4: SimCSE + greedy round trip", ROUNDTRIP),
    "paraphraser": ("round-trip paper: SimCSE + paraphraser, requested tags pooled", ROUNDTRIP),
    "paraphraser_bleu0_5": ("round-trip paper Table 3: SimCSE + <SIM95><BLEU0_5>", ROUNDTRIP),
    "paraphraser_bleu20": ("round-trip paper Table 3: SimCSE + <SIM95><BLEU20>", ROUNDTRIP),
    "paraphraser_bleu40": ("round-trip paper Table 3: SimCSE + <SIM95><BLEU40>", ROUNDTRIP),
    "jcse": ("JCSE stage one: generated negatives, hard_negative_weight 0 (Eq. 4)", JCSE),
    "jcse_two_stage": ("JCSE stage two: NLI, hard_negative_weight 1, from jcse", JCSE),
    "ams": ("additive margin scale loss + mega-batch mining (Alg. 2)", XPI),
    "ebsim": ("EBSIM RA + AA triplet losses", EBSIM),
    "ebsim_no_aa": ("EBSIM ablation -AA", EBSIM),
}
# Shared training keys a method entry may set for itself (paracl.stages.train_contrastive
# checks each as the shared key is).
METHOD_SETTINGS = (
    "lr",
    "batch_size",
    "epochs",
    "patience",
    "selection",  # each paper's model selection (paracl.stages.train_contrastive.training.selection)
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
# every entry's keys and the shared keys it may set for itself; the rest: the loss's
COMMON_KEYS = ("loss", "input", "data", "seeds", "tags", "task", "paraphrased", "with_original",
               *METHOD_SETTINGS)  # fmt: skip
VIEW_COLUMNS = ("anchor", "positive", "negative")  # what `paraphrased` may list


@dataclass(frozen=True)
class MethodSpec:
    """One checked entry of train_contrastive.methods."""

    name: str
    loss: str  # "none" (save the base as it is) or a key of LOSSES
    input: str  # what it trains on; with `data`, the encoder it continues from
    data: str | None  # continued training (jcse_two_stage): the training data
    seed: int | None  # this run's seed (train_contrastive.runs); None: the top-level seed
    tags: str | None  # the generated paraphrases of this tag pair only (paraphraser_bleu20)
    params: Any  # the loss module's Params (None for "none")
    paper: str
    citation: str
    settings: dict = dataclasses.field(default_factory=dict)  # shared keys it sets itself
    task: str | None = None  # train on this registry task's train split (training/data.py)
    # a paraphrase_pairs input: the columns kept paraphrased (None: all), original rows added
    paraphrased: tuple[str, ...] | None = None
    with_original: bool = False

    @property
    def start(self) -> str | None:
        """The encoder training starts from, when it is not the base model."""
        return self.input if self.data is not None else None

    @property
    def train_path(self) -> str:
        return self.data if self.data is not None else self.input

    def own_params(self) -> dict:
        """The loss's params as the card and the checkpoint key record them."""
        return dataclasses.asdict(self.params) if self.params is not None else {}


def method_spec(name: str, entry: dict, run: dict | None = None) -> MethodSpec:
    """Check `train_contrastive.methods.<name>` (its common keys are checked by params.py);
    with `run` (an entry of train_contrastive.runs), the spec of that run: its seed, and
    its input (a continued run starts from the encoder of its own seed)."""
    where = f"train_contrastive.methods.{name}"
    loss = entry["loss"]
    own = {k: v for k, v in entry.items() if k not in COMMON_KEYS}
    if loss == "none":
        params = None
        if own:
            raise ParamsError(f"'{where}.{next(iter(own))}': loss none takes no params")
    elif loss in LOSSES:
        cls = LOSSES[loss].Params
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in own if k not in known]
        renamed = getattr(LOSSES[loss], "RENAMED", {})  # keys a loss once took
        if unknown and unknown[0] in renamed:
            raise ParamsError(f"'{where}.{unknown[0]}' was replaced by {renamed[unknown[0]]}")
        if unknown:
            raise ParamsError(
                f"unknown key '{where}.{unknown[0]}' (loss {loss} takes: {', '.join(known)})"
            )
        try:
            params = cls(**own)
        except (TypeError, ValueError) as err:
            raise ParamsError(f"'{where}': {err}") from None
    else:
        raise ParamsError(
            f"'{where}.loss': unknown loss {loss!r} (known: none, {', '.join(LOSSES)})"
        )
    tags = entry.get("tags")
    if tags is not None:
        if loss == "none" or hasattr(LOSSES[loss], "examples"):
            raise ParamsError(f"'{where}.tags': loss {loss} does not read paraphrase pairs")
        parse_tags(tags, f"'{where}.tags'")
    task = entry.get("task")
    if task is not None:
        if loss == "none" or hasattr(LOSSES[loss], "examples") or tags is not None:
            raise ParamsError(f"'{where}.task': loss {loss} does not read a task's pairs")
        check_task_input(task, entry["input"], f"'{where}.task'")
    paraphrased, with_original = _view_keys(entry, where, loss)
    description, citation = PAPERS.get(name, (f"{loss} loss", ""))
    return MethodSpec(
        name,
        loss,
        run["input"] if run else entry["input"],
        entry.get("data"),
        run["seed"] if run else None,
        tags,
        params,
        description,
        citation,
        {key: entry[key] for key in METHOD_SETTINGS if key in entry},
        task,
        paraphrased,
        with_original,
    )


def _view_keys(entry: dict, where: str, loss: str) -> tuple[tuple[str, ...] | None, bool]:
    """`paraphrased` (a list of distinct triplet columns) and `with_original` (a bool),
    checked: a one-line error naming the key."""
    paraphrased, with_original = entry.get("paraphrased"), entry.get("with_original", False)
    if (paraphrased is not None or with_original) and (
        loss == "none" or hasattr(LOSSES[loss], "examples")
    ):
        raise ParamsError(f"'{where}.paraphrased': loss {loss} does not read paraphrase pairs")
    if paraphrased is not None:
        ok = (
            isinstance(paraphrased, list)
            and paraphrased
            and all(c in VIEW_COLUMNS for c in paraphrased)
            and len(set(paraphrased)) == len(paraphrased)
        )
        if not ok:
            raise ParamsError(f"'{where}.paraphrased' must list distinct columns of "
                              f"{list(VIEW_COLUMNS)}, got {paraphrased!r}")  # fmt: skip
        paraphrased = tuple(paraphrased)
    if not isinstance(with_original, bool):
        raise ParamsError(f"'{where}.with_original' must be true or false, got {with_original!r}")
    return paraphrased, with_original


def run_config(spec: MethodSpec, cfg: dict) -> dict:
    """The train_contrastive section as this method's run sees it: the method's own
    settings over the shared keys, without the list of runs and seeds (which cannot change
    its weights, so they stay out of its checkpoint key and model card)."""
    return {k: v for k, v in cfg.items() if k not in ("seeds", "runs")} | spec.settings


def train_method(
    spec: MethodSpec,
    cfg: dict,
    seed: int,
    device,
    out_dir: Path,
    dev_path: str,
    logger=None,
    checkpoint: Checkpoint | None = None,
) -> dict:
    """Train (or, for loss `none`, just save) one encoder; returns the metrics to record.
    `checkpoint`: where training saves and resumes its state (training/checkpoint.py).
    Its parts: build the encoder, read the dev set and the training data, train, save."""
    from paracl.stages.train_contrastive.training.dev import read_sts
    from paracl.stages.train_contrastive.training.trainer import TrainConfig

    resolved, model, as_is = _build(spec, cfg, seed, device)
    dev = read_sts(dev_path, cfg["dev_max_pairs"], seed)
    # the base's inference length (model.max_seq_length now) is what is saved
    target = _Target(spec, model, resolved, model.max_seq_length, dev, dev_path, out_dir)
    metrics = {
        "method": spec.name,
        "paper": spec.paper,
        "model": resolved.describe(),
        "input": spec.input,
        "seed": seed,
    }
    if spec.loss == "none":
        metrics["loss"] = "none"  # evaluate.baseline_seeds: fine-tuned with the base's seeds
        if parallel.is_main():  # nothing to train: rank 0 alone scores and saves
            _save_base(target, as_is, metrics, logger)
        return metrics

    model.max_seq_length = cfg["max_seq_length"]  # training truncation (SimCSE: 32)
    # the cross-lingual paper freezes the embedding layer to keep zero-shot transfer;
    # train_layers (top layers only) makes a causal-LM step cheaper (paracl.core.freeze)
    metrics["trained_layers"] = freeze(
        model[0].auto_model, cfg["train_layers"], cfg["freeze_embeddings"], TRAIN_LAYERS
    )
    module = LOSSES[spec.loss]
    record = training_record(spec.train_path)
    if record is not None:  # the STS sets its data was checked against (evaluate reads it)
        metrics["training_data"] = record
    examples, dev_examples = _read_examples(spec, module, model, cfg, seed, metrics)
    objective = module.objective(model, spec.params, cfg)
    _check_negatives(spec, objective, examples, metrics)
    # cfg: the run's train_contrastive keys, with the top-level precision (run.train_config)
    config = from_section(TrainConfig, cfg, seed=seed, mega_batch=objective.mega_batch)
    result = _train(target, examples, objective, config, logger, checkpoint, dev_examples)
    metrics.update(_trained_metrics(objective.name, len(examples), result, config, device))
    if parallel.is_main():
        _save_trained(target, cfg, seed, metrics, len(examples), objective.name, result)
    return metrics


def _check_negatives(spec: MethodSpec, objective, examples, metrics: dict) -> None:
    """An objective that embeds each row's negative needs one in every row, unless it
    takes them where they exist (supervised SimCSE on SICK: in-batch negatives elsewhere);
    none at all is refused either way (a hard-negative method on data without any)."""
    if "negative" not in getattr(objective, "column_names", ()):
        return
    present = int(examples["negative"].notna().sum())
    partial = getattr(objective, "partial_negatives", False)
    if present == 0 or (present < len(examples) and not partial):
        raise InputError(f"{spec.train_path}: method {spec.name} needs a 'negative' for every row")
    metrics["with_negative"] = present


def _build(spec: MethodSpec, cfg: dict, seed: int, device) -> tuple[ResolvedModel, Any, bool]:
    """The encoder training starts from (the base model, or the encoder a continued run
    starts from), seeded; True with it: `none` on a sentence-transformers base, saved as
    published (its own pooling)."""
    from paracl.parts.encoder.build import build_encoder, is_sentence_transformer_dir

    base_id = cfg["base_model"]
    if spec.start is not None:
        base_id = spec.start
        if not Path(base_id).is_dir():
            raise InputError(
                f"{base_id}: the encoder that {spec.name} continues from is missing; "
                "train that method first"
            )
    resolved = resolve_model(base_id)
    seed_everything(seed)  # EBSIM's heads and any fresh layer are initialised from here on
    # `none` with a sentence-transformers base: that base as published (its own pooling)
    as_is = spec.loss == "none" and is_sentence_transformer_dir(resolved.path)
    model = build_encoder(
        resolved.path,
        None if as_is else cfg["pooling"],
        None,
        None if as_is else cfg["dropout"],
        None if as_is else cfg.get("prompt"),
    ).to(device)
    return resolved, model, as_is


@dataclass
class _Target:
    """The encoder as it will be saved: scored on the STS dev set at its inference length
    (`saved_length`), with a card that describes it."""

    spec: MethodSpec
    model: Any  # the SentenceTransformer being trained
    resolved: ResolvedModel
    saved_length: int
    dev: tuple  # read_sts's (sentences1, sentences2, gold)
    dev_path: str
    out_dir: Path

    def dev_score(self, m) -> float:
        """Dev score of the model as it will be saved (the inference length)."""
        from paracl.parts.encoder.build import truncation
        from paracl.stages.train_contrastive.training.dev import sts_spearman

        with truncation(m, self.saved_length):
            return sts_spearman(m, self.dev)

    def card(self, dev_spearman: float, **trained) -> str:
        """The folder's README.md, describing the model as it will be saved."""
        from paracl.parts.encoder.build import inference_model, truncation
        from paracl.stages.train_contrastive.training.card import model_card

        inference = inference_model(self.model)
        with truncation(inference, self.saved_length):
            return model_card(
                method=self.spec.name,
                description=self.spec.paper,
                citation=self.spec.citation,
                load_path=self.out_dir.as_posix(),
                base=self.resolved.describe(),
                model=inference,
                dev={"score": dev_spearman, "file": self.dev_path, "pairs": len(self.dev[2])},
                **trained,
            )


def _save_base(target: _Target, as_is: bool, metrics: dict, logger) -> None:
    """Loss `none`: the base scored on dev and saved with its card (no data, params or
    training to state); a sentence-transformers base is copied as published."""
    from paracl.parts.encoder.build import copy_base, inference_model, save_encoder

    model = target.model
    metrics["dev_spearman"] = round(target.dev_score(inference_model(model)), 4)
    if logger:
        logger("dev/spearman", metrics["dev_spearman"], 0)
    text = target.card(metrics["dev_spearman"])
    if as_is:
        copy_base(target.resolved.path, target.out_dir, text)
    else:
        save_encoder(model, target.out_dir, target.saved_length, text)


def _read_examples(
    spec: MethodSpec, module, model, cfg: dict, seed: int, metrics: dict
) -> tuple[Any, Any]:
    """The training examples (a loss that builds its own, as EBSIM's triples, builds them
    with the model) and, for `selection: dev_loss`, the held-out dev sample (else None)."""
    if hasattr(module, "examples"):
        examples = module.examples(spec.train_path, model, spec.params, cfg, seed)
        metrics["triples"] = examples["kind"].value_counts().sort_index().to_dict()
    else:
        examples = load_examples(
            spec.train_path, cfg["max_examples"], seed, tags=spec.tags, task=spec.task,
            paraphrased=list(spec.paraphrased) if spec.paraphrased else None,
            with_original=spec.with_original,
        )  # fmt: skip
    dev_examples = None
    if cfg["selection"] == "dev_loss":  # the PPDB paper's and EBSIM's dev sample
        from paracl.stages.train_contrastive.training.selection import hold_out

        examples, dev_examples = hold_out(examples, cfg["dev_loss_examples"], seed)
        metrics["dev_examples"] = len(dev_examples)
    return examples, dev_examples


def _train(
    target: _Target, examples, objective, config: TrainConfig, logger, checkpoint, dev_examples
) -> TrainResult:
    """trainer.train on the target's model; the kept weights' dev score when the run was
    not selected on STS dev."""
    from paracl.parts.encoder.build import inference_model
    from paracl.stages.train_contrastive.training.trainer import train

    model = target.model
    result = train(
        model,
        examples,
        objective,
        config,
        target.dev_score,
        logger,
        objective.parameters(),
        checkpoint,
        dev_examples,
    )
    if result.best_dev is None:  # not selected on STS dev: the kept weights' score
        result.best_dev = parallel.main_value(
            lambda: target.dev_score(inference_model(model)), model.device
        )
    return result


def _trained_metrics(
    loss: str, examples: int, result: TrainResult, config: TrainConfig, device
) -> dict:
    """What a training run records besides its method and input."""
    metrics = {
        "loss": loss,
        "examples": examples,
        "steps": result.steps,
        **precision_record(device, config.precision),  # auto resolves per machine
        "skipped_steps": result.skipped_steps,  # fp16 overflow; 0 in bf16/fp32
        "epochs_run": result.epochs_run,
        "best_epoch": result.best_epoch,
        "dev_spearman": round(result.best_dev, 4),
        "first_loss": float(f"{result.losses[0]:.6g}"),
        "last_loss": float(f"{result.losses[-1]:.6g}"),
    }
    if (config.selection, config.sts_dev_every) != ("sts_dev", None):  # not the default rule
        metrics["selection"] = config.selection
        metrics["best_step"] = result.best_step if config.sts_dev_every else None
    return metrics


def _save_trained(
    target: _Target,
    cfg: dict,
    seed: int,
    metrics: dict,
    examples: int,
    loss: str,
    result: TrainResult,
) -> None:
    """The trained encoder saved at its inference length, with a card that states its data,
    params and training."""
    from paracl.parts.encoder.build import save_encoder

    spec = target.spec
    training = {
        "loss": loss,
        "steps": result.steps,
        "epochs run": result.epochs_run,
        "best epoch": result.best_epoch,
    }
    if metrics["trained_layers"] != "all":  # a default run's card stays as it was
        training["layers trained"] = metrics["trained_layers"]
    text = target.card(
        metrics["dev_spearman"],
        train_max_seq_length=cfg["max_seq_length"],
        data=spec.train_path + (f" (tags {spec.tags})" if spec.tags else ""),
        examples=examples,
        params=card_params(spec, cfg, seed),
        training=training,
    )
    save_encoder(target.model, target.out_dir, target.saved_length, text)


def card_params(spec: MethodSpec, cfg: dict, seed: int) -> dict:
    """The params that shaped this encoder: the shared ones and the method's own (not the
    other methods' entries or checkpoint_every)."""
    shared = {k: v for k, v in cfg.items() if k not in ("methods", "checkpoint_every")}
    own = spec.own_params()
    return {"seed": seed, **shared, **({spec.name: own} if own else {})}
