"""Mixed precision that cannot underflow (paracl.core.device): the `precision` param picks the
autocast dtype, and in fp16 every training loop scales its loss with torch.amp.GradScaler.

No GPU here: CPU autocast runs fp16 when it is forced (`precision="fp16"`), which is how
the scaler path is exercised; CUDA's bf16 check is faked where the choice depends on it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import part_config

from paracl.core import device as device_module
from paracl.core.device import (
    autocast,
    autocast_dtype,
    backward,
    cpu_bf16,
    grad_scaler,
    optimizer_step,
    precision_record,
)
from paracl.core.params import ParamsError
from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.stages.train_contrastive.training.data import to_examples

CPU = torch.device("cpu")
CUDA = torch.device("cuda")  # only its .type is read: autocast_dtype never touches a GPU
SCALE = 2.0**8
WORDS = "a man is playing guitar on the stage cat sat mat dogs running field woman".split()

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models on shared cores


def _fake_gpu(monkeypatch, native_bf16: bool) -> None:
    """A CUDA GPU with native bf16 (A100, H100) or without (T4, V100, where torch can
    still emulate bf16: is_bf16_supported() is True unless emulation is excluded)."""
    monkeypatch.setattr(
        torch.cuda,
        "is_bf16_supported",
        lambda including_emulation=True: native_bf16 or including_emulation,
    )


def test_precision_picks_the_autocast_dtype(monkeypatch):
    assert autocast_dtype(CPU) is None and autocast_dtype(CPU, "fp32") is None
    assert autocast_dtype(CPU, "fp16") == torch.float16  # forced: honoured on CPU too
    assert autocast_dtype(CPU, "bf16") == torch.bfloat16
    assert autocast_dtype(torch.device("mps")) is None
    _fake_gpu(monkeypatch, native_bf16=True)
    assert autocast_dtype(CUDA) == torch.bfloat16
    assert autocast_dtype(CUDA, "fp32") is None
    _fake_gpu(monkeypatch, native_bf16=False)
    assert autocast_dtype(CUDA) == torch.float16  # not torch's slow bf16 emulation
    assert autocast_dtype(CUDA, "bf16") == torch.bfloat16  # asked for: emulated
    with pytest.raises(ParamsError, match="precision"):
        autocast_dtype(CPU, "fp8")


def _fake_cpu(monkeypatch, tmp_path, flags: str) -> None:
    """A CPU whose /proc/cpuinfo lists `flags` (the suite's override lifted)."""
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 {flags}\nbugs\t\t: spectre_v1\n")
    monkeypatch.delenv(device_module.CPU_BF16_ENV, raising=False)
    monkeypatch.setattr(device_module, "CPUINFO", info)
    device_module._cpuinfo_bf16.cache_clear()


@pytest.mark.parametrize(
    ("flags", "native", "dtype"),
    [
        ("avx2 avx512f avx512_bf16 amx_tile amx_bf16", "amx", torch.bfloat16),  # Sapphire Rapids
        ("avx2 avx512f avx512_bf16", "avx512_bf16", torch.bfloat16),  # Cooper Lake, Zen 4
        ("avx2 fma", None, None),  # an AVX2-only EPYC: bf16 would be emulated
        ("avx2 avx512f", None, None),  # AVX-512 without bf16 (Skylake)
    ],
)
def test_auto_is_bf16_on_a_cpu_that_runs_it_natively(monkeypatch, tmp_path, flags, native, dtype):
    _fake_cpu(monkeypatch, tmp_path, flags)
    try:
        assert cpu_bf16() == native
        assert autocast_dtype(CPU) == dtype and autocast_dtype(CPU, "auto") == dtype
        assert autocast_dtype(CPU, "fp32") is None  # pinned: the same on every CPU
        assert autocast_dtype(torch.device("mps")) is None
        record = precision_record(CPU)
        assert record["precision"] == ("bf16" if native else "fp32")
        assert record["cpu_bf16"] == native
        assert record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
        assert precision_record(CPU, "fp32")["precision"] == "fp32"
    finally:
        device_module._cpuinfo_bf16.cache_clear()


def test_no_cpuinfo_is_no_native_bf16(monkeypatch, tmp_path):
    monkeypatch.delenv(device_module.CPU_BF16_ENV, raising=False)
    monkeypatch.setattr(device_module, "CPUINFO", tmp_path / "absent")  # macOS: no /proc
    device_module._cpuinfo_bf16.cache_clear()
    try:
        assert cpu_bf16() is None and autocast_dtype(CPU) is None
    finally:
        device_module._cpuinfo_bf16.cache_clear()


def test_the_override_names_a_cpu_kind_or_stops(monkeypatch):
    monkeypatch.setenv(device_module.CPU_BF16_ENV, "amx")
    assert autocast_dtype(CPU) == torch.bfloat16
    monkeypatch.setenv(device_module.CPU_BF16_ENV, "none")
    assert autocast_dtype(CPU) is None
    monkeypatch.setenv(device_module.CPU_BF16_ENV, "yes")
    with pytest.raises(ParamsError, match="PARACL_CPU_BF16"):
        autocast_dtype(CPU)


def test_the_scaler_is_on_in_fp16_only(monkeypatch):
    assert not grad_scaler(CPU).is_enabled()
    assert not grad_scaler(CPU, precision="bf16").is_enabled()
    assert not grad_scaler(CPU, precision="fp32").is_enabled()
    assert grad_scaler(CPU, precision="fp16").is_enabled()
    assert grad_scaler(CPU, torch.float16).is_enabled()
    _fake_gpu(monkeypatch, native_bf16=False)
    assert autocast_dtype(CUDA) == torch.float16  # so a T4's `auto` run scales its loss


def _linear() -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(8, 4)


def test_one_step_scales_the_loss_and_unscales_before_the_optimiser():
    x = torch.randn(16, 8)
    ref, lin = _linear(), _linear()
    with autocast(CPU, "fp16"):
        ref_out = ref(x)
    ref_out.float().mean().backward()  # no scaler: the plain fp16 gradient
    scaler = grad_scaler(CPU, precision="fp16")
    with autocast(CPU, "fp16"):
        out = lin(x)
    backward(out.float().mean(), scaler)  # d/d out = scale / 64: inside fp16's range
    scale = scaler.get_scale()
    assert scale == 2.0**16
    torch.testing.assert_close(lin.weight.grad, ref.weight.grad * scale)  # the scale applied
    before = lin.weight.detach().clone()
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    assert optimizer_step(opt, scaler, list(lin.parameters()), max_norm=1e9)
    torch.testing.assert_close(lin.weight.grad, ref.weight.grad)  # unscaled before the step
    torch.testing.assert_close(lin.weight.detach(), before - 0.1 * ref.weight.grad)


def test_a_gradient_that_underflows_in_fp16_survives_with_the_scaler():
    """d loss / d out = 1e-8 is below fp16's smallest subnormal (6e-8): the backward pass
    through the fp16 matmul flushes it to zero, unless the loss is scaled."""
    x = torch.randn(16, 8)
    plain, scaled = _linear(), _linear()
    with autocast(CPU, "fp16"):
        out = plain(x)
    (out.float() * 1e-8).sum().backward()
    assert not plain.weight.grad.any()  # underflowed: fp16 training without scaling
    scaler = grad_scaler(CPU, precision="fp16")
    with autocast(CPU, "fp16"):
        out = scaled(x)
    backward((out.float() * 1e-8).sum(), scaler)
    opt = torch.optim.SGD(scaled.parameters(), lr=1.0)
    scaler.unscale_(opt)
    expected = 1e-8 * x.sum(0).expand(4, 8)  # d/dW of 1e-8 * sum(W x + b)
    torch.testing.assert_close(scaled.weight.grad, expected, rtol=1e-2, atol=1e-11)


def test_an_overflowing_step_is_skipped_and_the_scale_backs_off():
    lin = _linear()
    before = lin.weight.detach().clone()
    scaler = grad_scaler(CPU, precision="fp16")
    with autocast(CPU, "fp16"):
        out = lin(torch.randn(4, 8))
    backward(out.float().sum() * 1e30, scaler)  # inf gradients once scaled
    assert not optimizer_step(torch.optim.SGD(lin.parameters(), lr=0.1), scaler)
    assert torch.equal(lin.weight.detach(), before) and scaler.get_scale() == 2.0**15


def test_bf16_and_fp32_steps_are_what_they_were():
    """A disabled scaler is a no-op: the default run's numbers do not change."""
    x = torch.randn(16, 8)
    old, new = _linear(), _linear()
    for model, step in ((old, None), (new, grad_scaler(CPU, precision="fp32"))):
        opt = torch.optim.AdamW(model.parameters(), lr=0.1)
        for _ in range(3):
            loss = model(x).pow(2).mean()
            if step is None:
                loss.backward()
                opt.step()
            else:
                backward(loss, step)
                optimizer_step(opt, step)
            opt.zero_grad()
    assert torch.equal(old.weight, new.weight) and torch.equal(old.bias, new.bias)


# -- every training loop scales its loss in fp16 -------------------------------------


def _sentences(n: int, seed: int = 0) -> list[str]:
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(WORDS), (n, 6), generator=gen).tolist()
    return [" ".join(WORDS[i] for i in row) + f" {k}" for k, row in enumerate(idx)]


