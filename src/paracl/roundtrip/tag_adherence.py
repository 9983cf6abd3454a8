"""Did the paraphraser obey the tags it was given? (paper Figure 3)

Each generated paraphrase is scored as the tagger scores candidates (STS ×100, sentence
BLEU ×100), so its own <SIM><BLEU> cell can be compared with the one requested: per
requested tag pair, the mean SIM and BLEU, the share of outputs that land in the
requested cell (hit rate), the output/input length ratios (the generation window), and
the (sim, bleu) pairs long enough for the heatmap.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from paracl import schemas
from paracl.io import iter_batches
from paracl.roundtrip import tagging
from paracl.roundtrip.text import long_enough

_COLUMNS = ("sim", "bleu", "n_input_tokens", "n_output_tokens")


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


def measure(
    generated: str | Path, requested: Sequence[tuple[str, str]], lang: str, min_words: int
) -> tuple[dict, dict]:
    """(per requested tag pair: its numbers, per tag pair: the heatmap's (sim, bleu)),
    streamed from the generated artifact (a few numbers per row held)."""
    cols: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for batch in iter_batches(generated, schema=schemas.GENERATED_PARAPHRASES):
        for tags, part in batch.groupby("tags", sort=False):
            c = cols[tags]
            for name in _COLUMNS:
                c[name].append(part[name].to_numpy())
            mask = long_enough(part["text"], part["paraphrase"], lang, min_words)
            c["mask"].append(np.asarray(mask, dtype=bool))

    def column(tags: str, name: str) -> np.ndarray:
        parts = cols[tags][name] if tags in cols else []
        return np.concatenate(parts) if parts else np.zeros(0)

    per_tag, panels = {}, {}
    for sim_tag, bleu_tag in requested:
        tags = sim_tag + bleu_tag
        sim, bleu = column(tags, "sim"), column(tags, "bleu")
        mask = column(tags, "mask").astype(bool)
        panels[tags] = (sim[mask], bleu[mask])
        n = len(sim)
        per_tag[tags] = {
            "n": n,
            "sim_mean": float(sim.mean()) if n else None,
            "bleu_mean": float(bleu.mean()) if n else None,
            "hit_rate": hit_rate(sim, bleu, sim_tag, bleu_tag),
            "length_ratio": ratio_summary(
                column(tags, "n_output_tokens").astype(int).tolist(),
                column(tags, "n_input_tokens").astype(int).tolist(),
            ),
        }
    return per_tag, panels
