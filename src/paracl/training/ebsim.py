"""EBSIM (§3.2-3.3): weakly supervised triples from titled documents, and their training step.

Triples (§3.2):
- token level: embed the title and every sentence of its article (mean pooling, cosine,
  Eq. 1), sort; <title, relevant_1, relevant_x> with x drawn (seeded) from 2..K;
- structure level: mask the words of relevant_1 whose similarity to some title word is
  >= eta (Eq. 3), at most `max_mask` (50 %) of its words, most similar first:
  <title, relevant_1, relevant_1^(drop)>; no triple when no word reaches eta.

Word similarity: the paper uses 200-d word2vec trained on its corpus; offline we use the
encoder's own input (wordpiece) embeddings, a word being the mean of its pieces — static
vectors from the same model, no extra training. Words come from the corpus `tokens`.

Training (§3.3): the pair (title, s) is cross-encoded ([CLS] t [SEP] s [SEP]) by the
encoder's transformer and scored by the RA/AA heads of losses/ebsim_triplet.py.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sentence_transformers import SentenceTransformer

from paracl.device import autocast
from paracl.errors import InputError
from paracl.training.losses.ebsim_triplet import EbsimTripletLoss

log = logging.getLogger(__name__)


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


def mask_similar_words(
    model: SentenceTransformer,
    title_words: list[str],
    words: list[str],
    eta: float,
    max_mask: float,
) -> list[str] | None:
    """Eq. 3: [MASK] the words similar (>= eta) to a title word; None if none qualifies."""
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
    mask = model.tokenizer.mask_token or "[MASK]"
    return [mask if i in chosen else w for i, w in enumerate(words)]


@torch.inference_mode()
def build_triples(
    corpus: pd.DataFrame,
    model: SentenceTransformer,
    eta: float,
    max_mask: float,
    seed: int,
    max_docs: int | None = None,
    where: str = "corpus",
) -> pd.DataFrame:
    """(anchor=title, positive=relevant_1, negative=relevant_x or relevant_1^drop, kind)."""
    need = {"doc_id", "title", "text"}
    if not need <= set(corpus.columns):
        raise InputError(
            f"{where}: EBSIM needs corpus columns {sorted(need)}; has {list(corpus.columns)}"
        )
    rng = np.random.default_rng(seed)
    docs = corpus[corpus["title"].astype(str).str.strip() != ""]
    groups = [g for _, g in docs.groupby("doc_id", sort=True) if len(g) >= 2]
    if max_docs is not None:
        groups = groups[:max_docs]
    rows = []
    for g in groups:
        title = str(g["title"].iloc[0])
        texts = g["text"].astype(str).tolist()
        emb = model.encode(
            [title] + texts,
            convert_to_tensor=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        order = torch.argsort(emb[1:] @ emb[0], descending=True, stable=True).tolist()
        first = order[0]
        x = order[int(rng.integers(1, len(order)))]
        rows.append((title, texts[first], texts[x], "token"))
        words = _words(g.iloc[first])
        dropped = mask_similar_words(model, title.split(), words, eta, max_mask)
        if dropped is not None:
            rows.append((title, texts[first], " ".join(dropped), "structure"))
    if not rows:
        raise InputError(
            f"{where}: no document has a title and at least 2 sentences; EBSIM needs titled "
            "multi-sentence documents (a wiki40b or jaquad corpus; plain text has no titles)"
        )
    return pd.DataFrame(rows, columns=["anchor", "positive", "negative", "kind"])


class EbsimObjective:
    """Cross-encoder multi-aspect triplet step; the heads are trained alongside the encoder."""

    per_example = True

    def __init__(
        self, model: SentenceTransformer, aspects: tuple[str, ...], beta: float, max_len: int
    ):
        hidden = model[0].auto_model.config.hidden_size
        self.loss_fn = EbsimTripletLoss(hidden, aspects, beta).to(model.device)
        self.max_len = max_len
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
        return self.loss_fn.scores(hidden, seq == 0, seq == 1)

    def step(
        self, model: SentenceTransformer, batch: pd.DataFrame, mini: int, device, scale=1.0
    ) -> float:
        """Per-example loss: plain accumulation over mini-batches is exact here. The
        batch mean is multiplied by `scale` (a rank's share of a global batch)."""
        total = 0.0
        for start in range(0, len(batch), mini):
            part = batch.iloc[start : start + mini]
            t = part["anchor"].astype(str).tolist()
            with autocast(device):
                pos = self._pair_scores(model, t, part["positive"].astype(str).tolist())
                neg = self._pair_scores(model, t, part["negative"].astype(str).tolist())
            loss = self.loss_fn(pos, neg) * (len(part) / len(batch) * scale)
            loss.backward()
            total += float(loss.detach())
        return total
