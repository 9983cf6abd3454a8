"""Did the paraphraser obey the tags it was given? (paper Figure 3)

Each generated paraphrase is scored as the tagger scores candidates (STS ×100, sentence
BLEU ×100), so its own <SIM><BLEU> cell can be compared with the one requested: per
requested tag pair, the mean SIM and BLEU, the share of outputs that land in the
requested cell (hit rate) or within one cell of it on each axis (near rate), the
output/input length ratios (the generation window), and the (sim, bleu) pairs long
enough for the heatmap.

The baseline is the same paraphraser prompted with no tags (rows with `tags` ""): the
paper sets Figure 3 against Figure 1, the similarities an uncontrolled paraphraser
reaches; the untagged model is that uncontrolled paraphraser, so its rate in each
requested cell is what the tags have to beat. (The raw source as baseline would sit at
SIM ≈ 100, BLEU 100, outside every cell.)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from paracl.core import schemas
from paracl.core.io import iter_batches
from paracl.parts.tags import tagging
from paracl.parts.tags.text import long_enough

_COLUMNS = ("sim", "bleu", "n_input_tokens", "n_output_tokens")
BASELINE = ""  # the `tags` of the untagged baseline's rows


def ratio_summary(counts: Sequence[int], lengths: Sequence[int]) -> dict:
    """Output/input token-length ratios, to show the window was respected."""
    ratios = np.array([c / n for c, n in zip(counts, lengths, strict=True) if n > 0])
    if not len(ratios):
        return {"min": None, "max": None, "mean": None}
    return {"min": float(ratios.min()), "max": float(ratios.max()), "mean": float(ratios.mean())}


def hit_rate(sim: np.ndarray, bleu: np.ndarray, sim_tag: str, bleu_tag: str) -> float | None:
    """The share of pairs whose own tags are the requested ones (None for no pairs)."""
    if not len(sim):
        return None
    hits = [
        tagging.sim_tag(s) == sim_tag and tagging.bleu_tag(b) == bleu_tag
        for s, b in zip(sim, bleu, strict=True)
    ]
    return float(np.mean(hits))


def _cell(sim: float, bleu: float) -> tuple[int, int]:
    """(SIM row, BLEU column) of a pair on the tag grid, extended past its edges: SIM
    ≤ 70 is row -1, BLEU > 45 column 8, so "one cell off" is defined everywhere."""
    row = tagging.SIM_TAGS.index(tagging.sim_tag(sim)) if tagging.sim_tag(sim) else -1
    b = tagging.bleu_tag(bleu)
    col = tagging.BLEU_TAGS.index(b) if b else len(tagging.BLEU_TAGS)
    return row, col


def near_rate(sim: np.ndarray, bleu: np.ndarray, sim_tag: str, bleu_tag: str) -> float | None:
    """The share of pairs within one cell of the requested one on both axes (a SIM90 or
    SIM95 output for <SIM95>; <BLEU0_5> and <BLEU10> are neighbours)."""
    if not len(sim):
        return None
    want = (tagging.SIM_TAGS.index(sim_tag), tagging.BLEU_TAGS.index(bleu_tag))
    cells = [_cell(s, b) for s, b in zip(sim, bleu, strict=True)]
    return float(np.mean([abs(r - want[0]) <= 1 and abs(c - want[1]) <= 1 for r, c in cells]))


def adherence(sim: np.ndarray, bleu: np.ndarray, sim_tag: str, bleu_tag: str) -> dict:
    """Hit and near rates, and the mean SIM/BLEU, of outputs for one requested cell."""
    n = len(sim)
    return {
        "n": n,
        "sim_mean": float(sim.mean()) if n else None,
        "bleu_mean": float(bleu.mean()) if n else None,
        "hit_rate": hit_rate(sim, bleu, sim_tag, bleu_tag),
        "near_rate": near_rate(sim, bleu, sim_tag, bleu_tag),
    }


def measure(
    generated: str | Path,
    requested: Sequence[tuple[str, str]],
    lang: str,
    min_words: int,
    baseline: str | Path | None = None,
) -> tuple[dict, dict]:
    """(per requested tag pair: its numbers and the untagged baseline's in the same cell,
    per tag pair (and "untagged"): the heatmap's (sim, bleu)), streamed from the
    generated artifact and the baseline's (a few numbers per row held)."""
    cols: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    files = [generated] + ([baseline] if baseline is not None else [])
    batches = (b for f in files for b in iter_batches(f, schema=schemas.GENERATED_PARAPHRASES))
    for batch in batches:
        for tags, part in batch.groupby("tags", sort=False):
            c = cols[tags]
            for name in _COLUMNS:
                c[name].append(part[name].to_numpy())
            mask = long_enough(part["text"], part["paraphrase"], lang, min_words)
            c["mask"].append(np.asarray(mask, dtype=bool))

    def column(tags: str, name: str) -> np.ndarray:
        parts = cols[tags][name] if tags in cols else []
        return np.concatenate(parts) if parts else np.zeros(0)

    base_sim, base_bleu = column(BASELINE, "sim"), column(BASELINE, "bleu")
    per_tag, panels = {}, {}
    for sim_tag, bleu_tag in requested:
        tags = sim_tag + bleu_tag
        sim, bleu = column(tags, "sim"), column(tags, "bleu")
        mask = column(tags, "mask").astype(bool)
        panels[tags] = (sim[mask], bleu[mask])
        per_tag[tags] = {
            **adherence(sim, bleu, sim_tag, bleu_tag),
            "length_ratio": ratio_summary(
                column(tags, "n_output_tokens").astype(int).tolist(),
                column(tags, "n_input_tokens").astype(int).tolist(),
            ),
            "baseline": adherence(base_sim, base_bleu, sim_tag, bleu_tag),
        }
    if len(base_sim):
        mask = column(BASELINE, "mask").astype(bool)
        panels["untagged"] = (base_sim[mask], base_bleu[mask])
    return per_tag, panels
