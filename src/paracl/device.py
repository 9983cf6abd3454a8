"""Device and precision choice, in one place, so every stage behaves the same.

`auto` picks CUDA, then Apple MPS, then CPU. On CUDA, stages run in bf16 where the
GPU supports it and fp16 otherwise; on CPU they stay in fp32 (CPU half precision is
slower than fp32 for these model sizes).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np
import torch


def select_device(preference: str = "auto") -> torch.device:
    """Return the device to run on; `preference` is auto, cpu, cuda or mps."""
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


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """The mixed-precision dtype for `device`, or None to stay in fp32."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return None


@contextlib.contextmanager
def autocast(device: torch.device) -> Iterator[None]:
    """Mixed precision on CUDA, a no-op elsewhere."""
    dtype = autocast_dtype(device)
    if dtype is None:
        yield
    else:
        with torch.autocast(device_type=device.type, dtype=dtype):
            yield


def adamw(params, lr: float, weight_decay: float = 0.0) -> torch.optim.AdamW:
    """AdamW with torch's fused kernel on CPU and CUDA (its default on CPU loops over the
    tensors in Python: 0.19 s of a 1.7 s all-MiniLM-L6-v2 step on 2 cores). transformers'
    Trainer, and so sentence-transformers', uses the fused one too (adamw_torch_fused).
    `params` is a list of tensors or of param groups, as torch.optim takes."""
    groups = list(params)
    tensors = [p for g in groups for p in (g["params"] if isinstance(g, dict) else [g])]
    fused = bool(tensors) and tensors[0].device.type in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay, fused=fused or None)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch so that the same params give the same outputs."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
