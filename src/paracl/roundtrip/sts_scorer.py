"""The semantic-similarity scorer: a cross-encoder fine-tuned on STS-B (en) or JSTS (ja).

Paper §3.1/§4.2: a Sentence-BERT cross-encoder trained on STS-B predicts a pair's
similarity in [0, 1]; the paper trains DeBERTaV3-large with 10 seeds and keeps the best
on dev, because fine-tuning on STS-B varies a lot with the seed. Here any encoder that
`paracl.models.resolve_model` finds can be the base (offline default: all-MiniLM-L6-v2).
Gold scores 0–5 are divided by 5; the loss is binary cross-entropy on the sigmoid output,
as sentence-transformers' own STS-B cross-encoder recipe does.
"""

from __future__ import annotations

import csv
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StsPairs:
    """Sentence pairs with gold similarity in [0, 1]."""

    first: list[str]
    second: list[str]
    score: list[float]

    def __len__(self) -> int:
        return len(self.score)


class StsDataError(ValueError):
    """A line of an STS file cannot be parsed; the message names file and line."""


def read_stsb(path: str | Path) -> StsPairs:
    """STS Benchmark (original release): tab-separated, 7+ fields, score in field 5 (0–5)."""
    path = Path(path)
    a, b, s = [], [], []
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
            if not row:
                continue
            if len(row) < 7:
                raise StsDataError(
                    f"{path}:{lineno}: expected 7+ tab-separated fields, got {len(row)}"
                )
            try:
                score = float(row[4])
            except ValueError:
                raise StsDataError(f"{path}:{lineno}: score {row[4]!r} is not a number") from None
            a.append(row[5])
            b.append(row[6])
            s.append(score / 5.0)
    return StsPairs(a, b, s)


def read_jsts(path: str | Path) -> StsPairs:
    """JSTS (JGLUE): JSON Lines with sentence1, sentence2 and a float label 0–5."""
    path = Path(path)
    a, b, s = [], [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                a.append(obj["sentence1"])
                b.append(obj["sentence2"])
                s.append(float(obj["label"]) / 5.0)
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
                raise StsDataError(f"{path}:{lineno}: not a JSTS record: {err}") from None
    return StsPairs(a, b, s)


def correlations(pred: np.ndarray, gold: list[float]) -> dict:
    """Pearson and Spearman ×100, as STS papers report them."""
    return {
        "pearson": float(pearsonr(pred, gold)[0] * 100),
        "spearman": float(spearmanr(pred, gold)[0] * 100),
    }


def predict(model, pairs: list[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
    """Similarity in [0, 1] for each pair (the cross-encoder's sigmoid output)."""
    if not pairs:
        return np.zeros(0)
    scores = model.predict(pairs, batch_size=batch_size, show_progress_bar=False)
    return np.asarray(scores, dtype=np.float64).reshape(-1)


def train_one(
    base: str | Path,
    train: StsPairs,
    dev: StsPairs,
    out_dir: Path,
    seed: int,
    epochs: float,
    batch_size: int,
    lr: float,
    max_length: int,
    device: str,
):
    """Fine-tune one cross-encoder with `seed`; return (model, dev correlations)."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers import set_seed

    set_seed(seed)  # the regression head is initialised here, so seed before loading
    model = CrossEncoder(str(base), num_labels=1, max_length=max_length, device=device)
    data = Dataset.from_dict(
        {"sentence1": train.first, "sentence2": train.second, "label": train.score}
    )
    args = CrossEncoderTrainingArguments(
        output_dir=str(out_dir / "checkpoints"),
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=lr,
        warmup_steps=0.1,  # a float is a ratio of the training steps (transformers v5)
        seed=seed,
        data_seed=seed,
        save_strategy="no",
        report_to=[],
        logging_steps=50,
        disable_tqdm=True,
        use_cpu=device == "cpu",
    )
    trainer = CrossEncoderTrainer(
        model=model, args=args, train_dataset=data, loss=BinaryCrossEntropyLoss(model)
    )
    trainer.train()
    dev_scores = correlations(
        predict(model, list(zip(dev.first, dev.second, strict=True))), dev.score
    )
    return model, dev_scores


def load_scorer(path: str | Path, device: str = "cpu"):
    """Load a trained scorer (a sentence-transformers CrossEncoder directory)."""
    from sentence_transformers.cross_encoder import CrossEncoder

    return CrossEncoder(str(path), device=device)
