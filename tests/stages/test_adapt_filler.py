"""Denoising adaptation lowers the dev loss; the stand-in T5 builds and adapts."""

import pytest
import torch
from conftest import part_config
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl.parts.filler.adapt import AdaptConfig, adapt
from paracl.parts.filler.generate import T5Filler
from paracl.testing.standins import build_standin_t5

CORPUS = [
    "the cat sat on the mat in the afternoon sun .",
    "two dogs are running through the green field .",
    "a man is playing a guitar on the stage .",
    "the river flows into the sea near the old harbour .",
    "he was born in london and studied physics at oxford .",
    "the city council approved the new budget on monday .",
] * 4

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def test_adaptation_lowers_dev_loss(tiny_t5):
    tok = AutoTokenizer.from_pretrained(tiny_t5)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_t5)
    cfg = part_config(AdaptConfig, max_steps=40, batch_size=8, eval_every=20, max_length=32, seed=0)
    curve = adapt(model, tok, CORPUS, CORPUS[:6], cfg, torch.device("cpu"))
    assert [r["step"] for r in curve] == [0, 20, 40]
    assert curve[0]["train_loss"] is None
    assert curve[-1]["dev_loss"] < 0.8 * curve[0]["dev_loss"]


def test_adaptation_is_deterministic_with_a_seed(tiny_t5):
    def run():
        tok = AutoTokenizer.from_pretrained(tiny_t5)
        model = AutoModelForSeq2SeqLM.from_pretrained(tiny_t5)
        cfg = part_config(AdaptConfig, max_steps=5, batch_size=4, eval_every=5, seed=3)
        return adapt(model, tok, CORPUS, CORPUS[:3], cfg, torch.device("cpu"))

    assert run() == run()


def test_standin_builds_a_t5_with_100_sentinels(tmp_path):
    info = build_standin_t5(CORPUS, tmp_path / "m", seed=0, vocab_size=200, d_model=16)
    assert info["id"] == "tiny-random:t5" and "stand-in" in info["note"]
    filler = T5Filler(tmp_path / "m", torch.device("cpu"))
    assert filler.n_sentinels == 100
    out = filler.fill(["the <extra_id_0> sat ."], [1], num_beams=2, num_return_sequences=2)
    assert len(out[0]) == 2
