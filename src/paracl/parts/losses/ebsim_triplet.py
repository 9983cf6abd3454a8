"""EBSIM's multi-aspect triplet loss on cross-encoded pairs (§3.3, Eq. 5-13).

For a triple <t, s_p, s_n> the encoder reads the pairs (t, s_p) and (t, s_n) together
([CLS] t [SEP] s [SEP]); two heads score each pair:

- relation aspect (RA): D = sigmoid(W_d h_cls + b_d), xi_RA = -D           (Eq. 7-8)
- alignment aspect (AA): soft alignment of t's and s's tokens (Eq. 10), fusion
  W_f [a; a'; a*a'; a-a'] + b_f (Eq. 11), max-pooling, A = sigmoid(W_A [a_f*b_f; a_f-b_f] + b_A),
  xi_AA = A                                                                 (Eq. 12-13)

and each aspect contributes max(xi(t, s_n) - xi(t, s_p) + beta, 0) (Eq. 5), beta = 1.

Two choices the paper (BERT only) does not have to make, both measured on gemma-3-270m:
- The pair's summary state for RA is the token that has read both sentences: [CLS] (the
  first real token) for a bidirectional encoder, the *last* real token for a causal LM.
  A causal LM's first position has seen nothing but itself, so RA on it scores every
  pair alike: xi(t, s_p) = xi(t, s_n), the loss is beta and nothing trains.
- The heads read the states standardised (a LayerNorm without weights), AA's token
  alignment is scaled by 1/sqrt(hidden) as in scaled dot-product attention, and AA's
  max-pooled features are standardised too. BERT's output is LayerNorm'd already;
  gemma's final states have outlier dimensions (norm ~215 per token), and on them AA's
  sigmoid sat at exactly 0 for every pair, so it gave no gradient: the first
  effect-ja-ebsim run trained ebsim and ebsim_no_aa to identical scores. With the
  three, A starts near 0.2 on gemma and the encoder's gradient is non-zero.
`aspects` selects the ablations of Table 5: ("ra", "aa") full, ("ra",) is -AA. (-AA-RA
trains nothing: Table 5's -AA-RA row equals plain BERT, i.e. our `none`.)
The heads are training-only; the saved encoder is the transformer with mean pooling.

Triples (§3.2): stage ebsim_retrieve ranks each titled document's sentences once, with a
fixed retriever (paracl.stages.ebsim_retrieve); each run reads that ranking (its
`input`) and draws its own (`triples`):
- token level: <title, relevant_1, relevant_x> with x drawn (the run's seed) from 2..K;
- structure level: <title, relevant_1, relevant_1^(drop)>, relevant_1 with its title-like
  words masked (Eq. 3) in the trained encoder's mask token ([MASK] where it has none); no
  triple where no word was masked.

"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from paracl.core import schemas
from paracl.core.device import DEFAULT_PRECISION, autocast, backward
from paracl.core.errors import InputError
from paracl.core.io import ArtifactError, read_parquet

if TYPE_CHECKING:  # annotations only: the loss modules load without sentence_transformers
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)


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
        pooled = f.masked_fill(~mask[..., None], -torch.inf).amax(dim=1)  # MaxPooling
        return F.layer_norm(pooled, pooled.shape[-1:])  # keeps A's sigmoid off its flat ends

    def forward(self, hidden: Tensor, mask_a: Tensor, mask_b: Tensor) -> Tensor:
        """hidden: (B, L, H) of the pair; mask_a / mask_b: (B, L) bool token masks of a / b."""
        scores = hidden @ hidden.transpose(1, 2) / hidden.size(-1) ** 0.5  # a_i . b_j
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

    def scores(
        self, hidden: Tensor, mask_a: Tensor, mask_b: Tensor, summary_at: Tensor
    ) -> dict[str, Tensor]:
        """xi per aspect for one batch of pairs. hidden: (B, L, H); mask_a / mask_b: (B, L)
        bool masks of the two sentences' tokens; summary_at: (B,) the position of each
        pair's summary token (RA's h_cls)."""
        hidden = F.layer_norm(hidden, hidden.shape[-1:])  # heads see O(1) features
        out = {}
        if self.ra is not None:
            out["ra"] = self.ra(hidden[torch.arange(hidden.size(0)), summary_at])
        if self.aa is not None:
            out["aa"] = self.aa(hidden, mask_a, mask_b)
        return out

    def forward(self, pos: dict[str, Tensor], neg: dict[str, Tensor]) -> Tensor:
        return sum(triplet_margin(pos[k], neg[k], self.beta) for k in self.aspects)


def summary_positions(attention_mask: Tensor, causal: bool) -> Tensor:
    """Per row, the first real token ([CLS]) or, for a causal LM, the last one: the only
    state that has read the whole pair. Either padding side (Gemma pads left)."""
    mask = attention_mask.bool()
    if causal:
        return mask.size(1) - 1 - mask.flip(1).int().argmax(dim=1)
    return mask.int().argmax(dim=1)


def is_causal_lm(model: SentenceTransformer) -> bool:
    """A decoder-only LM (Llama, Gemma, GPT-2), i.e. not one of transformers' masked LMs."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    return model[0].auto_model.config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def triples(
    ranking: pd.DataFrame, seed: int, mask: str, max_docs: int | None = None
) -> pd.DataFrame:
    """(anchor=title, positive=relevant_1, negative=relevant_x or relevant_1^drop, kind)
    from `ranking` (paracl.stages.ebsim_retrieve; its first `max_docs` documents): x
    drawn with `seed`, masked words written as `mask`."""
    rng = np.random.default_rng(seed)
    docs = ranking if max_docs is None else ranking.head(max_docs)
    rows = []
    for title, ranked, masked in docs[["title", "ranked", "masked"]].itertuples(index=False):
        if len(ranked) < 2:
            raise InputError(f"ranking of '{title}': EBSIM needs at least 2 sentences")
        rows.append((title, ranked[0], ranked[int(rng.integers(1, len(ranked)))], "token"))
        if masked is not None:
            dropped = " ".join(mask if w is None else str(w) for w in masked)
            rows.append((title, ranked[0], dropped, "structure"))
    return pd.DataFrame(rows, columns=["anchor", "positive", "negative", "kind"])


