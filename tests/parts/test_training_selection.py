"""Each paper's model selection (train_contrastive.selection): SimCSE's STS dev every N
steps with the best kept, the PPDB paper's dev loss with patience, the last weights, and
SimCSE's gradient clipping. Tiny BERT; the dev score is scripted where the test needs to
know which weights are best."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import part_config

from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.stages.train_contrastive.training.data import to_examples
from paracl.stages.train_contrastive.training.selection import dev_loss, hold_out
from paracl.stages.train_contrastive.training.trainer import TrainConfig, train

WORDS = "man woman cat dog plays runs guitar field kitchen city river sea sun onion".split()
pytestmark = pytest.mark.usefixtures("one_thread")


def _examples(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=6)) + f" {i}" for i in range(n)]
    pairs = pd.DataFrame({"id": [str(i) for i in range(n)], "text": texts,
                          "paraphrase": [t + " ." for t in texts]})  # fmt: skip
    return to_examples(pairs, "fixture")


def _setup(tiny_bert):
    torch.manual_seed(0)
    model = build_encoder(tiny_bert, "cls_mlp", max_seq_length=16)
    return model, infonce.objective(model, infonce.Params(), {"temperature": 0.05})


def _weight(model) -> torch.Tensor:
    return model[0].auto_model.embeddings.word_embeddings.weight.detach().clone()


def test_sts_dev_every_n_steps_keeps_the_best_steps_weights(tiny_bert):
    """SimCSE's --eval_steps 125 --load_best_model_at_end: scored every N steps (not per
    epoch), the best step's weights restored, dropout on again after a mid-epoch score."""
    model, obj = _setup(tiny_bert)
    scripted, seen = iter([0.1, 0.9, 0.3]), []

    def dev_score(inference) -> float:
        seen.append(_weight(model))
        return next(scripted)

    config = part_config(
        TrainConfig, lr=1e-3, epochs=2, batch_size=4, seed=0, selection="sts_dev", sts_dev_every=2
    )
    result = train(model, _examples(12), obj, config, dev_score)  # 3 steps an epoch, 6 in all
    assert result.steps == 6 and len(seen) == 3  # after steps 2, 4 and 6
    assert result.best_step == 4 and result.best_dev == 0.9 and result.best_epoch == 2
    assert torch.equal(_weight(model), seen[1])
    assert model.training  # a mid-epoch score leaves the model in train mode


def test_a_run_shorter_than_the_cadence_scores_its_last_step(tiny_bert):
    model, obj = _setup(tiny_bert)
    config = part_config(TrainConfig, lr=1e-3, epochs=1, batch_size=4, seed=0, sts_dev_every=125)
    result = train(model, _examples(12), obj, config, lambda m: 0.5)
    assert result.dev_history == [0.5] and result.best_step == 3


def test_dev_loss_keeps_the_lowest_epoch_and_stops_after_patience(tiny_bert, monkeypatch):
    """The PPDB paper: stop when the dev loss has not improved for `patience` epochs; the
    kept weights are the lowest-loss epoch's, and no STS dev score is asked for."""
    import paracl.stages.train_contrastive.training.trainer as trainer

    model, obj = _setup(tiny_bert)
    losses, seen = iter([2.0, 1.0, 1.5, 1.2, 0.1]), []

    def scripted(m, *args) -> float:
        seen.append(_weight(model))
        return next(losses)

    monkeypatch.setattr(trainer, "dev_loss", scripted)
    train_ex, dev = hold_out(_examples(40), 8, 0)
    config = part_config(
        TrainConfig, lr=1e-3, epochs=5, batch_size=4, seed=0, patience=2, selection="dev_loss"
    )
    result = train(model, train_ex, obj, config, None, dev_examples=dev)
    assert result.dev_losses == [2.0, 1.0, 1.5, 1.2] and result.epochs_run == 4  # stopped
    assert result.best_epoch == 2 and torch.equal(_weight(model), seen[1])


def test_hold_out_is_a_seeded_disjoint_split_and_dev_loss_is_deterministic(tiny_bert):
    examples = _examples(40)
    train_ex, dev = hold_out(examples, 1000, 3)  # at most a tenth
    assert len(dev) == 4 and len(train_ex) == 36
    assert not set(dev["anchor"]) & set(train_ex["anchor"])
    assert hold_out(examples, 1000, 3)[1].equals(dev)
    model, obj = _setup(tiny_bert)
    rng = torch.get_rng_state()
    first = dev_loss(model, obj, dev, 4, 0)
    assert torch.equal(torch.get_rng_state(), rng)  # training's RNG untouched
    assert dev_loss(model, obj, dev, 4, 0) == first > 0


def test_selection_none_keeps_the_last_weights_and_scores_nothing(tiny_bert):
    model, obj = _setup(tiny_bert)
    config = part_config(TrainConfig, lr=1e-3, epochs=3, batch_size=4, seed=0, selection="none")
    result = train(model, _examples(12), obj, config, lambda m: pytest.fail("scored"))
    assert result.epochs_run == 3 and result.best_epoch == 3 and result.dev_history == []


def test_max_grad_norm_clips_every_step(tiny_bert, monkeypatch):
    """SimCSE's HF Trainer clips at 1.0 (max_grad_norm's default there); null: no clip."""
    calls = []
    real = torch.nn.utils.clip_grad_norm_

    def recording(params, max_norm, *args, **kwargs):
        calls.append(max_norm)
        return real(params, max_norm, *args, **kwargs)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", recording)
    model, obj = _setup(tiny_bert)
    config = part_config(TrainConfig, lr=1e-3, batch_size=4, seed=0, max_grad_norm=1.0)
    train(model, _examples(12), obj, config)
    assert calls == [1.0, 1.0, 1.0]
    calls.clear()
    train(model, _examples(12), obj, part_config(TrainConfig, lr=1e-3, batch_size=4, seed=0))
    assert calls == []
