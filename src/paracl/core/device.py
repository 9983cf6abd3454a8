"""Device and precision choice, in one place, so every stage behaves the same.

`auto` picks CUDA, then Apple MPS, then CPU. The `precision` param (auto | bf16 | fp16 |
fp32) picks the autocast dtype, and `autocast_dtype` alone resolves it: `auto` is bf16 on
a GPU with native bf16 (compute capability >= 8: A100, H100, RTX 30xx+), fp16 on older
GPUs (T4, V100: torch would only emulate bf16 there), bf16 on a CPU that runs bf16 matmuls
natively (AMX or AVX512_BF16 in /proc/cpuinfo: a contrastive step of SmolLM2-135M runs
~2x faster there, docs/benchmarks.md), and fp32 on other CPUs and MPS (where bf16 is
emulated and slower than fp32). So `auto` resolves per machine; `fp32` pins it. An
explicit bf16 or fp16 is honoured on every device (CPU autocast runs both: the tests force
fp16 on CPU that way); fp32 turns autocast off. `precision_record` is what a stage's
metrics record of it: the precision that ran and the CPU's capability.

fp16 has 5 exponent bits: gradients below ~6e-8 flush to zero. Every training loop
therefore steps through `grad_scaler` + `optimizer_step`, which scale the loss by
torch.amp.GradScaler when (and only when) the autocast dtype is fp16: a no-op in bf16
and fp32, so one code path serves every device.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from paracl.core.errors import ParamsError

if TYPE_CHECKING:  # torch loads where a device is used, not where params are checked
    import torch


def select_device(preference: str = "auto") -> torch.device:
    """Return the device to run on; `preference` is auto, cpu, cuda or mps."""
    import torch

    if preference == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if preference == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: 'cuda' was asked for but torch sees no CUDA GPU")
    if preference == "mps" and not torch.backends.mps.is_available():
        raise RuntimeError("device: 'mps' was asked for but it is not available")
    return torch.device(preference)


PRECISIONS = ("auto", "bf16", "fp16", "fp32")
DEFAULT_PRECISION = "auto"


def half_dtypes() -> dict[str, torch.dtype]:
    """{precision: autocast dtype} of the half precisions (torch imported on first use)."""
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}


CPUINFO = Path("/proc/cpuinfo")
# /proc/cpuinfo flags that mean native bf16 matmuls, best first: AMX tiles (Sapphire Rapids
# and later), then AVX512_BF16 (Cooper Lake, Zen 4); without them oneDNN emulates bf16
CPU_BF16_FLAGS = {"amx_bf16": "amx", "avx512_bf16": "avx512_bf16"}


CPU_BF16_ENV = "PARACL_CPU_BF16"  # overrides the detection: amx | avx512_bf16 | none


def cpu_bf16() -> str | None:
    """How this CPU runs bf16 natively: "amx", "avx512_bf16", or None (emulated or not
    known: no /proc/cpuinfo, as on macOS). $PARACL_CPU_BF16 overrides it (the test suite
    sets none, so its expected numbers hold on every CPU kind, stage subprocesses too)."""
    forced = os.environ.get(CPU_BF16_ENV)
    if forced is not None:
        if forced not in (*CPU_BF16_FLAGS.values(), "none"):
            known = ", ".join((*CPU_BF16_FLAGS.values(), "none"))
            raise ParamsError(f"${CPU_BF16_ENV} must be one of {known}, got {forced!r}")
        return None if forced == "none" else forced
    return _cpuinfo_bf16()


@functools.cache
def _cpuinfo_bf16() -> str | None:
    """cpu_bf16 as /proc/cpuinfo's flags say (read once per process)."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines()
                  if ln.startswith("flags")), [])  # fmt: skip
    return next((name for flag, name in CPU_BF16_FLAGS.items() if flag in flags), None)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("unknown" where there is none): what the
    benchmarks record as the machine that measured them."""
    try:
        lines = CPUINFO.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "unknown"
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else "unknown"


def machine() -> str:
    """This machine as the timing benchmarks record it, and `paracl report` reads it back:
    the CPU model, its cores and how it runs bf16."""
    return f"{cpu_model()}, {os.cpu_count()} cores, bf16 kernels: {cpu_bf16() or 'none'}"


def autocast_dtype(device: torch.device, precision: str = DEFAULT_PRECISION) -> torch.dtype | None:
    """The mixed-precision dtype for `device` under `precision`, or None to stay in fp32.
    The one place `auto` is resolved (every stage's autocast and loss scaler asks here)."""
    import torch

    if precision not in PRECISIONS:
        raise ParamsError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "auto":
        if device.type == "cpu":
            return torch.bfloat16 if cpu_bf16() else None
        if device.type != "cuda":
            return None
        native = torch.cuda.is_bf16_supported(including_emulation=False)
        return torch.bfloat16 if native else torch.float16
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ParamsError("precision: bf16 was asked for but this GPU cannot run bf16; use fp16")
    return half_dtypes().get(precision)


def precision_used(device: torch.device, precision: str = DEFAULT_PRECISION) -> str:
    """What a run computed in, for its metrics: fp32, bf16 or fp16 (`auto` resolved)."""
    dtype = autocast_dtype(device, precision)
    return "fp32" if dtype is None else {v: k for k, v in half_dtypes().items()}[dtype]


def precision_record(device: torch.device, precision: str = DEFAULT_PRECISION) -> dict:
    """For a stage's metrics: the precision that ran (`auto` resolved) and the CPU it ran on
    (torch's kernel capability, e.g. AVX512 or AVX2, and its native bf16, or null), so that
    two runs of one `precision: auto` on different machines say why they differ."""
    import torch

    return {
        "precision": precision_used(device, precision),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_bf16": cpu_bf16(),
    }


@contextlib.contextmanager
def autocast(device: torch.device, precision: str = DEFAULT_PRECISION) -> Iterator[None]:
    """Autocast to `precision`'s dtype on `device` (`autocast_dtype`); a no-op in fp32."""
    import torch

    dtype = autocast_dtype(device, precision)
    if dtype is None:
        yield
    else:
        with torch.autocast(device_type=device.type, dtype=dtype):
            yield


def grad_scaler(
    device: torch.device, dtype: torch.dtype | None = None, precision: str = DEFAULT_PRECISION
) -> torch.amp.GradScaler:
    """A loss scaler that is enabled only when training autocasts to fp16 on `device`
    (`dtype` overrides the one `precision` picks: tests force fp16 on CPU with either)."""
    import torch

    dtype = autocast_dtype(device, precision) if dtype is None else dtype
    return torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)


