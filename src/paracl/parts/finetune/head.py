"""A task head on the encoder's own sentence embedding: the alternative head for a causal LM.

Why it exists: the papers fine-tune BERT with transformers' head on [CLS] through the
pooler, and SimCSE converts every checkpoint so that its pooler *is* the MLP its
contrastive loss trained (`simcse_to_huggingface.py`). A causal LM has no [CLS];
transformers' head reads the last token, which a mean-pooled contrastive loss never
trained. `PooledHead` reads what the encoder's own sentence-transformers stack outputs for
the pair (its Pooling: mean, weighted mean, last token, …) instead. Measured on effect-en
(docs/models.md), it is far worse on contrastively trained encoders, so it is not the
default (evaluate.finetune_head: last_token); it stays selectable to reproduce that.

The head is transformers' causal-LM head otherwise: one linear layer without bias,
initialised N(0, initializer_range), MSE for regression, cross-entropy for classes.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F
from transformers.modeling_outputs import SequenceClassifierOutput


class PooledHead(torch.nn.Module):
    """`encoder` (a SentenceTransformer) → its sentence embedding → a linear task head.

    Called as transformers' sequence classifiers are (`model(input_ids=…,
    attention_mask=…, labels=…)` → `.loss`, `.logits`), so the fine-tuning loop is the
    same for both heads. `base_model` is the transformer, as in transformers' models (what
    `paracl.core.freeze` and `trainable` look under).
    """

    def __init__(self, encoder, num_labels: int, regression: bool):
        super().__init__()
        self.encoder = encoder
        self.regression = regression
        self.score = torch.nn.Linear(encoder.get_embedding_dimension(), num_labels, bias=False)
        std = getattr(self.base_model.config, "initializer_range", 0.02)
        torch.nn.init.normal_(self.score.weight, 0.0, std)

    @property
    def base_model(self) -> torch.nn.Module:
        return self.encoder[0].auto_model

    def forward(self, input_ids, attention_mask, labels=None) -> SequenceClassifierOutput:
        features = {"input_ids": input_ids, "attention_mask": attention_mask}
        logits = self.score(self.encoder(features)["sentence_embedding"])
        loss = None
        if labels is not None and self.regression:
            loss = F.mse_loss(logits.squeeze(-1).float(), labels.float())
        elif labels is not None:
            loss = F.cross_entropy(logits.float(), labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)
