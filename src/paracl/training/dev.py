"""The dev score for early stopping and model selection: STS dev Spearman of cosine x100.

STS-B dev (tab-separated: genre, file, year, id, score, s1, s2) for English and JSTS
valid (JSON lines: sentence1, sentence2, label) for Japanese — the unsupervised STS
setting SimCSE selects its checkpoints with.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from paracl.errors import InputError
from paracl.evaluation.metrics import spearman
from paracl.evaluation.readers import read_sts_pairs

# The dev set per language (under data/raw, fetched by the fetch stage).
DEV_SETS = {
    "en": "data/raw/stsbenchmark/sts-dev.csv",
    "ja": "data/raw/jglue/jsts-v1.3/valid-v1.3.json",
}


def read_sts(
    path: str | Path, max_pairs: int | None = None, seed: int = 0
) -> tuple[list[str], list[str], np.ndarray]:
    """(sentences1, sentences2, gold) from STS-B .csv / JSTS .json; a seeded sample if asked."""
    df = read_sts_pairs(path)
    s1, s2, gold = df["sentence1"].tolist(), df["sentence2"].tolist(), df["label"].to_numpy()
    if len(gold) < 2:
        raise InputError(f"{path}: fewer than 2 STS pairs")
    if max_pairs is not None and len(gold) > max_pairs:
        keep = np.sort(np.random.default_rng(seed).choice(len(gold), max_pairs, replace=False))
        return [s1[i] for i in keep], [s2[i] for i in keep], gold[keep]
    return s1, s2, gold


@torch.inference_mode()
def sts_spearman(model: SentenceTransformer, data: tuple, batch_size: int = 128) -> float:
    """Spearman x100 between gold scores and the cosine of the two sentences' embeddings."""
    s1, s2, gold = data
    was_training = model.training
    model.eval()
    e1 = model.encode(
        s1,
        batch_size=batch_size,
        convert_to_tensor=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    e2 = model.encode(
        s2,
        batch_size=batch_size,
        convert_to_tensor=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    model.train(was_training)
    cos = (e1 * e2).sum(-1).float().cpu().numpy()
    return spearman(cos, gold)