def _grads(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.flatten() for p in module.parameters() if p.grad is not None])


def _scaled_vs_plain(build, run) -> None:
    """`run(model, scaler)` does one forward/backward under forced fp16; with the scaler on,
    the gradients are the plain ones times the scale (up to fp16 rounding)."""
    grads = []
    for enabled in (False, True):
        model = build()
        # a small scale: 2**16 overflows some of these tiny random nets' fp16 gradients
        # (the scaler would skip that step and halve the scale; here it must not)
        scaler = torch.amp.GradScaler("cpu", init_scale=SCALE, enabled=enabled)
        loss = run(model, scaler)
        assert torch.isfinite(torch.as_tensor(loss))
        grads.append(_grads(model))
    ratio = grads[1].norm() / grads[0].norm()
    assert ratio == pytest.approx(SCALE, rel=0.02)


@pytest.fixture(scope="module")
def encoder(tiny_bert):
    return lambda: build_encoder(tiny_bert, "mean", max_seq_length=16)


@pytest.mark.parametrize("mini", [8, 3], ids=["one-pass", "gradcache"])
def test_contrastive_step_scales_its_loss(encoder, mini):
    from paracl.stages.train_contrastive.training import trainer

    texts = _sentences(8)
    batch = to_examples(pd.DataFrame({"id": map(str, range(8)), "text": texts,
                                      "paraphrase": [t + " ." for t in texts]}), "fixture")  # fmt: skip

    def run(model, scaler):
        torch.manual_seed(0)
        obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
        return trainer._step(model, obj, batch, mini, CPU, obj.loss, scaler, "fp16")

    _scaled_vs_plain(encoder, run)


