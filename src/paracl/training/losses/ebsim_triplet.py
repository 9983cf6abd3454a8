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

Triples (§3.2). The retrieval depends on no seed, so stage ebsim_retrieve runs it once per
titled corpus (`rank_documents`, params.yaml ebsim_retrieve) with a fixed retriever: the
base model (train_contrastive.base_model) or ebsim_retrieve.retriever, mean pooling,
never trained (§4.1: a BERT-base sentence encoder), so that the triples do not depend on
the encoder being trained or on its training-only pooling (cls_mlp's random MLP). Each
ebsim run reads that ranking (its `input`) and draws its own (`triples`):
- token level: the title's sentences sorted by cosine to it (mean pooling, Eq. 1);
  <title, relevant_1, relevant_x> with x drawn (the run's seed) from 2..K;
- structure level: relevant_1 with its words whose similarity to some title word is
  >= eta masked (Eq. 3), at most `max_mask` (50 %) of its words, most similar first:
  <title, relevant_1, relevant_1^(drop)>; no triple when no word reaches eta.

Word similarity: the paper uses 200-d word2vec trained on its corpus; offline we use the
retriever's input (wordpiece) embeddings, a word being the mean of its pieces — static
vectors, no extra training. Words come from the corpus `tokens`; the mask is the trained
encoder's mask token ([MASK] where it has none), filled in by the run.

"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer
from torch import Tensor, nn

from paracl import schemas
from paracl.device import DEFAULT_PRECISION, autocast, backward
from paracl.errors import InputError
from paracl.io import ArtifactError, read_parquet

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


def _words(row) -> list[str]:
    tokens = row.get("tokens") if hasattr(row, "get") else None
    if tokens is not None and len(tokens):
        return [str(t) for t in tokens]
    return str(row["text"]).split()


def word_vectors(model: SentenceTransformer, words: list[str]) -> torch.Tensor:
    """Static vectors: mean of each word's wordpiece input embeddings, L2-normalised."""
    tok = model.tokenizer
    table = model[0].auto_model.get_input_embeddings().weight.detach()
    out = []
    for w in words:
        ids = tok(w, add_special_tokens=False)["input_ids"] or [tok.unk_token_id or 0]
        out.append(table[ids].float().mean(0))
    return F.normalize(torch.stack(out), dim=-1) if out else torch.zeros(0, table.size(1))


def masked_words(
    model: SentenceTransformer,
    title_words: list[str],
    words: list[str],
    eta: float,
    max_mask: float,
) -> list[str | None] | None:
    """Eq. 3: `words` with those similar (>= eta, `model`'s word vectors) to a title word
    replaced by None, at most `max_mask` of them, most similar first; None if none
    qualifies. The run writes its encoder's mask token in their place (`triples`)."""
    if not words or not title_words:
        return None
    sims = word_vectors(model, words) @ word_vectors(model, title_words).T
    best = sims.max(dim=1).values
    candidates = [
        i for i in torch.argsort(best, descending=True, stable=True).tolist() if best[i] >= eta
    ]
    cap = int(max_mask * len(words))
    chosen = set(candidates[:cap])
    if not chosen:
        return None
    return [None if i in chosen else w for i, w in enumerate(words)]


@torch.inference_mode()
def rank_documents(
    corpus: pd.DataFrame,
    retriever: SentenceTransformer,
    eta: float,
    max_mask: float,
    max_docs: int | None = None,
    where: str = "corpus",
) -> pd.DataFrame:
    """The retrieval of §3.2, which no seed changes (stage ebsim_retrieve): per titled
    document of at least 2 sentences (the first `max_docs` by doc_id), its sentences
    ranked by cosine to the title, and relevant_1's words masked (`masked_words`).
    Columns of schemas.EBSIM_RANKING."""
    need = {"doc_id", "title", "text"}
    if not need <= set(corpus.columns):
        raise InputError(
            f"{where}: EBSIM needs corpus columns {sorted(need)}; has {list(corpus.columns)}"
        )
    docs = corpus[corpus["title"].astype(str).str.strip() != ""]
    groups = [g for _, g in docs.groupby("doc_id", sort=True) if len(g) >= 2]
    if max_docs is not None:
        groups = groups[:max_docs]
    if not groups:
        raise InputError(
            f"{where}: no document has a title and at least 2 sentences; EBSIM needs titled "
            "multi-sentence documents (a wiki40b or jaquad corpus; plain text has no titles)"
        )
    # One encode call for every title and sentence: sentence-transformers sorts them by
    # length and fills its batches (one call per document ran many small, padded batches).
    docs_text = [[str(g["title"].iloc[0])] + g["text"].astype(str).tolist() for g in groups]
    flat = [t for d in docs_text for t in d]
    log.info("EBSIM: embedding %d titles and sentences of %d documents", len(flat), len(groups))
    emb_all = retriever.encode(
        flat, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=True
    )
    starts = np.cumsum([0] + [len(d) for d in docs_text[:-1]])
    rows = []
    for g, d, start in zip(groups, docs_text, starts, strict=True):
        title, texts = d[0], d[1:]
        emb = emb_all[start : start + len(d)]
        order = torch.argsort(emb[1:] @ emb[0], descending=True, stable=True).tolist()
        words = _words(g.iloc[order[0]])
        masked = masked_words(retriever, title.split(), words, eta, max_mask)
        rows.append((str(g["doc_id"].iloc[0]), title, [texts[i] for i in order], masked))
    return pd.DataFrame(rows, columns=schemas.EBSIM_RANKING.names)


def triples(
    ranking: pd.DataFrame, seed: int, mask: str, max_docs: int | None = None
) -> pd.DataFrame:
    """(anchor=title, positive=relevant_1, negative=relevant_x or relevant_1^drop, kind)
    from `ranking` (`rank_documents`, its first `max_docs` documents): x drawn with `seed`,
    masked words written as `mask`."""
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
        scales it for backward in fp16 (paracl.device)."""
        total = 0.0
        for start in range(0, len(batch), mini):
            part = batch.iloc[start : start + mini]
            t = part["anchor"].astype(str).tolist()
            with autocast(device, precision):
                pos = self._pair_scores(model, t, part["positive"].astype(str).tolist())
                neg = self._pair_scores(model, t, part["negative"].astype(str).tolist())
            loss = self.loss_fn(pos, neg) * (len(part) / len(batch) * scale)
            if scaler is None:
                loss.backward()
            else:
                backward(loss, scaler)
            total += float(loss.detach())
        return total

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


def load_retriever(model_id: str, device: torch.device) -> SentenceTransformer:
    """The fixed sentence encoder that ranks the sentences (stage ebsim_retrieve):
    `model_id` resolved as every model is (paracl.models), mean pooling, its own inference
    length, eval mode and no gradients (it is not the encoder being trained)."""
    from paracl.models import resolve_model
    from paracl.training.encoder import build_encoder

    resolved = resolve_model(model_id)
    log.info("EBSIM retriever: %s, mean pooling (fixed)", resolved.describe())
    retriever = build_encoder(resolved.path, "mean", max_seq_length=None).to(device).eval()
    retriever.requires_grad_(False)
    return retriever


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
