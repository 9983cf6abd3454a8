"""What one training step optimises on a batch of examples: the trainer's contract.

A bi-encoder objective names the text columns to embed and the loss on their embeddings,
so the trainer can run it in one pass or through GradCache without knowing the loss.
Each loss module here builds one (EBSIM's is a cross-encoder objective with its own
forward: its loss is per example, so plain accumulation is exact). It lives beside the
losses, not in paracl.stages.train_contrastive.training: the trainer imports the losses, never the reverse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pandas as pd
import torch
from torch import Tensor

if TYPE_CHECKING:  # annotations only: the loss modules load without sentence_transformers
    from sentence_transformers import SentenceTransformer


class BiEncoderObjective:
    """columns(batch) -> texts per column; loss(embeddings per column) -> scalar."""

    per_example = False
    mega_batch = 1  # batches aggregated before `prepare` (AMS mining: Algorithm 2's M)

    def __init__(self, columns: list[str], loss: Callable[[list[Tensor]], Tensor], name: str):
        self.column_names, self._loss, self.name = columns, loss, name

    def prepare(self, mega: pd.DataFrame, model: SentenceTransformer) -> pd.DataFrame:
        """Hook run on each mega-batch before it is split (mining); identity by default."""
        return mega

    def columns(self, batch: pd.DataFrame) -> list[list[str]]:
        return [batch[c].astype(str).tolist() for c in self.column_names]

    def loss(self, reps: list[Tensor]) -> Tensor:
        return self._loss(reps)

    def parameters(self) -> list[torch.nn.Parameter]:
        """Trainable weights of the loss itself (heads), trained beside the encoder."""
        return []
