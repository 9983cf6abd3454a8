"""Contrastive losses of the papers that sentence-transformers does not ship, one per file.

Every loss here works on embeddings (or, for EBSIM, on cross-encoded pair scores), not on
tokenised features: the trainer computes the embeddings (with GradCache when a batch is
split into mini-batches), so one loss implementation serves full and cached batches alike.
InfoNCE with in-batch negatives (PPDB paper Eq. 1, SimCSE) is sentence-transformers'
MultipleNegativesRankingLoss and is used from there.
"""

from paracl.training.losses.additive_margin import AdditiveMarginScaleLoss
from paracl.training.losses.ebsim_triplet import EbsimTripletLoss
from paracl.training.losses.weighted_hard_negative import WeightedHardNegativeLoss

__all__ = ["AdditiveMarginScaleLoss", "EbsimTripletLoss", "WeightedHardNegativeLoss"]
