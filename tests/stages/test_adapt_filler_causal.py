"""The causal-LM filler's domain adaptation (next-token training) lowers held-out
perplexity, steps through the fp16 loss scaler, and the adapt_filler / corrupt /
corrupt_unadapted stages run on it (tiny random models)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import part_config
from transformers import AutoModelForCausalLM, AutoTokenizer

from paracl.parts.filler import adapt_causal, adapt_loop
from paracl.parts.filler.adapt_causal import CausalAdaptConfig, collate, mean_nll, sequences
from paracl.parts.filler.causal import bos_id

DOMAIN = [
    "the patient was admitted with acute aortic dissection and chest pain .",
    "a ct scan showed a large hematoma in the left kidney .",
    "the patient was treated with steroids and recovered after two weeks .",
    "blood tests showed high levels of troponin and creatinine .",
    "the tumour was removed by surgery and the patient was discharged .",
    "the chest x ray showed an enlarged heart and pleural effusion .",
] * 4
HELD_OUT = [
    "the patient was admitted with chest pain and a large hematoma .",
    "a ct scan showed an enlarged heart and high levels of troponin .",
]

pytestmark = pytest.mark.usefixtures("one_thread")


def _load(path):
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def test_sequences_start_with_the_fillers_bos_and_end_with_eos(tiny_llama):
    _, tok = _load(tiny_llama)
    (seq,) = sequences(tok, ["a man ."], max_length=64)
    assert seq[0] == bos_id(tok) and seq[-1] == tok.eos_token_id
    batch = collate([seq, seq[:3]], pad_id=0)
    assert batch["labels"][0, 0] == -100 and (batch["labels"][1, 3:] == -100).all()
    assert batch["attention_mask"][1].tolist() == [1, 1, 1] + [0] * (len(seq) - 3)


@pytest.mark.parametrize("arch", ["tiny_llama", "tiny_gpt2"])
def test_next_token_adaptation_lowers_held_out_perplexity(arch, request):
    model, tok = _load(request.getfixturevalue(arch))
    cfg = part_config(CausalAdaptConfig, lr=3e-3, max_steps=30, batch_size=8, eval_every=15, seed=0)
    cfg = replace(cfg, train_layers=None, freeze_embeddings=False)
    curve, trains = adapt_causal.adapt_causal(
        model, tok, DOMAIN, HELD_OUT, cfg, torch.device("cpu")
    )
    assert [r["step"] for r in curve] == [0, 15, 30] and trains == "all"
    before, after = curve[0]["dev_loss"], curve[-1]["dev_loss"]
    assert after < before - 1.0  # nats per token: perplexity falls by e^1 or more
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    seqs = sequences(tok, HELD_OUT, 64)
    assert mean_nll(model, seqs, pad, torch.device("cpu")) == pytest.approx(after)


def test_top_layers_only_train_and_the_rest_stay(tiny_llama):
    model, tok = _load(tiny_llama)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if ".layers.0." in n}
    embed = model.get_input_embeddings().weight.detach().clone()
    cfg = part_config(
        CausalAdaptConfig, lr=1e-2, max_steps=3, batch_size=4, eval_every=3, train_layers=1, seed=0
    )
    _, trains = adapt_causal.adapt_causal(model, tok, DOMAIN, HELD_OUT, cfg, torch.device("cpu"))
    assert trains == "1 of 2"
    assert torch.equal(model.get_input_embeddings().weight, embed)
    for name, p in model.named_parameters():
        if name in frozen:
            assert torch.equal(p, frozen[name]), name
    assert all(p.requires_grad for p in model.parameters())  # restored for saving


def test_steps_go_through_the_loss_scaler(tiny_llama, monkeypatch):
    """Under fp16 the loss is scaled (paracl.core.device.grad_scaler); forced on CPU here, the
    scaled run still learns and matches the unscaled one."""
    scaled = []

    def fp16_scaler(device, precision="auto"):
        scaler = torch.amp.GradScaler("cpu", enabled=True, init_scale=2.0**10)
        scaled.append(scaler)
        return scaler

    def run():
        model, tok = _load(tiny_llama)
        cfg = part_config(
            CausalAdaptConfig, lr=3e-3, max_steps=6, batch_size=4, eval_every=6, seed=1
        )
        return adapt_causal.adapt_causal(model, tok, DOMAIN, HELD_OUT, cfg, torch.device("cpu"))

    plain, _ = run()
    monkeypatch.setattr(adapt_loop, "grad_scaler", fp16_scaler)  # the shared step loop
    with_scaler, _ = run()
    assert scaled and scaled[0].get_scale() >= 2.0**10
    assert with_scaler[-1]["dev_loss"] == pytest.approx(plain[-1]["dev_loss"], rel=1e-4)
    assert with_scaler[-1]["dev_loss"] < with_scaler[0]["dev_loss"]


def test_the_runs_precision_reaches_the_step_loop(tiny_llama, monkeypatch):
    """params.yaml's top-level `precision` picks autocast and the scaler here too, as in
    every other training loop (it was ignored by the filler adaptation before)."""
    asked = []
    real = adapt_loop.grad_scaler
    monkeypatch.setattr(
        adapt_loop, "grad_scaler", lambda d, precision: asked.append(precision) or real(d, precision=precision)
    )  # fmt: skip
    model, tok = _load(tiny_llama)
    cfg = part_config(
        CausalAdaptConfig, max_steps=2, batch_size=4, eval_every=2, precision="fp32", seed=0
    )
    adapt_causal.adapt_causal(model, tok, DOMAIN, HELD_OUT, cfg, torch.device("cpu"))
    assert asked == ["fp32"]


def test_adapt_filler_adapts_a_causal_lm_and_both_corrupt_stages_fill(
    tmp_path, monkeypatch, tiny_gpt2
):
    from stage_helpers import run_stage
    from test_negatives_stages import _params, _write_corpus

    monkeypatch.chdir(tmp_path)
    _write_corpus()
    params = _params()
    params["adapt_filler"]["model"] = {"en": str(tiny_gpt2), "ja": str(tiny_gpt2)}
    params["adapt_filler"]["causal_lm"].update(
        lr=3e-3, max_steps=6, batch_size=4, eval_every=3, train_layers=None
    )
    params["corrupt"].update(num_samples=3, max_blanks=1, max_sentences=6, unadapted=["base"])
    before = torch.get_num_threads()
    try:
        run_stage("adapt_filler", params)
        metrics = json.loads(Path("metrics/adapt_filler.json").read_text())
        assert metrics["filler"] == "causal_lm" and metrics["objective"] == "next-token prediction"
        assert metrics["adapted"] is True and metrics["steps"] == 6
        assert metrics["dev_perplexity"] < metrics["dev_perplexity_before"]
        assert {"config.json", "paracl_filler.json"} <= {
            p.name for p in Path("models/filler").iterdir()
        }
        run_stage("corrupt", params)
        adapted = json.loads(Path("metrics/negatives.json").read_text())
        assert adapted["adapted"] is True and adapted["filler"] == "causal_lm"
        run_stage("corrupt_unadapted@base", params)
        base = json.loads(Path("metrics/negatives_base.json").read_text())
        assert base["adapted"] is False and base["model"]["id"] == str(tiny_gpt2)
        assert base["sentences_in"] == adapted["sentences_in"] == 6  # the same anchors
    finally:
        torch.set_num_threads(before)


def test_unadapted_negatives_need_a_real_filler():
    from paracl.core.errors import InputError
    from paracl.stages.corrupt import model_info

    with pytest.raises(InputError, match=r"adapt_filler\.model\.en: tiny-random:t5 is a random"):
        model_info("unadapted", "tiny-random:t5", "en")
