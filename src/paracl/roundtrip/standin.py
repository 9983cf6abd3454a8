"""Model ids for the round-trip stages, with an explicit stand-in for offline runs.

No MT or BART weights exist on the package registries this project can use, so the
default params name `tiny-random:marian` / `tiny-random:bart`: a tiny model of the real
architecture with random weights (paracl.testing.tiny_models), built on the fly. It
exercises every code path but produces noise, so every metric of a run that used one
says `"stand_in": true`. Any other id goes through paracl.models.resolve_model.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paracl.models import resolve_model

PREFIX = "tiny-random:"
STAND_INS = ("marian", "fsmt", "bart", "t5")  # seq2seq architectures tiny_models builds


@contextmanager
def seq2seq_model(model_id: str, seed: int = 0) -> Iterator[tuple[Path, dict]]:
    """Yield (local path, description for metrics) for a seq2seq model id."""
    if model_id.startswith(PREFIX):
        from paracl.testing.tiny_models import build_tiny_fsmt, build_tiny_model

        arch = model_id[len(PREFIX) :]
        with tempfile.TemporaryDirectory(prefix="paracl-standin-") as tmp:
            try:
                if arch not in STAND_INS:
                    raise ValueError(arch)
                if arch == "fsmt":
                    path = build_tiny_fsmt(Path(tmp) / arch, seed=seed)
                else:
                    path = build_tiny_model(arch, Path(tmp) / arch, seed=seed)
            except (KeyError, ValueError):
                raise ValueError(
                    f"model id {model_id!r}: no tiny stand-in for {arch!r} "
                    f"(have: {', '.join(STAND_INS)})"
                ) from None
            yield (
                path,
                {
                    "id": model_id,
                    "source": "built: paracl.testing.tiny_models",
                    "note": f"STAND-IN: a tiny {arch} with random weights (seed {seed}); outputs are noise",
                    "stand_in": True,
                },
            )
        return
    resolved = resolve_model(model_id)
    yield resolved.path, {**resolved.describe(), "stand_in": False}
