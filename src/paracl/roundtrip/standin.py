"""Model ids for the round-trip stages, with an explicit stand-in for offline runs.

No MT or BART weights exist on the package registries this project can use, so the
default params name `tiny-random:marian` / `tiny-random:bart`: a tiny model of the real
architecture with random weights (paracl.testing.tiny_models), built on the fly. It
exercises every code path but produces noise, so every metric of a run that used one
says `"stand_in": true`. Any other id goes through paracl.models.resolve_model.

Sharded stages load the model inside each worker (`local_path`), never on the driver:
a Ray worker on another machine cannot read the driver's temporary directory, so each
worker process builds the stand-in itself. The build is deterministic (fixed seed,
fixed tokenizer training text), so every worker holds the same weights and the output
does not depend on where a shard ran; the tests check it byte for byte.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paracl.models import resolve_model

PREFIX = "tiny-random:"
STAND_INS = ("marian", "fsmt", "bart", "t5")  # seq2seq architectures tiny_models builds

# stand-ins this process has built: (id, seed) -> (TemporaryDirectory kept alive, path)
_BUILT: dict[tuple[str, int], tuple[tempfile.TemporaryDirectory, Path]] = {}


def _arch(model_id: str) -> str:
    arch = model_id[len(PREFIX) :]
    if arch not in STAND_INS:
        raise ValueError(
            f"model id {model_id!r}: no tiny stand-in for {arch!r} (have: {', '.join(STAND_INS)})"
        )
    return arch


def _build(arch: str, out: Path, seed: int) -> Path:
    from paracl.testing.tiny_models import build_tiny_fsmt, build_tiny_model

    if arch == "fsmt":
        return build_tiny_fsmt(out, seed=seed)
    return build_tiny_model(arch, out, seed=seed)


def describe(model_id: str, seed: int = 0) -> dict:
    """The description that goes into metrics/metadata, without loading anything
    (stand-ins) or by resolving the id (anything else; fails early on a bad id)."""
    if model_id.startswith(PREFIX):
        arch = _arch(model_id)
        return {
            "id": model_id,
            "source": "built: paracl.testing.tiny_models",
            "note": f"STAND-IN: a tiny {arch} with random weights (seed {seed}); outputs are noise",
            "stand_in": True,
        }
    return {**resolve_model(model_id).describe(), "stand_in": False}


def local_path(model_id: str, seed: int = 0) -> Path:
    """A local directory holding the model, for this process: a stand-in is built once
    per process (into a temporary directory removed at exit), anything else resolved."""
    if not model_id.startswith(PREFIX):
        return resolve_model(model_id).path
    key = (model_id, seed)
    if key not in _BUILT:
        tmp = tempfile.TemporaryDirectory(prefix="paracl-standin-")
        arch = _arch(model_id)
        _BUILT[key] = (tmp, _build(arch, Path(tmp.name) / arch, seed))
    return _BUILT[key][1]


@contextmanager
def seq2seq_model(model_id: str, seed: int = 0) -> Iterator[tuple[Path, dict]]:
    """Yield (local path, description for metrics) for a seq2seq model id (the path is
    valid inside the block only)."""
    desc = describe(model_id, seed)
    if model_id.startswith(PREFIX):
        with tempfile.TemporaryDirectory(prefix="paracl-standin-") as tmp:
            arch = _arch(model_id)
            yield _build(arch, Path(tmp) / arch, seed), desc
        return
    yield resolve_model(model_id).path, desc
