"""One way to draw a PNG: matplotlib without a display, written atomically, and the same
bytes for the same data (no software/date stamp), so DVC sees a plot change only when
its numbers change."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paracl.io import atomic_path


@contextmanager
def png_figure(path: str | Path, dpi: int, tight: bool = True, **subplots) -> Iterator[tuple]:
    """`with png_figure(path, dpi=80, figsize=(6, 4)) as (fig, ax): ax.plot(...)` draws
    and writes `path`; a failure inside the block writes nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(**subplots)
    try:
        yield fig, axes
        if tight:
            fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    finally:
        plt.close(fig)
