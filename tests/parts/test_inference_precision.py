"""The inference stages follow the `precision` param too (paracl.core.device): perplexity
ranking, evaluation's encoding, round-trip translation (seq2seq and prompted causal LM), the paraphraser's
generation and both noun-chunk fillers autocast to the dtype it picks, and stay in fp32
when it says fp32. Before, they autocast to `auto` whatever the param said, so `precision:
fp32` on a GPU still ranked and generated in bf16.

No GPU here: an explicit bf16 is honoured on CPU, and torch.autocast is wrapped to record
the dtype each forward pass runs under."""

from __future__ import annotations

import pytest
import torch
from conftest import part_config

from paracl.parts.filler.causal import CausalFiller
from paracl.parts.filler.generate import T5Filler
from paracl.parts.filler.masking import mask_spans
from paracl.parts.filler.pipeline import CorruptConfig
from paracl.parts.translate import Sampling, load_translator
from paracl.stages.rank_fluency import PerplexityScorer

CPU = torch.device("cpu")
TEXTS = ["a man is playing a guitar .", "the cat sat on the mat ."]

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models on shared cores


@pytest.fixture
def autocast_dtypes(monkeypatch) -> list:
    """The dtype of every torch.autocast entered (paracl.core.device.autocast calls it)."""
    seen: list = []
    real = torch.autocast

    def recording(*args, **kwargs):
        seen.append(kwargs.get("dtype"))
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "autocast", recording)
    return seen


def _perplexity(tiny_gpt2, precision):
    PerplexityScorer(tiny_gpt2, CPU, batch_size=2, precision=precision).score(TEXTS)


def _t5_filler(tiny_t5, precision):
    T5Filler(tiny_t5, CPU, precision).fill(["The <extra_id_0> sat ."], [1], 2, 2)


def _causal_filler(tiny_gpt2, precision):
    # unquantized: an int8-quantized filler runs in fp32 whatever the precision
    # (test_filler_causal.py::test_a_quantized_filler_runs_in_fp32_whatever_the_precision)
    cfg = part_config(
        CorruptConfig, num_return_sequences=1, num_samples=2, batch_size=4, quantize=False
    )
    filler = CausalFiller(tiny_gpt2, CPU, cfg.sampling(), seed=1, precision=precision)
    filler.fill([mask_spans(TEXTS[1], [(4, 7)])])


def _translator(model, precision):
    tr = load_translator(str(model), 0, CPU, "en", "de", precision=precision)
    tr.translate(TEXTS, Sampling(20, 1.0), seed=1, max_new_tokens=4)


def _paraphraser(tiny_llama, precision):
    from paracl.parts import paraphraser

    model, tokenizer = paraphraser.load(tiny_llama, CPU)
    paraphraser.generate(
        model, tokenizer, TEXTS, "", num_beams=2, max_length=16, precision=precision,
        min_ratio=0.75, max_ratio=1.5, batch_size=8,
    )  # fmt: skip


def _evaluation_encoding(tiny_bert, precision):
    from paracl.parts.encoder.build import build_encoder
    from paracl.parts.encoder.embed import EmbeddingCache

    EmbeddingCache(build_encoder(tiny_bert, "mean", 16), 2, precision).embed(TEXTS)


RUNS = {
    "evaluation_encoding": (_evaluation_encoding, "tiny_bert"),
    "perplexity": (_perplexity, "tiny_gpt2"),
    "t5_filler": (_t5_filler, "tiny_t5"),
    "causal_filler": (_causal_filler, "tiny_gpt2"),
    "seq2seq_translator": (_translator, "tiny_marian"),
    "prompted_translator": (_translator, "tiny_llama"),
    "paraphraser": (_paraphraser, "tiny_llama"),
}


@pytest.mark.parametrize("name", RUNS)
def test_inference_runs_under_the_precision_param(name, request, autocast_dtypes):
    run, fixture = RUNS[name]
    model = request.getfixturevalue(fixture)
    run(model, "bf16")
    assert autocast_dtypes and set(autocast_dtypes) == {torch.bfloat16}
    autocast_dtypes.clear()
    run(model, "fp32")
    assert autocast_dtypes == []  # fp32: no autocast at all


def test_a_bf16_perplexity_is_a_different_number(tiny_gpt2):
    """Not just a context entered: the forward pass really runs in bf16 (its rounding
    shows), and stays near the fp32 value."""
    fp32 = PerplexityScorer(tiny_gpt2, CPU, precision="fp32").score(TEXTS)
    bf16 = PerplexityScorer(tiny_gpt2, CPU, precision="bf16").score(TEXTS)
    assert not (fp32 == bf16).all()
    assert bf16 == pytest.approx(fp32, rel=0.05)
