"""The training methods by name, and how each is run from its params section.

A method = an input artifact (given in params `train_contrastive.methods`) + an objective.
`train_method` is everything the stage does: read input, build the encoder, train, save
the inference model with its card (training/encoder.py, training/card.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from paracl.device import seed_everything
from paracl.errors import InputError
from paracl.io import read_parquet
from paracl.models import resolve_model
from paracl.params import ParamsError
from paracl.training import objectives, parallel
from paracl.training.card import model_card
from paracl.training.checkpoint import Checkpoint
from paracl.training.data import load_examples
from paracl.training.dev import read_sts, sts_spearman
from paracl.training.ebsim import EbsimObjective, build_triples
from paracl.training.encoder import (
    build_encoder,
    copy_base,
    embed,
    inference_model,
    is_sentence_transformer_dir,
    save_encoder,
    truncation,
)
from paracl.training.trainer import TrainConfig, train

log = logging.getLogger(__name__)


SIMCSE = "Gao et al., SimCSE: Simple Contrastive Learning of Sentence Embeddings (EMNLP 2021)"
PPDB = "Sugiyama et al., Paraphrase-based Contrastive Learning for Sentence Pair Modeling"
ROUNDTRIP = "Ogasa, Kajiwara, Arase, 意味と表層の類似度を制御した言い換えによるデータ拡張"
JCSE = "Chen et al., JCSE: Contrastive Learning of Japanese Sentence Embeddings"
XPI = "Fedorova & Musatow, Cross-lingual paraphrase identification"
EBSIM = (
    "Enhancing Transformer-based Semantic Matching for Few-shot Learning through Weakly "
    "Contrastive Pre-training"
)


@dataclass(frozen=True)
class Method:
    family: str  # none | infonce | jcse | ams | ebsim
    paper: str
    hard_negatives: bool = False
    aspects: tuple[str, ...] = ()
    citation: str = ""  # the paper, for the model card


METHODS: dict[str, Method] = {
    "none": Method("none", "base model, no additional training"),
    "simcse_unsup": Method("infonce", "SimCSE unsupervised: dropout positives", citation=SIMCSE),
    "simcse_sup": Method(
        "infonce", "SimCSE supervised: NLI entailment/contradiction", True, citation=SIMCSE
    ),
    "ppdb": Method("infonce", "PPDB paper Eq. 1: PPDB paraphrase positives", citation=PPDB),
    "roundtrip": Method(
        "infonce", "round-trip paper: SimCSE + round-trip paraphrases", citation=ROUNDTRIP
    ),
    "paraphraser": Method(
        "infonce", "round-trip paper: SimCSE + tag-controlled BART", citation=ROUNDTRIP
    ),
    "jcse": Method(
        "jcse", "JCSE stage one: generated negatives, weight alpha (Eq. 4)", True, citation=JCSE
    ),
    "jcse_two_stage": Method(
        "jcse", "JCSE stage two on NLI, from the jcse encoder", True, citation=JCSE
    ),
    "ams": Method("ams", "additive margin scale loss + mega-batch mining (Alg. 2)", citation=XPI),
    "ebsim": Method("ebsim", "EBSIM RA + AA triplet losses", aspects=("ra", "aa"), citation=EBSIM),
    "ebsim_no_aa": Method("ebsim", "EBSIM ablation -AA", aspects=("ra",), citation=EBSIM),
}


def make_objective(name: str, model, cfg: dict):
    spec = METHODS[name]
    if spec.family == "infonce":
        return objectives.infonce(model, cfg["temperature"], spec.hard_negatives)
    if spec.family == "jcse":
        return objectives.weighted_hard_negatives(cfg["temperature"], cfg[name]["alpha"])
    if spec.family == "ams":
        a = cfg["ams"]
        return objectives.AdditiveMarginObjective(
            a["margin"], a["scale"], a["gamma"], a["mine_k"], a["threshold"], embed
        )
    if spec.family == "ebsim":
        return EbsimObjective(model, spec.aspects, cfg["ebsim"]["beta"], 2 * cfg["max_seq_length"])
    raise ValueError(f"method {name!r} has no objective")


def train_method(
    name: str,
    input_path: str,
    cfg: dict,
    seed: int,
    device,
    out_dir: Path,
    dev_path: str,
    logger=None,
    checkpoint: Checkpoint | None = None,
) -> dict:
    """Train (or, for `none`, just save) one encoder; returns the metrics to record.
    `checkpoint`: where training saves and resumes its state (training/checkpoint.py)."""
    if name not in METHODS:
        raise ParamsError(
            f"train_contrastive: unknown method {name!r} (known: {', '.join(METHODS)})"
        )
    spec = METHODS[name]
    base_id = cfg["base_model"]
    if name == "jcse_two_stage":
        base_id = cfg["jcse_two_stage"]["init"]
        if not Path(base_id).is_dir():
            raise InputError(
                f"{base_id}: the stage-one encoder is missing; train method jcse first"
            )
    resolved = resolve_model(base_id)
    seed_everything(seed)  # EBSIM's heads and any fresh layer are initialised from here on
    # `none` with a sentence-transformers base: that base as published (its own pooling)
    as_is = spec.family == "none" and is_sentence_transformer_dir(resolved.path)
    model = build_encoder(
        resolved.path,
        None if as_is else cfg["pooling"],
        None,
        cfg["freeze_embeddings"],
        None if as_is else cfg["dropout"],
    ).to(device)
    saved_length = model.max_seq_length  # the base's inference length: what is saved
    dev = read_sts(dev_path, cfg["dev_max_pairs"], seed)

    def dev_score(m) -> float:
        """Dev score of the model as it will be saved (the inference length)."""
        with truncation(m, saved_length):
            return sts_spearman(m, dev)

    def card(dev_spearman: float, **trained) -> str:
        """The folder's README.md, describing the model as it will be saved."""
        inference = inference_model(model)
        with truncation(inference, saved_length):
            return model_card(
                method=name,
                description=spec.paper,
                citation=spec.citation,
                load_path=out_dir.as_posix(),
                base=resolved.describe(),
                model=inference,
                dev={"score": dev_spearman, "file": dev_path, "pairs": len(dev[2])},
                **trained,
            )

    metrics = {
        "method": name,
        "paper": spec.paper,
        "model": resolved.describe(),
        "input": input_path,
    }
    if spec.family == "none":
        if parallel.is_main():  # nothing to train: rank 0 alone scores and saves
            metrics["dev_spearman"] = round(dev_score(inference_model(model)), 4)
            if logger:
                logger("dev/spearman", metrics["dev_spearman"], 0)
            text = card(metrics["dev_spearman"])  # no data, params or training to state
            if as_is:
                copy_base(resolved.path, out_dir, text)
            else:
                save_encoder(model, out_dir, saved_length, text)
        return metrics

    model.max_seq_length = cfg["max_seq_length"]  # training truncation (SimCSE: 32)

    batch = cfg["batch_size"]
    if spec.family == "ebsim":
        raw = read_parquet(input_path)  # the corpus itself: titles and documents
        examples = build_triples(
            raw,
            model,
            cfg["ebsim"]["eta"],
            cfg["ebsim"]["max_mask"],
            seed,
            cfg["max_examples"],
            input_path,
        )
        metrics["triples"] = examples["kind"].value_counts().sort_index().to_dict()
    else:
        examples = load_examples(input_path, cfg["max_examples"], seed)
    if spec.hard_negatives and examples["negative"].isna().any():
        raise InputError(f"{input_path}: method {name} needs a 'negative' for every row")
    objective = make_objective(name, model, cfg)
    config = TrainConfig(
        lr=cfg["lr"],
        epochs=cfg["epochs"],
        batch_size=batch,
        mini_batch_size=cfg["mini_batch_size"],
        patience=cfg["patience"],
        seed=seed,
        mega_batch=cfg["ams"]["mega_batch"] if spec.family == "ams" else 1,
    )
    extra = list(objective.loss_fn.parameters()) if spec.family == "ebsim" else None
    result = train(
        model,
        examples,
        objective,
        config,
        dev_score,
        logger,
        extra,
        checkpoint,
    )
    metrics.update(
        {
            "loss": objective.name,
            "examples": len(examples),
            "steps": result.steps,
            "epochs_run": result.epochs_run,
            "best_epoch": result.best_epoch,
            "dev_spearman": round(result.best_dev, 4),
            "first_loss": float(f"{result.losses[0]:.6g}"),
            "last_loss": float(f"{result.losses[-1]:.6g}"),
        }
    )
    if parallel.is_main():
        training = {
            "loss": objective.name,
            "steps": result.steps,
            "epochs run": result.epochs_run,
            "best epoch": result.best_epoch,
        }
        text = card(
            metrics["dev_spearman"],
            train_max_seq_length=cfg["max_seq_length"],
            data=input_path,
            examples=len(examples),
            params=card_params(name, cfg, seed),
            training=training,
        )
        save_encoder(model, out_dir, saved_length, text)
    return metrics


def card_params(name: str, cfg: dict, seed: int) -> dict:
    """The params that shaped this encoder: the shared ones and this method's own section
    (not the other methods' sections, the input map or checkpoint_every)."""
    own = {"jcse": name, "ams": "ams", "ebsim": "ebsim"}.get(METHODS[name].family)
    skip = ("methods", "checkpoint_every")
    keep = {k: v for k, v in cfg.items() if k not in skip and (not isinstance(v, dict) or k == own)}
    return {"seed": seed, **keep}
