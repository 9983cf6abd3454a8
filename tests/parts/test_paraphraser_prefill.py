"""The decoder-only paraphraser's beam search reads each prompt once (causal.prefill_once):
the same outputs, to the byte, as transformers' prefill of every beam's copy (issue 70)."""

from __future__ import annotations

import contextlib

import pytest
from test_roundtrip import TEXTS

from paracl.parts import paraphraser
from paracl.parts.paraphraser import causal

pytestmark = pytest.mark.usefixtures("one_thread")

KWARGS = {"min_ratio": 0.75, "max_ratio": 1.5, "batch_size": 3, "max_length": 64}


def _rows_read(model) -> list[int]:
    """Records the batch rows × tokens of every forward call of `model`."""
    seen: list[int] = []
    model.register_forward_pre_hook(
        lambda _m, _a, kw: seen.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    return seen


@pytest.mark.parametrize("arch", ["tiny_llama", "tiny_gpt2"])
def test_prefill_once_gives_the_same_bytes(request, monkeypatch, arch):
    model, tok = paraphraser.load(request.getfixturevalue(arch))
    paraphraser.add_tag_tokens(tok, model)
    seen = _rows_read(model)
    texts = TEXTS[:5]
    new = paraphraser.generate(model, tok, texts, "<SIM95><BLEU20>", num_beams=4, **KWARGS)
    prefills = [shape for shape in seen if shape[1] > 1]
    assert [rows for rows, _ in prefills] == [3, 2]  # one row a prompt, not 4
    assert "_prefill" not in model.__dict__
    seen.clear()
    monkeypatch.setattr(causal, "prefill_once", lambda *_: contextlib.nullcontext())
    old = paraphraser.generate(model, tok, texts, "<SIM95><BLEU20>", num_beams=4, **KWARGS)
    assert [rows for rows, n in seen if n > 1] == [12, 8]  # transformers: every beam's copy
    assert new == old


def test_prefill_once_restores_transformers_prefill(tiny_llama):
    """One beam: nothing replaced; the replacement is gone after the block, error or not."""
    model, _ = paraphraser.load(tiny_llama)
    with causal.prefill_once(model, 1):
        assert "_prefill" not in model.__dict__
    with pytest.raises(RuntimeError), causal.prefill_once(model, 4):
        assert "_prefill" in model.__dict__
        raise RuntimeError
    assert "_prefill" not in model.__dict__
