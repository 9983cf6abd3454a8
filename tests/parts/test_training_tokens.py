"""The trainer's lean step (paracl.stages.train_contrastive.training.tokens, trainer._LossLog): every text is
tokenized once and a step's padded batch is exactly what sentence-transformers'
`preprocess` gives; the step losses are read back in bulk, in order, checked finite."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from conftest import part_config

from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.stages.train_contrastive.training import trainer
from paracl.stages.train_contrastive.training.tokens import TokenCache
from paracl.stages.train_contrastive.training.trainer import (
    TrainConfig,
    TrainResult,
    _LossLog,
    train,
)

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = [
    "a man plays a guitar .",
    "the cat sat on the mat while the dog slept by the warm fire all day long .",
    "dogs run .",
    "a woman is slicing an onion in the kitchen .",
    "",
    "two children are playing in the sand near the sea under a red sun",
]


@pytest.fixture(params=["bert", "llama"])
def encoder(request):
    """A right-padding (BERT) and a left-padding (llama, SmolLM2's kind) encoder."""
    path = request.getfixturevalue(f"tiny_{request.param}")
    torch.manual_seed(0)
    return build_encoder(str(path), "mean", max_seq_length=12)


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        torch.equal(v, b[k]) if isinstance(v, torch.Tensor) else v == b[k] for k, v in a.items()
    )


def test_cached_batches_are_what_preprocess_gives(encoder):
    tokens = TokenCache(encoder)
    tokens.warm(TEXTS)
    for batch in (TEXTS, TEXTS[::-1], TEXTS[1:3], TEXTS[2:3] * 2, TEXTS[:4] + TEXTS[:2]):
        assert _equal(tokens.features(batch), encoder.preprocess(batch))
    assert tokens.enabled and tokens.checked  # padded batches matched: the cache serves


def test_a_feature_that_is_not_per_token_turns_the_cache_off(encoder, monkeypatch):
    real = encoder.preprocess
    extra = {"pooled_hint": torch.zeros(1)}  # not one value per token of each row
    monkeypatch.setattr(encoder, "preprocess", lambda texts, **kw: real(texts, **kw) | extra)
    tokens = TokenCache(encoder)
    assert _equal(tokens.features(TEXTS), encoder.preprocess(TEXTS))
    assert not tokens.enabled  # and the steps tokenize their batch as before


def test_a_collate_that_differs_from_preprocess_turns_the_cache_off(encoder, monkeypatch):
    tokens = TokenCache(encoder)
    monkeypatch.setattr(tokens, "_left", lambda: not TokenCache._left(tokens))  # wrong side
    assert _equal(tokens.features(TEXTS), encoder.preprocess(TEXTS))
    assert not tokens.enabled


def test_training_tokenizes_each_text_once(tiny_bert, monkeypatch):
    torch.manual_seed(0)
    model = build_encoder(str(tiny_bert), "mean", max_seq_length=12)
    texts = [f"{t} {i}" for i in range(8) for t in TEXTS]  # 48 texts, 3 epochs of 6 steps
    examples = pd.DataFrame({"anchor": texts, "positive": texts, "negative": None})
    seen: list[int] = []
    real = model.preprocess
    monkeypatch.setattr(
        model, "preprocess", lambda texts, **kw: seen.append(len(texts)) or real(texts, **kw)
    )
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    cfg = part_config(
        TrainConfig, lr=1e-3, epochs=3, batch_size=8, seed=0, precision="fp32", patience=9
    )
    result = train(model, examples, obj, cfg)
    assert result.steps == 18 and len(result.losses) == 18
    assert seen[0] == 48  # every unique text once, ahead of the first epoch
    assert len(seen) <= 3  # then only the check of a padded batch against preprocess


def test_the_loss_log_reads_back_in_order_and_stops_on_a_bad_loss(monkeypatch):
    monkeypatch.setattr(trainer, "LOSS_FLUSH_EVERY", 3)
    logged: list = []
    result = TrainResult()
    log = _LossLog(result, lambda key, value, step: logged.append((key, value, step)))
    log.add(torch.tensor(1.5), 1)
    log.add(0.25, 2)  # a per-example objective's float
    assert result.losses == []  # not read back yet: no host sync in the step
    log.add(torch.tensor(0.5), 3)
    assert result.losses == [1.5, 0.25, 0.5]
    assert [s for _, _, s in logged] == [1, 2, 3]
    log.add(torch.tensor(float("nan")), 4)
    with pytest.raises(FloatingPointError, match="nan at step 4"):
        log.flush()
