"""SIM × BLEU heatmaps of paraphrase pairs (paper Figures 1 and 3).

Each cell is the percentage of pairs whose semantic similarity (y) and BLEU (x) fall in
it, on 10-point bins over 0–100. High-quality paraphrases sit bottom-right of the BLEU
axis and top of the SIM axis. As in the paper (footnotes 2 and 12), only pairs with at
least 4 words after symbol removal are counted: BLEU of shorter pairs is mostly 0.

Two outputs per figure: a PNG for people and a CSV with one row per pair (sim_bin,
bleu_bin) that `dvc plots` renders with its `confusion` template.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from paracl.io import atomic_path
from paracl.roundtrip.tagging import strip_symbols

EDGES = list(range(0, 101, 10))
LABELS = [f"{lo}-{lo + 10}" for lo in EDGES[:-1]]


def bin_label(value: float) -> str:
    """The 10-point bin of a score in [0, 100]; 100 falls in 90-100."""
    return LABELS[min(max(int(value // 10), 0), len(LABELS) - 1)]


def long_enough(texts, paraphrases, lang: str, min_words: int) -> np.ndarray:
    """Mask of pairs whose both sides have >= min_words words after symbol removal."""

    def words(s: str) -> int:
        stripped = strip_symbols(s, lang)
        if lang == "ja":  # no spaces: count characters / 2 as a rough word count
            return len(stripped.replace(" ", "")) // 2
        return len(stripped.split())

    return np.array(
        [
            words(a) >= min_words and words(b) >= min_words
            for a, b in zip(texts, paraphrases, strict=True)
        ],
        dtype=bool,
    )


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


def write_png(panels: Mapping[str, tuple[np.ndarray, np.ndarray]], path: str | Path) -> None:
    """One heatmap per panel title, side by side, with the percentage in each cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(panels), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, 4.4), squeeze=False)
    for ax, (title, (sim, bleu)) in zip(axes[0], panels.items(), strict=False):
        matrix = percent_matrix(sim, bleu)
        ax.imshow(matrix, origin="lower", cmap="Blues", vmin=0, vmax=max(matrix.max(), 1e-9))
        for r in range(matrix.shape[0]):
            for c in range(matrix.shape[1]):
                if matrix[r, c] >= 0.5:
                    ax.text(c, r, f"{matrix[r, c]:.0f}", ha="center", va="center", fontsize=6)
        edges = [i - 0.5 for i in range(len(EDGES))]  # ticks on the bin edges
        ax.set_xticks(edges, [str(e) for e in EDGES], fontsize=7)
        ax.set_yticks(edges, [str(e) for e in EDGES], fontsize=7)
        ax.set_xlabel("BLEU (surface similarity)")
        ax.set_ylabel("SIM (semantic similarity)")
        ax.set_title(f"{title} (n={len(sim)})", fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
