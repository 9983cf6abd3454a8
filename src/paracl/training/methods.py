"""The training methods by name, and how each is run from its params section.

A method = an input artifact (given in params `train_contrastive.methods`) + an objective.
`train_method` is everything the stage does: read input, build the encoder, train, save.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from paracl.device import seed_everything
from paracl.io import read_parquet
from paracl.models import resolve_model
from paracl.params import ParamsError
from paracl.stage import InputError
from paracl.training import objectives, parallel
from paracl.training.data import load_examples
from paracl.training.dev import read_sts, sts_spearman
from paracl.training.ebsim import EbsimObjective, build_triples
from paracl.training.encoder import build_encoder, embed, save_encoder
from paracl.training.trainer import TrainConfig, train

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Method:
    family: str  # none | infonce | jcse | ams | ebsim
    paper: str
    hard_negatives: bool = False
    aspects: tuple[str, ...] = ()


METHODS: dict[str, Method] = {
    "none": Method("none", "base model, no additional training"),
    "simcse_unsup": Method("infonce", "SimCSE unsupervised: dropout positives"),
    "simcse_sup": Method("infonce", "SimCSE supervised: NLI entailment/contradiction", True),
    "ppdb": Method("infonce", "PPDB paper Eq. 1: PPDB paraphrase positives"),
    "roundtrip": Method("infonce", "round-trip paper: SimCSE + round-trip paraphrases"),
    "paraphraser": Method("infonce", "round-trip paper: SimCSE + tag-controlled BART"),
    "jcse": Method("jcse", "JCSE stage one: generated negatives, weight alpha (Eq. 4)", True),
    "jcse_two_stage": Method("jcse", "JCSE stage two on NLI, from the jcse encoder", True),
    "ams": Method("ams", "additive margin scale loss + mega-batch mining (Alg. 2)"),
    "ebsim": Method("ebsim", "EBSIM RA + AA triplet losses", aspects=("ra", "aa")),
    "ebsim_no_aa": Method("ebsim", "EBSIM ablation -AA", aspects=("ra",)),
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
) -> dict:
    """Train (or, for `none`, just save) one encoder; returns the metrics to record."""
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
    model = build_encoder(
        resolved.path, cfg["pooling"], cfg["max_seq_length"], cfg["freeze_embeddings"]
    ).to(device)
    dev = read_sts(dev_path, cfg["dev_max_pairs"], seed)
    metrics = {
        "method": name,
        "paper": spec.paper,
        "model": resolved.describe(),
        "input": input_path,
    }
    if spec.family == "none":
        if parallel.is_main():  # nothing to train: rank 0 alone scores and saves
            metrics["dev_spearman"] = round(sts_spearman(model, dev), 4)
            if logger:
                logger("dev/spearman", metrics["dev_spearman"], 0)
            save_encoder(model, out_dir)
        return metrics

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
        model, examples, objective, config, lambda m: sts_spearman(m, dev), logger, extra
    )
    if parallel.is_main():
        save_encoder(model, out_dir)
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
    return metrics