def backward(loss: torch.Tensor, scaler: torch.amp.GradScaler) -> None:
    """loss.backward(), scaled when the scaler is enabled (fp16)."""
    scaler.scale(loss).backward()


def optimizer_step(
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    params=None,
    max_norm: float | None = None,
) -> bool:
    """Unscale, clip (when `max_norm`), step and update the scale; returns False when the
    scaler skipped the step because a gradient overflowed (fp16 only)."""
    import torch

    if max_norm is not None:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(params, max_norm)
    scale = scaler.get_scale() if scaler.is_enabled() else None
    scaler.step(optimizer)
    scaler.update()
    return scale is None or scaler.get_scale() >= scale


def adamw(params, lr: float, weight_decay: float = 0.0) -> torch.optim.AdamW:
    """AdamW with torch's fused kernel on CPU and CUDA (its default on CPU loops over the
    tensors in Python: 0.19 s of a 1.7 s all-MiniLM-L6-v2 step on 2 cores). transformers'
    Trainer, and so sentence-transformers', uses the fused one too (adamw_torch_fused).
    `params` is a list of tensors or of param groups, as torch.optim takes."""
    import torch

    groups = list(params)
    tensors = [p for g in groups for p in (g["params"] if isinstance(g, dict) else [g])]
    fused = bool(tensors) and tensors[0].device.type in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay, fused=fused or None)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch so that the same params give the same outputs."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
