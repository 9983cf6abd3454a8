"""Build the sentence encoder to train, and save it so both loaders read it.

Pooling choices:
- `mean`: mean of token states, in training and in the saved model (what
  all-MiniLM-L6-v2 and EBSIM's corpus construction use);
- `cls_mlp`: SimCSE's recipe: [CLS] followed by an MLP (dense + tanh) during training;
  the saved model keeps [CLS] and drops the MLP, as SimCSE does for its unsupervised models.

Saving goes through SentenceTransformer.save into a temporary directory that replaces the
target only when complete; the transformer weights sit at the top level of that directory,
so `transformers.AutoModel.from_pretrained(path)` loads them too.
"""

from __future__ import annotations

from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from torch import Tensor

from paracl.io import atomic_dir

POOLING = ("mean", "cls_mlp")


def build_encoder(
    model_path: str | Path,
    pooling: str = "mean",
    max_seq_length: int = 32,
    freeze_embeddings: bool = False,
) -> SentenceTransformer:
    """A SentenceTransformer over `model_path` (a transformers or sentence-transformers dir)."""
    if pooling not in POOLING:
        raise ValueError(f"pooling must be one of {POOLING}, got {pooling!r}")
    transformer = Transformer(str(model_path), max_seq_length=max_seq_length)
    dim = transformer.get_embedding_dimension()
    modules: list[torch.nn.Module] = [transformer]
    if pooling == "mean":
        modules.append(Pooling(dim, "mean"))
    else:
        modules += [Pooling(dim, "cls"), Dense(dim, dim, activation_function=torch.nn.Tanh())]
    model = SentenceTransformer(modules=modules, device="cpu")
    if freeze_embeddings:
        # the cross-lingual paper freezes the embedding layer to keep zero-shot transfer
        for param in transformer.auto_model.get_input_embeddings().parameters():
            param.requires_grad_(False)
    return model


def inference_model(model: SentenceTransformer) -> SentenceTransformer:
    """The model to save: SimCSE's training-only MLP removed (a no-op for mean pooling)."""
    modules = [m for m in model if not isinstance(m, Dense)]
    return SentenceTransformer(modules=modules, device=str(model.device))


def save_encoder(model: SentenceTransformer, path: str | Path) -> None:
    """Save atomically; the directory loads with SentenceTransformer and AutoModel."""
    with atomic_dir(path) as tmp:
        inference_model(model).save(str(tmp), create_model_card=False)


def embed(model: SentenceTransformer, texts: list[str]) -> Tensor:
    """Sentence embeddings with autograd (the caller decides no_grad / train mode)."""
    features = model.preprocess(texts)
    features = {k: v.to(model.device) if isinstance(v, Tensor) else v for k, v in features.items()}
    return model(features)["sentence_embedding"]
