"""The dev score for early stopping and model selection: STS dev Spearman of cosine x100.

STS-B dev (tab-separated: genre, file, year, id, score, s1, s2) for English and JSTS
valid (JSON lines: sentence1, sentence2, label) for Japanese — the unsupervised STS
setting SimCSE selects its checkpoints with.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer

from paracl.io import ArtifactError
from paracl.stage import InputError


def read_sts(
    path: str | Path, max_pairs: int | None = None, seed: int = 0
) -> tuple[list[str], list[str], np.ndarray]:
    """(sentences1, sentences2, gold) from STS-B .csv / JSTS .json; a seeded sample if asked."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: STS dev file not found (run the fetch stage)")
    s1, s2, gold = [], [], []
    with path.open(encoding="utf-8") as f:
        if path.suffix == ".json":
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    s1.append(row["sentence1"])
                    s2.append(row["sentence2"])
                    gold.append(float(row["label"]))
        else:
            for no, cells in enumerate(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
                if len(cells) < 7:
                    raise InputError(f"{path}:{no}: expected 7 tab-separated STS-B fields")
                s1.append(cells[5])
                s2.append(cells[6])
                gold.append(float(cells[4]))
    if len(gold) < 2:
        raise InputError(f"{path}: fewer than 2 STS pairs")
    if max_pairs is not None and len(gold) > max_pairs:
        keep = np.sort(np.random.default_rng(seed).choice(len(gold), max_pairs, replace=False))
        return [s1[i] for i in keep], [s2[i] for i in keep], np.asarray(gold)[keep]
    return s1, s2, np.asarray(gold)


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
    return float(spearmanr(cos, gold).statistic * 100)
