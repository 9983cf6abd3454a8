"""The contrastive losses of the papers: one module per loss, named in params.yaml.

A method entry `train_contrastive.methods.<name>: {loss: <loss>, input: ..., ...}` picks
its module from `LOSSES` (`infonce`, `additive_margin`, `weighted_hard_negative`,
`ebsim_triplet`). Each module owns everything its loss needs:

- `Params`: a frozen dataclass of the entry's own keys, with the papers' defaults;
- `objective(model, params, cfg) -> objective`: what the trainer optimises, a
  `BiEncoderObjective` of objective.py (the columns to embed, the loss on their
  embeddings, any batch preparation such as AMS's mega-batch mining; cfg = the shared
  train_contrastive keys) or, for EBSIM, one of its own;
- optionally `examples(path, model, params, cfg, seed) -> DataFrame`, where the training
  rows are not the input's pairs as they are (EBSIM builds triples from the corpus).

Adding a loss = one file here + one line in LOSSES. InfoNCE with in-batch negatives is
sentence-transformers' MultipleNegativesRankingLoss; the others are implemented on
embeddings (or, for EBSIM, cross-encoded pair scores), so one implementation serves full
and GradCache'd batches alike.
"""

from types import ModuleType

from paracl.parts.losses import additive_margin, ebsim_triplet, infonce, weighted_hard_negative
from paracl.parts.losses.additive_margin import AdditiveMarginScaleLoss
from paracl.parts.losses.ebsim_triplet import EbsimTripletLoss
from paracl.parts.losses.weighted_hard_negative import WeightedHardNegativeLoss

LOSSES: dict[str, ModuleType] = {
    "infonce": infonce,  # SimCSE (unsup/sup), PPDB, round-trip, paraphraser
    "jcse": weighted_hard_negative,  # JCSE Eq. 4 (hard_negative_weight: stage one 0, two 1)
    "ams": additive_margin,  # cross-lingual PI: additive margin + mega-batch mining
    "ebsim": ebsim_triplet,  # EBSIM RA + AA triplets from titled documents
}

__all__ = ["LOSSES", "AdditiveMarginScaleLoss", "EbsimTripletLoss", "WeightedHardNegativeLoss"]
