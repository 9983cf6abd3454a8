"""The dev score for early stopping and model selection: STS dev Spearman of cosine x100.

STS-B dev (tab-separated: genre, file, year, id, score, s1, s2) for English — the
unsupervised STS setting SimCSE selects its checkpoints with — and a seeded sample of JSTS
*train* (JSON lines: sentence1, sentence2, label) for Japanese: the `jsts` task tests on
JSTS valid, as the PPDB paper's Table 2 does, so selecting checkpoints on valid would
select on the test set.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from paracl.core.errors import InputError
from paracl.core.languages import profiles
from paracl.parts.evaluation.metrics import spearman
from paracl.parts.evaluation.readers import read_sts_pairs
from paracl.parts.evaluation.sample import sample_rows

if TYPE_CHECKING:  # annotations only: DEV_SETS is read by the params check
    from sentence_transformers import SentenceTransformer

# The dev set per language (under data/raw, fetched by the fetch stage): each profile's `sts_dev`.
DEV_SETS = {p.code: p.sts_dev for p in profiles()}


def read_sts(
    path: str | Path, max_pairs: int | None = None, seed: int = 0
) -> tuple[list[str], list[str], np.ndarray]:
    """(sentences1, sentences2, gold) from STS-B .csv / JSTS .json; a seeded sample of
    `max_pairs` if asked (paracl.parts.evaluation.sample, one stratum: the same rows as before
    that helper existed)."""
    df = read_sts_pairs(path)
    if len(df) < 2:
        raise InputError(f"{path}: fewer than 2 STS pairs")
    df, _ = sample_rows(df, max_pairs, seed)
    return df["sentence1"].tolist(), df["sentence2"].tolist(), df["label"].to_numpy()


def sts_spearman(model: SentenceTransformer, data: tuple, batch_size: int = 128) -> float:
    """Spearman x100 between gold scores and the cosine of the two sentences' embeddings."""
    import torch

    with torch.inference_mode():
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
