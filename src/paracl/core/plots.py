"""One way to draw a PNG: matplotlib without a display, written atomically, and the same
bytes for the same data (no software/date stamp), so DVC sees a plot change only when
its numbers change. And one way to draw a measured curve: markers where something was
measured, lines only between neighbouring measurements, so a line never suggests a
value at a step nobody ran."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from paracl.core.io import atomic_path


@contextmanager
def png_figure(path: str | Path, dpi: int, tight: bool = True, **subplots) -> Iterator[tuple]:
    """`with png_figure(path, dpi=80, figsize=(6, 4)) as (fig, ax): ax.plot(...)` draws
    and writes `path`; a failure inside the block writes nothing. The figure is closed
    afterwards but keeps its artists, so a caller (a test) can still inspect it."""
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


def measured_runs(xs: Sequence[float], grid: Iterable[float]) -> list[list[int]]:
    """Indices of `xs` (ascending) grouped into runs of neighbours on `grid` (every x that
    was planned or measured anywhere on the plot): [8, 64] on the grid 8, 32, 64 is two
    runs, since 32 lies between them unmeasured."""
    order = {x: i for i, x in enumerate(sorted({*grid, *xs}))}
    runs: list[list[int]] = []
    for i, x in enumerate(xs):
        if runs and order[x] == order[xs[runs[-1][-1]]] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def measured_curve(ax, rows: list[dict], x: str, grid: Iterable[float], **style) -> None:
    """Each row (x, `value`, `std` or None) a marker with its sd as an error bar; a line
    joins two rows only where no grid point lies between them (measured_runs)."""
    rows = sorted(rows, key=lambda r: r[x])
    xs, ys = [r[x] for r in rows], [r["value"] for r in rows]
    errs = [r.get("std") or 0.0 for r in rows]
    bars = ax.errorbar(xs, ys, yerr=errs if any(errs) else None, marker="o", linestyle="none",
                       capsize=3, **style)  # fmt: skip
    color = bars.lines[0].get_color()
    for run in measured_runs(xs, grid):
        if len(run) > 1:
            ax.plot([xs[i] for i in run], [ys[i] for i in run], "-", color=color)
