"""InfoNCE with in-batch negatives (PPDB paper Eq. 1, SimCSE), and with each pair's own
hard negative added (supervised SimCSE: NLI contradictions).

sentence-transformers' MultipleNegativesRankingLoss computes it (scale = 1 / tau), so
this module only says which columns a method embeds. Used by simcse_unsup, simcse_sup,
ppdb, roundtrip and paraphraser, which differ in their input artifact alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from paracl.parts.losses.objective import BiEncoderObjective

if TYPE_CHECKING:  # annotations only: the loss modules load without sentence_transformers
    from sentence_transformers import SentenceTransformer


@dataclass(frozen=True)
class Params:
    """The method entry's own keys (params.yaml train_contrastive.methods.<name>)."""

    hard_negatives: bool = False  # add each row's `negative` column (SimCSE supervised)


class _SomeNegatives(BiEncoderObjective):
    """Hard negatives where a row has one (SICK: a contradiction for ~1 premise in 10):
    the batch's present negatives are extra candidates for every anchor, as SimCSE's
    hard negatives are, and a row without one contrasts with the batch alone."""

    partial_negatives = True

    def columns(self, batch: pd.DataFrame) -> list[list[str]]:
        negatives = [str(t) for t in batch["negative"] if isinstance(t, str) and t]
        return [batch[c].astype(str).tolist() for c in ("anchor", "positive")] + [negatives]


def objective(model: SentenceTransformer, params: Params, cfg: dict) -> BiEncoderObjective:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    mnrl = MultipleNegativesRankingLoss(model, scale=1.0 / cfg["temperature"])
    cols = ["anchor", "positive"] + (["negative"] if params.hard_negatives else [])
    kind = _SomeNegatives if params.hard_negatives else BiEncoderObjective
    return kind(cols, lambda reps: mnrl.compute_loss_from_embeddings(reps, None), "MNRL(InfoNCE)")