def test_contrastive_training_runs_in_fp16_with_the_scaler(encoder, monkeypatch):
    from paracl.stages.train_contrastive.training import trainer

    made = []
    monkeypatch.setattr(
        trainer, "grad_scaler", lambda *a, **k: made.append(grad_scaler(*a, **k)) or made[-1]
    )
    texts = _sentences(16)
    ex = to_examples(pd.DataFrame({"id": map(str, range(16)), "text": texts,
                                   "paraphrase": [t + " ." for t in texts]}), "fixture")  # fmt: skip
    model = encoder()
    before = [p.detach().clone() for p in model.parameters()]
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    cfg = part_config(
        trainer.TrainConfig, lr=1e-3, epochs=1, batch_size=8, seed=0, precision="fp16"
    )
    result = trainer.train(model, ex, obj, cfg)
    assert result.steps == 2 and all(torch.isfinite(torch.tensor(result.losses)))
    assert made[0].is_enabled() and made[0].get_scale() == 2.0**16  # scaled, no overflow
    assert result.skipped_steps == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_contrastive_training_counts_the_steps_the_scaler_skipped(encoder, monkeypatch):
    from paracl.stages.train_contrastive.training import trainer

    # a scale too large for fp16: the first step's gradients overflow, the scale backs off
    monkeypatch.setattr(
        trainer, "grad_scaler", lambda *a, **k: torch.amp.GradScaler("cpu", init_scale=2.0**60)
    )
    texts = _sentences(16)
    ex = to_examples(pd.DataFrame({"id": map(str, range(16)), "text": texts,
                                   "paraphrase": [t + " ." for t in texts]}), "fixture")  # fmt: skip
    model = encoder()
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    cfg = part_config(
        trainer.TrainConfig, lr=1e-3, epochs=1, batch_size=8, seed=0, precision="fp16"
    )
    result = trainer.train(model, ex, obj, cfg)
    assert result.steps == 2 and result.skipped_steps >= 1


