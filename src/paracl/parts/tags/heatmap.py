"""SIM × BLEU heatmaps of paraphrase pairs (paper Figures 1 and 3).

Each cell is the percentage of pairs whose semantic similarity (y) and BLEU (x) fall in
it, on 10-point bins over 0–100. High-quality paraphrases sit bottom-right of the BLEU
axis and top of the SIM axis. As in the paper (footnotes 2 and 12), only pairs with at
least 4 words after symbol removal are counted (`paracl.parts.tags.text.long_enough`):
BLEU of shorter pairs is mostly 0.

Two outputs per figure: a PNG for people and a CSV with one row per pair (sim_bin,
bleu_bin) that `dvc plots` renders with its `confusion` template.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from paracl.core.io import atomic_path
from paracl.core.plots import png_figure

EDGES = list(range(0, 101, 10))
LABELS = [f"{lo}-{lo + 10}" for lo in EDGES[:-1]]

Panels = Mapping[str, tuple[np.ndarray, np.ndarray]]  # title -> (sim, bleu)


def bin_label(value: float) -> str:
    """The 10-point bin of a score in [0, 100]; 100 falls in 90-100."""
    return LABELS[min(max(int(value // 10), 0), len(LABELS) - 1)]


def plot_rows(sim: np.ndarray, bleu: np.ndarray) -> pd.DataFrame:
    """One row per pair with its bins: the data `dvc plots` (confusion template) reads."""
    return pd.DataFrame(
        {"sim_bin": [bin_label(s) for s in sim], "bleu_bin": [bin_label(b) for b in bleu]}
    )


def percent_matrix(sim: np.ndarray, bleu: np.ndarray) -> np.ndarray:
    """10×10 percentages, rows = SIM bins (low to high), columns = BLEU bins."""
    counts, _, _ = np.histogram2d(np.clip(sim, 0, 100), np.clip(bleu, 0, 100), bins=[EDGES, EDGES])
    total = counts.sum()
    return counts / total * 100 if total else counts


def write_csv(rows: pd.DataFrame, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        rows.to_csv(tmp, index=False)


def write_csv_dir(panels: Panels, directory: str | Path) -> None:
    """One CSV per panel in `directory`, named after the panel's tags (<SIM95><BLEU20> →
    SIM95_BLEU20.csv). The directory is emptied first: a tag pair no longer requested
    leaves no stale plot behind."""
    directory = Path(directory)
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for tags, (sim, bleu) in panels.items():
        name = tags.replace("><", "_").strip("<>")
        write_csv(plot_rows(sim, bleu), directory / f"{name}.csv")


def tags_of(name: str) -> str:
    """The inverse of write_csv_dir's file naming: SIM95_BLEU0_5 → <SIM95><BLEU0_5>
    (a name without tags, such as `untagged`, stays as it is)."""
    return f"<{name.replace('_BLEU', '><BLEU')}>" if name.startswith("SIM") else name


def write_png(panels: Panels, path: str | Path, columns: int = 2):
    """One heatmap per panel title, `columns` to a row (two stay legible at a page's
    width), with the percentage in each cell. Returns the (closed) Figure."""
    n = max(len(panels), 1)
    ncols = min(n, columns)
    nrows = -(-n // ncols)
    figure = png_figure(path, dpi=100, nrows=nrows, ncols=ncols, squeeze=False,
                        figsize=(4.4 * ncols, 4.2 * nrows))  # fmt: skip
    with figure as (fig, axes):
        for ax in axes.flat[len(panels) :]:
            ax.set_axis_off()
        for ax, (title, (sim, bleu)) in zip(axes.flat, panels.items(), strict=False):
            _draw(ax, title, sim, bleu)
    return fig


def _draw(ax, title: str, sim: np.ndarray, bleu: np.ndarray) -> None:
    matrix = percent_matrix(sim, bleu)
    top = max(matrix.max(), 1e-9)
    ax.imshow(matrix, origin="lower", cmap="Blues", vmin=0, vmax=top)
    for r in range(matrix.shape[0]):
        for c in range(matrix.shape[1]):
            if matrix[r, c] >= 0.5:  # white on the dark cells, black on the light ones
                ink = "white" if matrix[r, c] > top / 2 else "black"
                ax.text(c, r, f"{matrix[r, c]:.0f}", ha="center", va="center", fontsize=8,
                        color=ink)  # fmt: skip
    edges = [i - 0.5 for i in range(len(EDGES))]  # ticks on the bin edges
    ax.set_xticks(edges, [str(e) for e in EDGES], fontsize=8)
    ax.set_yticks(edges, [str(e) for e in EDGES], fontsize=8)
    ax.set_xlabel("BLEU (surface similarity)")
    ax.set_ylabel("SIM (semantic similarity)")
    ax.set_title(f"{title} (n={len(sim)})", fontsize=10)
