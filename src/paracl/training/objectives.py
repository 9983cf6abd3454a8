"""What one training step optimises, per method family, on a batch of examples.

A bi-encoder objective names the text columns to embed and the loss on their embeddings,
so the trainer can run it in one pass or through GradCache without knowing the loss.
EBSIM is a cross-encoder objective with its own forward (its loss is per example, so
plain gradient accumulation is exact for it).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
from torch import Tensor

from paracl.distributed.gather import all_gather_with_grad
from paracl.training import parallel
from paracl.training.losses import AdditiveMarginScaleLoss, WeightedHardNegativeLoss
from paracl.training.mining import mine_hard_negatives


class BiEncoderObjective:
    """columns(batch) -> texts per column; loss(embeddings per column) -> scalar."""

    per_example = False

    def __init__(self, columns: list[str], loss: Callable[[list[Tensor]], Tensor], name: str):
        self.column_names, self._loss, self.name = columns, loss, name

    def prepare(self, mega: pd.DataFrame, model: SentenceTransformer) -> pd.DataFrame:
        """Hook run on each mega-batch before it is split (mining); identity by default."""
        return mega

    def columns(self, batch: pd.DataFrame) -> list[list[str]]:
        return [batch[c].astype(str).tolist() for c in self.column_names]

    def loss(self, reps: list[Tensor]) -> Tensor:
        return self._loss(reps)


def infonce(
    model: SentenceTransformer, temperature: float, hard_negatives: bool
) -> BiEncoderObjective:
    """PPDB paper Eq. 1 / SimCSE: sentence-transformers' MNRL with scale = 1 / tau."""
    mnrl = MultipleNegativesRankingLoss(model, scale=1.0 / temperature)
    cols = ["anchor", "positive"] + (["negative"] if hard_negatives else [])
    return BiEncoderObjective(
        cols, lambda reps: mnrl.compute_loss_from_embeddings(reps, None), "MNRL(InfoNCE)"
    )


def weighted_hard_negatives(temperature: float, alpha: float) -> BiEncoderObjective:
    """JCSE Eq. 4 with weight alpha on each anchor's own hard negative."""
    loss = WeightedHardNegativeLoss(temperature, alpha)
    return BiEncoderObjective(
        ["anchor", "positive", "negative"], lambda r: loss(r[0], r[1], r[2]), f"JCSE(alpha={alpha})"
    )


class AdditiveMarginObjective(BiEncoderObjective):
    """AMS loss; hard negatives = the dataset's (if any) + mined from the mega-batch."""

    def __init__(
        self,
        margin: float,
        scale: float,
        gamma: float,
        mine_k: int,
        threshold: float | None,
        batch_texts: Callable[[SentenceTransformer, list[str]], Tensor],
    ):
        loss = AdditiveMarginScaleLoss(margin, scale, gamma)
        super().__init__(
            ["anchor", "positive", "hard"],
            lambda r: loss(r[0], r[1], r[2] if r[2].numel() else None),
            f"AMS(m={margin},s={scale},g={gamma})",
        )
        self.mine_k, self.threshold, self._embed = mine_k, threshold, batch_texts

    def prepare(self, mega: pd.DataFrame, model: SentenceTransformer) -> pd.DataFrame:
        """Algorithm 2: mine each pair's closest other positives across the mega-batch.

        With several processes each embeds its share of the mega-batch and the shares are
        gathered, so every rank mines on the same matrix and picks the same negatives."""
        mined: list[list[str]] = [[] for _ in range(len(mega))]
        if self.mine_k > 0 and len(mega) > 1:
            was = model.training
            model.eval()
            share = mega.iloc[parallel.local_rows(len(mega))]
            with torch.inference_mode():
                a = self._embed(model, share["anchor"].astype(str).tolist())
                p = self._embed(model, share["positive"].astype(str).tolist())
                a, p = all_gather_with_grad(a), all_gather_with_grad(p)
            model.train(was)
            positives = mega["positive"].astype(str).tolist()
            idx = mine_hard_negatives(a, p, self.mine_k, self.threshold)
            mined = [[positives[j] for j in row] for row in idx]
        own = mega["negative"] if "negative" in mega else pd.Series([None] * len(mega))
        hard = [
            ([str(n)] if isinstance(n, str) and n else []) + m
            for n, m in zip(own, mined, strict=True)
        ]
        return mega.assign(hard=hard)

    def columns(self, batch: pd.DataFrame) -> list[list[str]]:
        flat = [t for row in batch["hard"] for t in row]
        return [batch["anchor"].astype(str).tolist(), batch["positive"].astype(str).tolist(), flat]

    def loss(self, reps: list[Tensor]) -> Tensor:
        return self._loss(reps)