def test_ebsim_step_scales_its_loss(encoder):
    from paracl.parts.losses.ebsim_triplet import EbsimObjective

    texts = _sentences(4)
    batch = pd.DataFrame(
        {"anchor": texts, "positive": texts[::-1], "negative": texts[1:] + texts[:1]}
    )

    def build():
        torch.manual_seed(0)
        model = encoder()
        model.objective = EbsimObjective(model, ("ra", "aa"), 1.0, 32)
        return model

    def run(model, scaler):
        model.eval()  # no dropout: the two runs see the same network
        return model.objective.step(model, batch, 2, CPU, scaler=scaler, precision="fp16")

    _scaled_vs_plain(build, run)


def test_finetune_step_scales_its_loss(tiny_bert):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from paracl.parts.finetune.tuning import (
        FinetuneConfig,
        TrainTokens,
        train_step,
    )

    s1, s2 = _sentences(8), _sentences(8, seed=1)
    train = pd.DataFrame({"sentence1": s1, "sentence2": s2})
    targets = torch.linspace(0, 1, 8)
    cfg = part_config(
        FinetuneConfig, epochs=1, lr=1e-3, batch_size=8, max_seq_length=32, precision="fp16"
    )
    tokens = TrainTokens(AutoTokenizer.from_pretrained(tiny_bert), train, targets, 32)

    def build():
        torch.manual_seed(0)
        return AutoModelForSequenceClassification.from_pretrained(tiny_bert, num_labels=1).eval()

    def run(model, scaler):
        return train_step(
            model, tokens, [list(range(4)), list(range(4, 8))], cfg, CPU, scaler
        ).sum()

    _scaled_vs_plain(build, run)


@pytest.mark.parametrize("arch", ["llama", "bart"])
def test_paraphraser_step_scales_its_loss(arch, tiny_llama, tiny_bart):
    from paracl.parts import paraphraser

    path = {"llama": tiny_llama, "bart": tiny_bart}[arch]
    rows = [("<SIM95><BLEU20>", t, t[::-1]) for t in _sentences(4)]
    tokenizers = []

    def build():
        model, tok = paraphraser.load(path)
        paraphraser.add_tag_tokens(tok, model)
        tokenizers.append(tok)
        return model

    def run(model, scaler):
        return paraphraser.train_step(model, tokenizers[-1], rows, 32, CPU, scaler, "fp16")

    _scaled_vs_plain(build, run)


def test_paraphraser_training_in_fp16_keeps_learning(tiny_llama):
    from paracl.parts import paraphraser

    model, tok = paraphraser.load(tiny_llama)
    paraphraser.add_tag_tokens(tok, model)
    texts = _sentences(8)
    df = pd.DataFrame({"sim_tag": "<SIM95>", "bleu_tag": "<BLEU20>", "text": texts,
                       "paraphrase": [t + " ." for t in texts]})  # fmt: skip
    history = paraphraser.train(model, tok, df, df, lr=1e-2, batch_size=4, max_epochs=2,
                                patience=2, max_length=32, seed=0, device=CPU,
                                precision="fp16")  # fmt: skip
    assert history[-1]["train_loss"] < history[0]["train_loss"]


def test_sts_scorer_trainer_takes_its_precision_from_the_param():
    from sentence_transformers import SentenceTransformerTrainingArguments

    from paracl.parts.sts_scorer import _training_args

    cfg = {"epochs": 1, "batch_size": 4, "lr": 1e-4}

    def args(precision):
        cls = SentenceTransformerTrainingArguments
        return _training_args(cls, Path("unused"), 0, cfg, "cpu", precision)

    auto, bf16 = args("auto"), args("bf16")
    assert not auto.fp16 and not auto.bf16  # CPU: fp32, as before
    assert bf16.bf16 and not bf16.fp16


def test_a_method_entry_trains_in_its_own_precision():
    """The paper presets give each method its authors' precision (SimCSE's scripts: fp16,
    JCSE's: fp32) over the top-level one, which the other methods keep."""
    from stage_helpers import PAPER_METHODS

    from paracl.stages.train_contrastive import train_config
    from paracl.stages.train_contrastive.training.methods import method_spec, run_config

    def precision(name: str, entry: dict, top: str) -> str:
        section = run_config(method_spec(name, entry), {"lr": 1e-5})
        return train_config(section, top)["precision"]

    assert precision("jcse", PAPER_METHODS["jcse"] | {"precision": "fp32"}, "auto") == "fp32"
    assert precision("ppdb", PAPER_METHODS["ppdb"], "bf16") == "bf16"
