"""One forward pass of a SentenceTransformer with autograd, as `encode` would embed.

Why a module of its own: the trainer, model selection and the mega-batch miner of the AMS
loss all embed this way, and a loss should not load the code that builds and saves
encoders to do it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

if TYPE_CHECKING:  # annotations only: the losses import this without sentence_transformers
    from sentence_transformers import SentenceTransformer


def default_prompt(model: SentenceTransformer) -> str | None:
    """The prompt `encode` puts before each text when none is named (None: none)."""
    name = model.default_prompt_name
    return model.prompts.get(name) if name else None


def embed(model: SentenceTransformer, texts: list[str]) -> Tensor:
    """Sentence embeddings with autograd (the caller decides no_grad / train mode), with the
    default prompt, as `model.encode` embeds them."""
    features = model.preprocess(texts, prompt=default_prompt(model))
    features = {k: v.to(model.device) if isinstance(v, Tensor) else v for k, v in features.items()}
    return model(features)["sentence_embedding"]
