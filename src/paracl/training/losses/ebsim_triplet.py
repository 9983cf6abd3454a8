"""EBSIM's multi-aspect triplet loss on cross-encoded pairs (§3.3, Eq. 5-13).

For a triple <t, s_p, s_n> the encoder reads the pairs (t, s_p) and (t, s_n) together
([CLS] t [SEP] s [SEP]); two heads score each pair:

- relation aspect (RA): D = sigmoid(W_d h_cls + b_d), xi_RA = -D           (Eq. 7-8)
- alignment aspect (AA): soft alignment of t's and s's tokens (Eq. 10), fusion
  W_f [a; a'; a*a'; a-a'] + b_f (Eq. 11), max-pooling, A = sigmoid(W_A [a_f*b_f; a_f-b_f] + b_A),
  xi_AA = A                                                                 (Eq. 12-13)

and each aspect contributes max(xi(t, s_n) - xi(t, s_p) + beta, 0) (Eq. 5), beta = 1.
`aspects` selects the ablations of Table 5: ("ra", "aa") full, ("ra",) is -AA. (-AA-RA
trains nothing: Table 5's -AA-RA row equals plain BERT, i.e. our `none`.)
The heads are training-only; the saved encoder is the transformer with mean pooling.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def triplet_margin(xi_pos: Tensor, xi_neg: Tensor, beta: float) -> Tensor:
    """Eq. 5 averaged over the batch: max(xi(t, s_n) - xi(t, s_p) + beta, 0)."""
    return torch.clamp(xi_neg - xi_pos + beta, min=0).mean()


class RelationHead(nn.Module):
    """D(s_a, s_b) = sigmoid(W_d h_cls + b_d) (Eq. 7); xi_RA = -D."""

    def __init__(self, hidden: int):
        super().__init__()
        self.proj = nn.Linear(hidden, 1)

    def forward(self, h_cls: Tensor) -> Tensor:
        return -torch.sigmoid(self.proj(h_cls)).squeeze(-1)


class AlignmentHead(nn.Module):
    """xi_AA = A(s_a, s_b) from token alignment between the two segments (Eq. 10-12)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.fuse = nn.Linear(4 * hidden, hidden)
        self.out = nn.Linear(2 * hidden, 1)

    def _fused(self, x: Tensor, aligned: Tensor, mask: Tensor) -> Tensor:
        f = self.fuse(torch.cat([x, aligned, x * aligned, x - aligned], dim=-1))
        return f.masked_fill(~mask[..., None], -torch.inf).amax(dim=1)  # MaxPooling

    def forward(self, hidden: Tensor, mask_a: Tensor, mask_b: Tensor) -> Tensor:
        """hidden: (B, L, H) of the pair; mask_a / mask_b: (B, L) bool token masks of a / b."""
        scores = hidden @ hidden.transpose(1, 2)  # a_i . b_j for every token pair
        pair = mask_a[:, :, None] & mask_b[:, None, :]
        scores = scores.masked_fill(~pair, -torch.inf)
        # a'_i: softmax over b's tokens; b'_j: softmax over a's tokens (Eq. 10).
        a_att = torch.softmax(scores, dim=2).nan_to_num(0.0)
        b_att = torch.softmax(scores, dim=1).nan_to_num(0.0)
        a_aligned = a_att @ hidden
        b_aligned = b_att.transpose(1, 2) @ hidden
        a_f = self._fused(hidden, a_aligned, mask_a)
        b_f = self._fused(hidden, b_aligned, mask_b)
        return torch.sigmoid(self.out(torch.cat([a_f * b_f, a_f - b_f], dim=-1))).squeeze(-1)


class EbsimTripletLoss(nn.Module):
    """L = L_RA + L_AA over the selected aspects; call with the two encoded pair batches."""

    def __init__(self, hidden: int, aspects: tuple[str, ...] = ("ra", "aa"), beta: float = 1.0):
        super().__init__()
        unknown = set(aspects) - {"ra", "aa"}
        if unknown or not aspects:
            raise ValueError(f"aspects must be a non-empty subset of ra, aa; got {aspects}")
        self.aspects, self.beta = tuple(aspects), beta
        self.ra = RelationHead(hidden) if "ra" in aspects else None
        self.aa = AlignmentHead(hidden) if "aa" in aspects else None

    def scores(self, hidden: Tensor, mask_a: Tensor, mask_b: Tensor) -> dict[str, Tensor]:
        """xi per aspect for one batch of pairs (hidden: (B, L, H), [CLS] at position 0)."""
        out = {}
        if self.ra is not None:
            out["ra"] = self.ra(hidden[:, 0])
        if self.aa is not None:
            out["aa"] = self.aa(hidden, mask_a, mask_b)
        return out

    def forward(self, pos: dict[str, Tensor], neg: dict[str, Tensor]) -> Tensor:
        return sum(triplet_margin(pos[k], neg[k], self.beta) for k in self.aspects)