class EbsimObjective:
    """Cross-encoder multi-aspect triplet step; the heads are trained alongside the encoder."""

    per_example = True
    mega_batch = 1

    def __init__(
        self, model: SentenceTransformer, aspects: tuple[str, ...], beta: float, max_len: int
    ):
        hidden = model[0].auto_model.config.hidden_size
        self.loss_fn = EbsimTripletLoss(hidden, aspects, beta).to(model.device)
        self.max_len = max_len
        self.causal = is_causal_lm(model)
        self.name = f"EBSIM({'+'.join(aspects)}, beta={beta})"

    def prepare(self, mega: pd.DataFrame, model: SentenceTransformer) -> pd.DataFrame:
        return mega

    def _pair_scores(self, model: SentenceTransformer, a: list[str], b: list[str]) -> dict:
        enc = model.tokenizer(
            a, b, padding=True, truncation=True, max_length=self.max_len, return_tensors="pt"
        )
        seq = [[-1 if s is None else s for s in enc.sequence_ids(i)] for i in range(len(a))]
        seq = torch.tensor(seq, device=model.device)
        inputs = {k: v.to(model.device) for k, v in enc.items()}
        hidden = model[0].auto_model(**inputs).last_hidden_state.float()
        summary_at = summary_positions(inputs["attention_mask"], self.causal)
        return self.loss_fn.scores(hidden, seq == 0, seq == 1, summary_at)

    def step(
        self,
        model: SentenceTransformer,
        batch: pd.DataFrame,
        mini: int,
        device,
        scale=1.0,
        scaler: torch.amp.GradScaler | None = None,
        precision: str = DEFAULT_PRECISION,
    ) -> float:
        """Per-example loss: plain accumulation over mini-batches is exact here. The
        batch mean is multiplied by `scale` (a rank's share of a global batch); `scaler`
        scales it for backward in fp16 (paracl.core.device)."""
        total = 0.0
        for start in range(0, len(batch), mini):
            part = batch.iloc[start : start + mini]
            loss = self._loss(model, part, precision) * (len(part) / len(batch) * scale)
            if scaler is None:
                loss.backward()
            else:
                backward(loss, scaler)
            total += float(loss.detach())
        return total

    def _loss(self, model: SentenceTransformer, part: pd.DataFrame, precision: str) -> Tensor:
        """Eq. 5 over `part`'s triples: its (t, s_p) and (t, s_n) pairs cross-encoded."""
        t = part["anchor"].astype(str).tolist()
        with autocast(model.device, precision):
            pos = self._pair_scores(model, t, part["positive"].astype(str).tolist())
            neg = self._pair_scores(model, t, part["negative"].astype(str).tolist())
        return self.loss_fn(pos, neg)

    def loss_of(
        self, model: SentenceTransformer, batch: pd.DataFrame, precision: str = DEFAULT_PRECISION
    ) -> float:
        """The batch's loss without a backward pass (selection: dev_loss)."""
        return float(self._loss(model, batch, precision))

    def parameters(self) -> list[torch.nn.Parameter]:
        """The RA/AA heads: trained beside the encoder, not saved with it."""
        return list(self.loss_fn.parameters())


# keys an ebsim entry once took: the retrieval is stage ebsim_retrieve's, once per corpus
RENAMED = {k: f"ebsim_retrieve.{k} (the retrieval runs once, before training)"
           for k in ("eta", "max_mask", "retriever")}  # fmt: skip


@dataclass(frozen=True)
class Params:
    """The method entry's own keys (params.yaml train_contrastive.methods.<name>)."""

    beta: float = 1.0  # triplet margin (Eq. 5)
    aspects: tuple[str, ...] = ("ra", "aa")  # ("ra",): the -AA ablation (Table 5)

    def __post_init__(self) -> None:
        object.__setattr__(self, "aspects", tuple(self.aspects))
        if self.beta < 0:
            raise ValueError("beta must be >= 0")
        if not self.aspects or set(self.aspects) - {"ra", "aa"}:
            raise ValueError(f"aspects must be a non-empty subset of [ra, aa], got {self.aspects}")


def objective(model: SentenceTransformer, params: Params, cfg: dict) -> EbsimObjective:
    return EbsimObjective(model, params.aspects, params.beta, 2 * cfg["max_seq_length"])


def examples(
    path: str, model: SentenceTransformer, params: Params, cfg: dict, seed: int
) -> pd.DataFrame:
    """EBSIM trains on triples drawn with the run's seed from stage ebsim_retrieve's
    ranking (the entry's `input`, data/ebsim/<corpus>.parquet), its first max_examples
    documents, the masks in the trained encoder's mask token."""
    try:
        ranking = read_parquet(path, schemas.EBSIM_RANKING)
    except ArtifactError as err:
        raise InputError(
            f"{err}: an ebsim method's input is a ranking written by stage ebsim_retrieve "
            "(data/ebsim/<name>.parquet; name its corpus in ebsim_retrieve.corpora)"
        ) from None
    mask = model.tokenizer.mask_token or "[MASK]"
    return triples(ranking, seed, mask, cfg["max_examples"])
