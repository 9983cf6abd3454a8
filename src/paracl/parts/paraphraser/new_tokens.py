"""The new tokens of a decoder-only paraphraser, when its vocabulary is frozen.

Full fine-tuning of SmolLM2-135M costs seconds per step on two cores, and gemma-3-270m
carries a 262k × 640 embedding matrix (168M of its 268M weights) whose AdamW state alone
is 1.3 GB. So, by params, only the top `train_layers` transformer layers (+ the final
norm) train (paracl.core.freeze, shared with the contrastive encoder), and with
`freeze_embeddings` the vocabulary's embeddings stay fixed while the new tokens' rows
(tags, separator) train through a small delta (`NewTokens`), merged into the embedding
matrix before saving.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F


def init_from_names(model, tokenizer, ids: Iterable[int]) -> None:
    """Start each new token's embedding at the mean of its name's pieces ("<SIM95>" →
    S, IM, 95): the tags then differ from one another before any training."""
    ids = list(ids)
    weight = model.get_input_embeddings().weight
    with torch.no_grad():
        for i in ids:
            name = tokenizer.convert_ids_to_tokens(i).strip("<>").replace("_", "-")
            pieces = [p for p in tokenizer(name, add_special_tokens=False)["input_ids"]]
            pieces = [p for p in pieces if p not in ids]
            if pieces:
                weight[i] = weight[pieces].mean(0)


class NewTokens:
    """A trainable delta on the embedding rows of `ids`, added by a forward hook on the
    (frozen) input embeddings; `merge` writes it into the matrix and removes the hook.
    The delta is registered on the embedding module, so the trainer's optimizer and its
    best-epoch snapshot see it like any other trained weight."""

    NAME = "paracl_new_token_delta"

    def __init__(self, model, ids: Sequence[int]):
        self.emb = model.get_input_embeddings()
        weight = self.emb.weight
        self.ids = torch.tensor(sorted(set(ids)), device=weight.device)
        self.index = torch.full((weight.shape[0],), -1, dtype=torch.long, device=weight.device)
        self.index[self.ids] = torch.arange(len(self.ids), device=weight.device)
        delta = torch.nn.Parameter(torch.zeros(len(self.ids), weight.shape[1], dtype=weight.dtype))
        self.emb.register_parameter(self.NAME, delta)
        self.handle = self.emb.register_forward_hook(self._add)

    def _scale(self):
        scale = getattr(self.emb, "embed_scale", 1.0)  # gemma scales embeddings by sqrt(d)
        return scale.to(self.emb.weight.dtype) if torch.is_tensor(scale) else scale

    def _add(self, module, args, output):
        loc = self.index[args[0]]
        delta = F.embedding(loc.clamp(min=0), getattr(module, self.NAME))
        return output + delta * (loc >= 0).unsqueeze(-1).to(output.dtype) * self._scale()

    def merge(self) -> None:
        self.handle.remove()
        delta = self.emb._parameters.pop(self.NAME)
        with torch.no_grad():
            self.emb.weight[self.ids] += delta.detach().to(self.emb.weight.dtype)
