"""The semantic-similarity scorer: SIM = its STS score ×100 for a sentence pair.

Paper §3.1/§4.2: a Sentence-BERT cross-encoder trained on STS-B predicts a pair's
similarity in [0, 1]; the paper trains DeBERTaV3-large with 10 seeds and keeps the best
on dev, because fine-tuning on STS-B varies a lot with the seed. That setup is
`kind: cross_encoder` here, trained as sentence-transformers' STS-B cross-encoder script
of the paper's time does (v2/v3, `CrossEncoder.fit`): each train pair in both orders, gold
0–5 divided by 5, binary cross-entropy on the logit (sigmoid output), linear decay after a
warm-up of 10 % of the steps, weight decay 0.01 (bias and LayerNorm left out), dev
Spearman after every epoch and the best epoch kept. Its 4 epochs are the stage's default
for the kind (paracl.stages.train_sts_scorer).

`kind: bi_encoder`: a cross-encoder started from all-MiniLM-L6-v2 (which never read two
sentences as one input) stays below what that encoder reaches as a fine-tuned bi-encoder,
so the bi-encoder is fine-tuned on STS-B instead with CosineSimilarityLoss (MSE between
the cosine and gold/5). That loss makes the cosine an estimate of gold/5, the [0, 1] scale
the cross-encoder predicts, so SIM bins (tagging.sim_tag) mean the same for both kinds;
the rare negative cosine is clipped to 0. `epochs: 0` uses the encoder as it is
(zero-shot; its cosine is not calibrated to gold/5). docs/stages/roundtrip.md has both
kinds' measured scores and times.

Mixed precision: the sentence-transformers Trainer autocasts and scales the loss itself;
its fp16 / bf16 arguments are set from the `precision` param as every other loop's
(paracl.core.device). The bi-encoder reads plain text, never a chat template
(training.encoder.build_encoder).

The kind is saved next to the model (KIND_FILE), so `load_scorer` and `predict`, which
the tag and generate stages use, need no setting of their own. A directory without that
file is read as a cross-encoder (how scorers were saved before there were two kinds).
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from paracl.core.device import DEFAULT_PRECISION, autocast_dtype
from paracl.core.languages import profile
from paracl.core.models import ResolvedModel
from paracl.parts.evaluation.metrics import pearson, spearman
from paracl.parts.evaluation.readers import read_sts_pairs

log = logging.getLogger(__name__)

KINDS = ("bi_encoder", "cross_encoder")
KIND_FILE = "paracl_sts_scorer.json"
SCALE = {
    "bi_encoder": "cosine of the two sentence embeddings, clipped to [0, 1]",
    "cross_encoder": "sigmoid of the cross-encoder's output, in [0, 1]",
}
PAPER = {"base_model": "microsoft/deberta-v3-large", "kind": "cross_encoder", "n_seeds": 10}
# sentence-transformers' STS-B scripts (v2/v3): warm-up of 10 % of the training steps; the
# cross-encoder's CrossEncoder.fit decays weights by 0.01 (the Trainer's default is 0)
WARMUP_RATIO = 0.1
CROSS_ENCODER_WEIGHT_DECAY = 0.01
DEV_METRIC = "eval_sts_dev_spearman"  # the Trainer's name of the dev evaluator's Spearman


@dataclass(frozen=True)
class StsPairs:
    """Sentence pairs with gold similarity in [0, 1]."""

    first: list[str]
    second: list[str]
    score: list[float]

    def __len__(self) -> int:
        return len(self.score)

    def pairs(self) -> list[tuple[str, str]]:
        """(first, second) tuples, the input of `predict`."""
        return list(zip(self.first, self.second, strict=True))


def read_pairs(path: str | Path) -> StsPairs:
    """STS-B (.csv) or JSTS (.json) pairs, gold divided by 5 (the scorer's [0, 1] scale).
    Bad lines raise InputError naming the file and the line (evaluation.readers)."""
    df = read_sts_pairs(path)
    return StsPairs(
        df["sentence1"].tolist(), df["sentence2"].tolist(), (df["label"] / 5.0).tolist()
    )


def read_splits(dataset: str | Path, lang: str) -> dict[str, StsPairs]:
    """train, dev and test pairs of the `lang` dataset folder (as the fetch stage writes it;
    the files are the profile's `sts_scorer_data`: STS-B for English, JSTS for Japanese)."""
    files = profile(lang).sts_scorer_data
    return {name: read_pairs(Path(dataset) / file) for name, file in files.items()}


def sample_pairs(pairs: StsPairs, n: int | None, seed: int) -> StsPairs:
    """A seeded sample of `n` pairs in file order (all when n is None or >= len).

    Why not the first n: STS-B train is sorted by genre (captions first), so a prefix
    would train on one genre only.
    """
    if n is None or n >= len(pairs):
        return pairs
    keep = np.sort(np.random.default_rng(seed).choice(len(pairs), size=n, replace=False))
    return StsPairs(
        [pairs.first[i] for i in keep],
        [pairs.second[i] for i in keep],
        [pairs.score[i] for i in keep],
    )


def both_orders(pairs: StsPairs) -> StsPairs:
    """Each pair as (a, b) and then (b, a), with the same score: the cross-encoder reads the
    two sentences as one input, and training on both orders makes its score symmetric, as
    sentence-transformers' STS-B cross-encoder script trains it."""
    first, second, score = [], [], []
    for a, b, s in zip(pairs.first, pairs.second, pairs.score, strict=True):
        first += [a, b]
        second += [b, a]
        score += [s, s]
    return StsPairs(first, second, score)


def correlations(pred: np.ndarray, gold: list[float]) -> dict:
    """Pearson and Spearman ×100, as STS papers report them, and the mean absolute error
    ×100 (SIM points): how far the score is from gold/5, i.e. how trustworthy SIM bins are."""
    pred = np.asarray(pred, dtype=np.float64)
    return {
        "pearson": pearson(pred, gold),
        "spearman": spearman(pred, gold),
        "mae": float(np.mean(np.abs(pred - np.asarray(gold))) * 100),
    }


def _is_bi_encoder(model: Any) -> bool:
    from sentence_transformers import SentenceTransformer

    return isinstance(model, SentenceTransformer)


def predict(model: Any, pairs: list[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
    """Similarity in [0, 1] for each pair, for either kind of scorer (see SCALE).

    A bi-encoder embeds each distinct sentence once (a source has several candidates).
    """
    if not pairs:
        return np.zeros(0)
    if _is_bi_encoder(model):
        texts = sorted({t for pair in pairs for t in pair})
        index = {t: i for i, t in enumerate(texts)}
        emb = model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        ).astype(np.float64)
        a = emb[[index[p[0]] for p in pairs]]
        b = emb[[index[p[1]] for p in pairs]]
        return np.clip(np.einsum("ij,ij->i", a, b), 0.0, 1.0)
    scores = model.predict(pairs, batch_size=batch_size, show_progress_bar=False)
    return np.asarray(scores, dtype=np.float64).reshape(-1)


def _training_args(
    cls: type, out_dir: Path, seed: int, cfg: dict, device: str, precision: str, **extra: Any
) -> Any:
    """The arguments both kinds share: linear decay after a warm-up of WARMUP_RATIO of the
    steps, no checkpoints, mixed precision as `precision` picks it for `device` (the
    Trainer scales fp16 itself); `extra` adds a kind's own."""
    dtype = autocast_dtype(torch.device(device), precision)
    return cls(
        output_dir=str(out_dir / "checkpoints"),
        num_train_epochs=cfg["epochs"],
        per_device_train_batch_size=cfg["batch_size"],
        learning_rate=cfg["lr"],
        warmup_steps=WARMUP_RATIO,  # a float < 1 is a ratio of the steps, rounded up
        seed=seed,
        data_seed=seed,
        save_strategy="no",
        report_to=[],
        logging_steps=50,
        disable_tqdm=True,
        use_cpu=device == "cpu",
        fp16=dtype == torch.float16,
        bf16=dtype == torch.bfloat16,
        **extra,
    )


def _dataset(pairs: StsPairs) -> Any:
    from datasets import Dataset

    return Dataset.from_dict(
        {"sentence1": pairs.first, "sentence2": pairs.second, "label": pairs.score}
    )


def _keep_best_epoch() -> Any:
    """A Trainer callback that keeps, after each epoch's dev evaluation, a CPU copy of the
    weights when dev Spearman beats every earlier epoch (a tie keeps the earlier one, as
    CrossEncoder.fit's `save_best_model` does); `restore` puts the best back. In memory,
    so no checkpoint is written. Built here: transformers is imported only to train."""
    from transformers import TrainerCallback

    class KeepBestEpoch(TrainerCallback):
        def __init__(self) -> None:
            self.by_epoch: list[float] = []  # dev Spearman ×100 after each epoch
            self.best: dict | None = None

        def on_evaluate(self, args, state, control, metrics=None, model=None, **kwargs):  # noqa: ANN001, ANN201
            spearman = float(metrics[DEV_METRIC]) * 100
            if not self.by_epoch or spearman > max(self.by_epoch):
                weights = model.state_dict().items()
                self.best = {k: v.detach().to("cpu", copy=True) for k, v in weights}
            self.by_epoch.append(spearman)

        def restore(self, model: Any) -> int:
            """Load the best epoch's weights into `model`; return that epoch (1-based)."""
            model.load_state_dict(self.best)
            return int(np.argmax(self.by_epoch)) + 1

    return KeepBestEpoch()


def cross_encoder_trainer(
    base: str | Path,
    train: StsPairs,
    dev: StsPairs,
    out_dir: Path,
    seed: int,
    cfg: dict,
    device: str,
    precision: str = DEFAULT_PRECISION,
) -> Any:
    """The CrossEncoderTrainer of sentence-transformers' STS-B cross-encoder recipe (module
    docstring), not yet trained: `train` in both orders, BCE on the logit, warm-up, weight
    decay, and the dev correlation evaluated after every epoch."""
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderCorrelationEvaluator
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    model = CrossEncoder(str(base), num_labels=1, max_length=cfg["max_length"], device=device)
    args = _training_args(
        CrossEncoderTrainingArguments, out_dir, seed, cfg, device, precision,
        weight_decay=CROSS_ENCODER_WEIGHT_DECAY, eval_strategy="epoch",
    )  # fmt: skip
    evaluator = CrossEncoderCorrelationEvaluator(dev.pairs(), dev.score, name="sts_dev")
    return CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=_dataset(both_orders(train)),
        loss=BinaryCrossEntropyLoss(model),
        evaluator=evaluator,
    )


def _train_cross_encoder(
    base: str, train: StsPairs, dev: StsPairs, out_dir: Path, seed: int, cfg: dict,
    device: str, precision: str,
) -> tuple[Any, dict]:  # fmt: skip
    """Train with the recipe and keep the best epoch on dev; return it and its record."""
    trainer = cross_encoder_trainer(base, train, dev, out_dir, seed, cfg, device, precision)
    keep = _keep_best_epoch()
    trainer.add_callback(keep)
    trainer.train()
    epoch = keep.restore(trainer.model)
    return trainer.model, {"best_epoch": epoch, "by_epoch": keep.by_epoch}


def _train_bi_encoder(
    base: str, train: StsPairs, dev: StsPairs, out_dir: Path, seed: int, cfg: dict,
    device: str, precision: str,
) -> tuple[Any, dict]:  # fmt: skip
    """Fine-tune with CosineSimilarityLoss (`epochs` 0: the encoder as it is); the last
    weights are kept."""
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss

    from paracl.parts.encoder.build import build_encoder

    # a plain transformers checkpoint gets mean pooling; a sentence-transformers one keeps its own
    model = build_encoder(base, pooling=None, max_seq_length=cfg["max_length"]).to(device)
    if cfg["epochs"] > 0:
        cls = SentenceTransformerTrainingArguments
        args = _training_args(cls, out_dir, seed, cfg, device, precision)
        SentenceTransformerTrainer(
            model=model, args=args, train_dataset=_dataset(train), loss=CosineSimilarityLoss(model)
        ).train()
    return model, {}


def train_one(
    kind: str,
    base: str | Path,
    train: StsPairs,
    dev: StsPairs,
    out_dir: Path,
    seed: int,
    cfg: dict,
    device: str,
    precision: str = DEFAULT_PRECISION,
) -> tuple[Any, dict]:
    """Fine-tune one scorer of `kind` with `seed`; return (model, dev correlations; for a
    cross-encoder also the epoch kept and every epoch's dev Spearman).

    `cfg` holds epochs, batch_size, lr and max_length (the train_sts_scorer params);
    `precision` is the top-level param (paracl.core.device).
    """
    from transformers import set_seed

    if kind not in KINDS:
        raise ValueError(f"unknown scorer kind {kind!r} (known: {', '.join(KINDS)})")
    if kind == "cross_encoder" and cfg["epochs"] <= 0:
        raise ValueError("a cross-encoder needs epochs > 0 (its regression head is random)")
    set_seed(seed)  # the head (cross-encoder) is initialised on load, so seed before it
    trainer = _train_bi_encoder if kind == "bi_encoder" else _train_cross_encoder
    model, record = trainer(str(base), train, dev, out_dir, seed, cfg, device, precision)
    return model, {**correlations(predict(model, dev.pairs()), dev.score), **record}


def save_scorer(model: Any, kind: str, path: str | Path, info: dict) -> None:
    """Save the model and KIND_FILE (kind, scale, `info`) into the directory `path`.

    No model card: it records times and would make equal runs differ in bytes.
    """
    path = Path(path)
    model.save_pretrained(str(path), create_model_card=False)
    meta = {"kind": kind, "scale": SCALE[kind], **info}
    (path / KIND_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def scorer_kind(path: str | Path) -> str:
    """The kind saved in `path`; cross_encoder when KIND_FILE is absent."""
    meta = Path(path) / KIND_FILE
    if not meta.exists():
        return "cross_encoder"
    kind = json.loads(meta.read_text(encoding="utf-8")).get("kind")
    if kind not in KINDS:
        raise ValueError(f"{meta}: unknown scorer kind {kind!r} (known: {', '.join(KINDS)})")
    return kind


def load_scorer(path: str | Path, device: str = "cpu") -> Any:
    """Load a trained scorer of either kind; pass it to `predict`."""
    if scorer_kind(path) == "bi_encoder":
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(path), device=device)
    from sentence_transformers.cross_encoder import CrossEncoder

    return CrossEncoder(str(path), device=device)


# -- the stage's run: best of n seeds on dev (paper §4.2) ------------------------------


@dataclass
class BestOfSeeds:
    """The scorer kept (best dev Spearman) and every seed's dev correlations."""

    model: Any
    seed: int
    dev: dict
    runs: list[dict]  # {"seed", "dev"} per seed, in training order


def train_best_of_seeds(
    kind: str,
    base: ResolvedModel,
    train: StsPairs,
    dev: StsPairs,
    cfg: dict,
    first_seed: int,
    device: str,
    precision: str = DEFAULT_PRECISION,
) -> BestOfSeeds:
    """Train `cfg["n_seeds"]` scorers (seeds first_seed, first_seed + 1, …) and keep the
    best on dev: fine-tuning on STS varies a lot with the seed. A bi-encoder with epochs
    0 is not trained, so it gets one seed (every seed would give the same model)."""
    log.info(
        "%s from %s (%s); %d train pairs; device %s",
        kind,
        base.model_id,
        base.source,
        len(train),
        device,
    )
    n_seeds = 1 if cfg["epochs"] == 0 else cfg["n_seeds"]
    runs: list[dict] = []
    best: BestOfSeeds | None = None
    with tempfile.TemporaryDirectory(prefix="paracl-sts-") as work:
        for seed in range(first_seed, first_seed + n_seeds):
            started = time.perf_counter()
            model, dev_scores = train_one(
                kind, base.path, train, dev, Path(work), seed, cfg, device, precision
            )
            runs.append({"seed": seed, "dev": dev_scores})
            log.info(
                "seed %d: dev spearman %.2f (%.0f s)",
                seed,
                dev_scores["spearman"],
                time.perf_counter() - started,
            )
            if best is None or dev_scores["spearman"] > best.dev["spearman"]:
                best = BestOfSeeds(model, seed, dev_scores, runs)
    return best


def deviations(cfg: dict, lang: str, model_id: str, n_train: int, n_train_all: int) -> list[str]:
    """How this run differs from the paper's scorer (empty: the paper's setup)."""
    note = profile(lang).sts_scorer_note
    out = [] if note is None else [note]
    if model_id != PAPER["base_model"]:
        out.append(f"base model {model_id}, not {PAPER['base_model']}")
    if cfg["kind"] != PAPER["kind"]:
        out.append(f"{cfg['kind']} (cosine), not a cross-encoder")
    if cfg["n_seeds"] < PAPER["n_seeds"]:
        out.append(f"best of {cfg['n_seeds']} seed(s), not {PAPER['n_seeds']}")
    if n_train < n_train_all:
        out.append(f"{n_train} of {n_train_all} training pairs")
    return out


def run_metrics(
    cfg: dict,
    lang: str,
    base: ResolvedModel,
    splits: dict[str, StsPairs],
    train: StsPairs,
    best: BestOfSeeds,
    test: dict,
) -> dict:
    """The stage's metrics: what was trained, how it differs from the paper's scorer,
    every seed's dev correlations, and the kept scorer's test correlations (`test`)."""
    deviation = deviations(cfg, lang, base.model_id, len(train), len(splits["train"]))
    return {
        "lang": lang,
        "kind": cfg["kind"],
        "scale": SCALE[cfg["kind"]],
        "base_model": base.describe(),
        "paper": PAPER,
        "paper_model": not deviation,
        "deviations": deviation,
        "same_base_as_paper": base.model_id == PAPER["base_model"],
        "epochs": cfg["epochs"],
        "n_train": len(train),
        "n_dev": len(splits["dev"]),
        "n_test": len(splits["test"]),
        "runs": best.runs,
        "best_seed": best.seed,
        "dev": best.dev,
        "test": test,
    }
