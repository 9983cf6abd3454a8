"""paracl.core.freeze: the top `train_layers` layers (+ the final norm) train, the rest is frozen,
and dropout still acts below them (SimCSE's two views differ in every layer)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from conftest import part_config
from transformers import AutoModel

from paracl.core.errors import UserError
from paracl.core.freeze import freeze
from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.stages.train_contrastive.training.trainer import TrainConfig, train

PARAM = "train_contrastive.train_layers"


def trainable(model) -> set[str]:
    return {n for n, p in model.named_parameters() if p.requires_grad}


def test_top_layer_and_final_norm_of_a_llama(tiny_llama):
    model = AutoModel.from_pretrained(tiny_llama)
    assert freeze(model, 1, False, PARAM) == "1 of 2"
    names = trainable(model)
    assert names and all(n.startswith("layers.1.") or n == "norm.weight" for n in names)
    assert "norm.weight" in names
    assert {n for n, _ in model.named_parameters() if n.startswith("layers.1.")} <= names


def test_top_layer_of_a_bert(tiny_bert):
    model = AutoModel.from_pretrained(tiny_bert)
    assert freeze(model, 1, False, PARAM) == "1 of 2"
    layer1 = {n for n, _ in model.named_parameters() if n.startswith("encoder.layer.1.")}
    assert trainable(model) == layer1  # BERT has no final norm above its layers


def test_null_and_too_many_layers_train_everything_but_frozen_embeddings(tiny_bert):
    model = AutoModel.from_pretrained(tiny_bert)
    everything = {n for n, _ in model.named_parameters()}
    assert freeze(model, None, False, PARAM) == "all" and trainable(model) == everything
    assert freeze(model, 5, True, PARAM) == "all"
    assert trainable(model) == everything - {"embeddings.word_embeddings.weight"}


def test_an_architecture_without_known_layers_is_refused_in_one_line():
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)
    model = T5EncoderModel(config)
    with pytest.raises(UserError, match=rf"^{PARAM}: no transformer layers found") as err:
        freeze(model, 1, False, PARAM)
    assert "\n" not in str(err.value)
    assert freeze(model, None, False, PARAM) == "all"  # null never looks for layers


def test_a_training_step_changes_the_top_layer_alone_with_dropout_below(tiny_llama):
    torch.manual_seed(0)
    model = build_encoder(tiny_llama, "mean", 16, dropout=0.1)
    auto = model[0].auto_model
    freeze(auto, 1, False, PARAM)
    before = {k: v.clone() for k, v in auto.state_dict().items()}
    texts = [f"a man plays the guitar number {i}" for i in range(8)]
    pairs = pd.DataFrame({"anchor": texts, "positive": texts, "negative": None})
    model.train()
    ids = model.preprocess(texts[:2])
    states = [auto(**ids, output_hidden_states=True).hidden_states[1] for _ in range(2)]
    assert not torch.equal(*states)  # the frozen layer 0 still draws dropout masks
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    train(model, pairs, obj, part_config(TrainConfig, lr=1e-2, batch_size=8))
    after = auto.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == trainable(auto) and "norm.weight" in changed
    assert all(k.startswith("layers.1.") or k == "norm.weight" for k in changed)
