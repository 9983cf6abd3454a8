"""EBSIM's retrieval (§3.2), for stage ebsim_retrieve: once per titled corpus, no seed.

A fixed retriever (the base model, train_contrastive.base_model, or
ebsim_retrieve.retriever; mean pooling, never trained: §4.1's BERT-base sentence encoder)
embeds each title and its document's sentences and ranks them by cosine to the title
(Eq. 1; relevant_1 first). The triples therefore depend neither on the encoder being
trained nor on its training-only pooling (cls_mlp's random MLP). Then relevant_1's words
whose similarity to some title word is >= eta are masked (Eq. 3), at most `max_mask` (50 %)
of its words, most similar first.

Word similarity: the paper uses 200-d word2vec trained on its corpus; offline we use the
retriever's input (wordpiece) embeddings, a word being the mean of its pieces — static
vectors, no extra training. Words come from the corpus `tokens`. The masked words are
stored as nulls: each run writes its encoder's mask token there
(paracl.parts.losses.ebsim_triplet.triples), along with its seeded draw of relevant_x.

A module of its own, outside losses/, so that the stage reruns only when this code does.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from paracl.core import schemas
from paracl.core.device import select_device
from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_parquet, write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import OtherSection, RunWide, Section, param
from paracl.core.stage import args

if TYPE_CHECKING:  # loaded by the functions that rank: the params check runs without them
    import torch
    from sentence_transformers import SentenceTransformer

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --

EBSIM_RANKINGS = "data/ebsim/"  # dvc.yaml: ebsim_retrieve@<corpus> writes <corpus>.parquet here


class EbsimRetrieve(Section):
    # name -> titled corpus (data/ebsim/<name>.parquet; stage ebsim_retrieve@<name>)
    corpora: dict[str, str] = param(help="titled corpora EBSIM's methods train on; {} = none")
    retriever: str | None = param(
        help="ranks sentences (mean pooling, never trained); null: the base model"
    )
    eta: float = param(min=-1.0, max=1.0, help="word similarity that masks a word (Eq. 3)")
    max_mask: float = param(min=0.0, max=1.0, help="at most this share of its words")
    max_docs: int | None = param(min=1, help="the first N titled documents; null = all")


class Params(RunWide):
    """What stage ebsim_retrieve reads of params.yaml: the run-wide keys and these."""

    ebsim_retrieve: EbsimRetrieve
    train_contrastive: OtherSection  # its base_model: the retriever when `retriever` is null

    @classmethod
    def check(cls, values: dict) -> None:
        """Each ebsim method trains on a ranking this stage writes."""
        for name, entry in values["train_contrastive"].get("methods", {}).items():
            if entry.get("loss") == "ebsim":
                _check_ebsim_input(name, entry["input"], values["ebsim_retrieve"]["corpora"])


def _check_ebsim_input(name: str, path: str, corpora: dict[str, str]) -> None:
    """An ebsim method trains on a ranking that stage ebsim_retrieve writes
    (data/ebsim/<corpus>.parquet); without its corpus there, no stage would write it."""
    writes = [f"{EBSIM_RANKINGS}{key}.parquet" for key in corpora]
    if path not in writes:
        what = ", ".join(writes) or "none: ebsim_retrieve.corpora is empty"
        raise ParamsError(
            f"'train_contrastive.methods.{name}.input': {path} is no ranking that stage "
            f"ebsim_retrieve writes (it writes: {what}); name the titled corpus in "
            "ebsim_retrieve.corpora"
        )


log = logging.getLogger(__name__)


def load_retriever(model_id: str, device: torch.device) -> SentenceTransformer:
    """The fixed sentence encoder that ranks the sentences (stage ebsim_retrieve):
    `model_id` resolved as every model is (paracl.core.models), mean pooling, its own inference
    length, eval mode and no gradients (it is not the encoder being trained)."""
    from paracl.core.models import resolve_model
    from paracl.parts.encoder.build import build_encoder

    resolved = resolve_model(model_id)
    log.info("EBSIM retriever: %s, mean pooling (fixed)", resolved.describe())
    retriever = build_encoder(resolved.path, "mean", max_seq_length=None).to(device).eval()
    retriever.requires_grad_(False)
    return retriever


def _words(row) -> list[str]:
    tokens = row.get("tokens") if hasattr(row, "get") else None
    if tokens is not None and len(tokens):
        return [str(t) for t in tokens]
    return str(row["text"]).split()


def word_vectors(model: SentenceTransformer, words: list[str]) -> torch.Tensor:
    """Static vectors: mean of each word's wordpiece input embeddings, L2-normalised."""
    import torch
    import torch.nn.functional as F

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
    import torch

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
            "multi-sentence documents (a wiki40b, jaquad or wiki_lines corpus; plain text has "
            "no titles)"
        )
    # One encode call for every title and sentence: sentence-transformers sorts them by
    # length and fills its batches (one call per document ran many small, padded batches).
    docs_text = [[str(g["title"].iloc[0])] + g["text"].astype(str).tolist() for g in groups]
    flat = [t for d in docs_text for t in d]
    log.info("EBSIM: embedding %d titles and sentences of %d documents", len(flat), len(groups))
    import torch

    with torch.inference_mode():  # the retriever is fixed: no autograd graph
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


# dvc.yaml's metrics (paracl.core.key_figures): documents ranked
KEY_FIGURES = ("documents",)


def main(params: dict) -> None:
    paths = args("name", "corpus", "ranking", "metrics")
    cfg = params["ebsim_retrieve"]
    if cfg["corpora"].get(paths.name) != paths.corpus:
        raise ParamsError(
            f"ebsim_retrieve.corpora.{paths.name} is {cfg['corpora'].get(paths.name)!r}, "
            f"not the {paths.corpus} this command reads: rerun `dvc repro`"
        )
    retriever_id = cfg["retriever"] or params["train_contrastive"]["base_model"]
    retriever = load_retriever(retriever_id, select_device(params["device"]))
    start = time.perf_counter()
    ranking = rank_documents(
        read_parquet(paths.corpus), retriever, cfg["eta"], cfg["max_mask"], cfg["max_docs"],
        paths.corpus,
    )  # fmt: skip
    write_parquet(ranking, paths.ranking, schemas.EBSIM_RANKING)
    metrics = {
        "corpus": paths.corpus,
        "retriever": retriever_id,
        "documents": len(ranking),
        "texts_embedded": int(len(ranking) + ranking["ranked"].map(len).sum()),
        "structure_level": int(ranking["masked"].notna().sum()),  # documents with a mask
    }
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    logging.getLogger("ebsim_retrieve").info(
        "%s: %d documents ranked in %.1f s", paths.name, len(ranking), time.perf_counter() - start
    )
