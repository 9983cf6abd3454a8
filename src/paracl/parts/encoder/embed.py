"""Load an encoder directory and embed sentences, each unique sentence once.

Evaluation sets share many sentences (STS12–16 repeat headlines, SICK pairs reuse
sentences, each pair side is scored against several others), so embeddings are cached
by sentence text: `EmbeddingCache.embed` encodes only sentences it has not seen, in
batches that sentence-transformers sorts by length, under torch.inference_mode and the
run's `precision` (paracl.core.device: `auto` is bf16 where the device runs it natively).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from paracl.core.device import DEFAULT_PRECISION, autocast

if TYPE_CHECKING:  # torch loads with an encoder: a stage's params check runs without it
    import torch

log = logging.getLogger(__name__)

PROVENANCE_FILE = "paracl_model.json"  # optional: written by the training stage


def transformer_dir(encoder_dir: str | Path) -> Path:
    """The folder holding the encoder's transformers weights (root or a module folder)."""
    encoder_dir = Path(encoder_dir)
    if (encoder_dir / "config.json").exists():
        return encoder_dir
    modules = encoder_dir / "modules.json"
    if modules.exists():
        for mod in json.loads(modules.read_text()):
            if (encoder_dir / mod.get("path", "") / "config.json").exists():
                return encoder_dir / mod["path"]
    raise FileNotFoundError(f"{encoder_dir}: no transformers config.json found")


def describe_encoder(encoder_dir: str | Path, train_metrics: str | Path | None = None) -> dict:
    """What ran: the directory plus the base model it was trained from, when recorded.

    Looked up in order: `paracl_model.json` in the encoder folder ({"base_model": ...});
    the training stage's metrics file (`train_metrics`, whose "model" is the resolved
    base model's description); else the transformers config's name and architecture.
    """
    encoder_dir = Path(encoder_dir)
    info: dict = {"dir": str(encoder_dir)}
    prov = encoder_dir / PROVENANCE_FILE
    trained = Path(train_metrics) if train_metrics else None
    if prov.exists():
        info.update(json.loads(prov.read_text(encoding="utf-8")))
    elif trained is not None and trained.exists():
        meta = json.loads(trained.read_text(encoding="utf-8"))
        info["base_model"] = {**(meta.get("model") or {"id": "unknown"}), "from": str(trained)}
        for key in ("method", "paper", "stand_in"):
            if key in meta:
                info[key] = meta[key]
    else:
        try:
            cfg = json.loads((transformer_dir(encoder_dir) / "config.json").read_text())
            info["base_model"] = {
                "id": cfg.get("_name_or_path") or "unknown",
                "architecture": (cfg.get("architectures") or ["unknown"])[0],
                "note": "no paracl_model.json in the encoder folder; from config.json",
            }
        except FileNotFoundError:
            info["base_model"] = {"id": "unknown"}
    return info


def load_encoder(encoder_dir: str | Path, device: torch.device):
    """`SentenceTransformer(encoder_dir)` exactly as a user loads it (a plain transformers
    dir gets mean pooling). Nothing is re-configured, max_seq_length included: the
    embedding tasks score the encoder that was saved (train_contrastive saves its
    inference length; evaluate.max_seq_length is for the fine-tuning tasks only).
    Sentences are read as plain text, never through a chat template: a no-op for what
    train_contrastive saves (it pins that), a fix for a folder saved without it."""
    from sentence_transformers import SentenceTransformer

    from paracl.parts.encoder.build import plain_text

    encoder_dir = Path(encoder_dir)
    if not encoder_dir.is_dir():
        raise FileNotFoundError(
            f"{encoder_dir}: encoder not found (did train_contrastive write it?)"
        )
    model = plain_text(SentenceTransformer(str(encoder_dir), device=str(device)), encoder_dir)
    model.eval()
    return model


class EmbeddingCache:
    """Sentence → embedding, filled lazily in batches; counts what it encoded and how fast."""

    def __init__(self, model, batch_size: int = 64, precision: str = DEFAULT_PRECISION):
        self.model = model
        self.batch_size = batch_size
        self.precision = precision
        self.vectors: dict[str, np.ndarray] = {}
        self.encoded = 0
        self.seconds = 0.0

    def embed(self, sentences: Sequence[str]) -> np.ndarray:
        """Embeddings of `sentences` (rows in the same order), encoding new ones once."""
        new = sorted(set(sentences) - self.vectors.keys())
        if new:
            import torch

            start = time.perf_counter()
            with torch.inference_mode(), autocast(self.model.device, self.precision):
                vecs = self.model.encode(
                    new,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    show_progress_bar=len(new) > 5000,
                )
            self.seconds += time.perf_counter() - start
            self.encoded += len(new)
            self.vectors.update(zip(new, vecs.astype(np.float32), strict=True))
        return np.stack([self.vectors[s] for s in sentences])

    def cosine(self, s1: Sequence[str], s2: Sequence[str]) -> np.ndarray:
        a, b = self.embed(s1), self.embed(s2)
        a = a / np.linalg.norm(a, axis=1, keepdims=True).clip(min=1e-12)
        b = b / np.linalg.norm(b, axis=1, keepdims=True).clip(min=1e-12)
        return np.sum(a * b, axis=1)

    def speed(self) -> dict:
        return {
            "sentences_encoded": self.encoded,
            "encode_seconds": round(self.seconds, 3),
            "sentences_per_second": round(self.encoded / self.seconds, 1) if self.seconds else 0,
        }
