"""Surface/semantic similarity of a pair, its <SIMxx><BLEUxx> tags, and balanced splits.

Paper §3.1: similarity is measured after symbol removal (`paracl.parts.tags.text`).
Surface similarity is sentence BLEU ×100 on the lower-cased text; semantic similarity is
a cross-encoder's STS score ×100.

Paper §3.3/§4.1: a pair is high quality when SIM > 70 and BLEU <= 45. SIM is binned in
steps of 5 (<SIM70> = (70, 75), …, <SIM95> = [95, 100]); BLEU in steps of 5 from 10
(<BLEU10> = [10, 15), …, <BLEU40> = [40, 45]), with [0, 10) merged into <BLEU0_5> because
few pairs fall there. 6 × 8 = 48 cells; the splits take the same number of pairs from
every cell, twice as many from a <BLEU0_5> cell (its range is twice as wide).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

from paracl.core.errors import ParamsError
from paracl.core.languages import DEFAULT, profile
from paracl.parts.tags.text import strip_symbols

SIM_MIN = 70.0  # high quality: SIM > SIM_MIN …
BLEU_MAX = 45.0  # … and BLEU <= BLEU_MAX
SIM_TAGS = [f"<SIM{v}>" for v in range(70, 100, 5)]  # 6
BLEU_TAGS = ["<BLEU0_5>"] + [f"<BLEU{v}>" for v in range(10, 45, 5)]  # 8
ALL_TAGS = SIM_TAGS + BLEU_TAGS
CELLS = [(s, b) for s in SIM_TAGS for b in BLEU_TAGS]  # the 48 tag pairs
SPLITS = ("dev", "test", "train")  # filled in this order: the small held-out sets first

_TAG = re.compile(r"<[A-Z]+[0-9_]+>")


def parse_tags(
    value: str, source: str = "params.yaml: 'generate_paraphrases.tags' entry"
) -> tuple[str, str]:
    """'<SIM95><BLEU20>' → ('<SIM95>', '<BLEU20>'): the tag pair a user asks the
    paraphraser for. Anything else is a ParamsError whose message starts with `source`."""
    found = _TAG.findall(value)
    if (
        "".join(found) != value.replace(" ", "")
        or len(found) != 2
        or found[0] not in SIM_TAGS
        or found[1] not in BLEU_TAGS
    ):
        raise ParamsError(
            f"{source} {value!r} must be one SIM tag ({', '.join(SIM_TAGS)}) "
            f"followed by one BLEU tag ({', '.join(BLEU_TAGS)})"
        )
    return found[0], found[1]


@lru_cache(maxsize=4)
def _bleu(lang: str):
    """Plain sentence BLEU, as the round-trip paper's: a paraphrase of fewer than 4 tokens
    has no 4-grams and scores 0 (its footnote 12), where sacreBLEU's `effective_order`
    would score it on the n-grams it has. sacreBLEU warns on every such call; silenced."""
    from sacrebleu.metrics import BLEU

    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    return BLEU(tokenize=profile(lang).bleu_tokenize, effective_order=False)


def sentence_bleu(hypothesis: str, reference: str, lang: str = DEFAULT) -> float:
    """Sentence BLEU ×100 of a paraphrase against its source, both stripped and lower-cased."""
    hyp = strip_symbols(hypothesis, lang).lower()
    ref = strip_symbols(reference, lang).lower()
    return float(_bleu(lang).sentence_score(hyp, [ref]).score)


def sim_tag(sim: float) -> str | None:
    """<SIMxx> for a semantic similarity in (70, 100]; None outside (not high quality)."""
    if not SIM_MIN < sim <= 100.0:
        return None
    return SIM_TAGS[min(int((sim - SIM_MIN) // 5), len(SIM_TAGS) - 1)]


def bleu_tag(bleu: float) -> str | None:
    """<BLEUxx> for a BLEU in [0, 45]; [0, 10) is <BLEU0_5>; None above 45."""
    if not 0.0 <= bleu <= BLEU_MAX:
        return None
    if bleu < 10.0:
        return BLEU_TAGS[0]
    return BLEU_TAGS[min(int(bleu // 5) - 1, len(BLEU_TAGS) - 1)]


def cell_weight(bleu: str) -> int:
    """How many shares of the split a cell gets: 2 for <BLEU0_5> (a 10-point range)."""
    return 2 if bleu == BLEU_TAGS[0] else 1


def score_pairs(
    texts: Sequence[str],
    paraphrases: Sequence[str],
    sts: Callable[[list[tuple[str, str]]], np.ndarray],
    lang: str = DEFAULT,
) -> tuple[np.ndarray, np.ndarray]:
    """(SIM ×100, BLEU ×100) of each pair; `sts` maps stripped pairs to scores in [0, 1]."""
    stripped = [
        (strip_symbols(a, lang), strip_symbols(b, lang))
        for a, b in zip(texts, paraphrases, strict=True)
    ]
    sim = (
        np.asarray(sts(stripped), dtype=np.float64).reshape(-1) * 100.0 if stripped else np.zeros(0)
    )
    bleu = np.array([sentence_bleu(b, a, lang) for a, b in stripped], dtype=np.float64)
    return sim, bleu


def add_tags(df: pd.DataFrame) -> pd.DataFrame:
    """Add sim_tag and bleu_tag columns (None where the pair is not high quality)."""
    out = df.copy()
    out["sim_tag"] = [sim_tag(s) for s in out["sim"]]
    out["bleu_tag"] = [bleu_tag(b) for b in out["bleu"]]
    return out


def high_quality(df: pd.DataFrame) -> pd.DataFrame:
    """Pairs with SIM > 70 and BLEU <= 45 (both tags assigned)."""
    return df[df["sim_tag"].notna() & df["bleu_tag"].notna()]


def balanced_split(
    df: pd.DataFrame, per_share: dict[str, int | None], seed: int
) -> tuple[pd.DataFrame, list[dict]]:
    """Sample dev/test/train evenly over the 48 cells; return (sampled rows, per-cell counts).

    per_share[split] pairs per share of a cell (a <BLEU0_5> cell has 2 shares); None
    takes every pair left in the cell. A cell with too few pairs gives what it has, dev
    first, then test, then train; its counts say how many were wanted.

    A source sentence (`id`) lands in one split only, so no test sentence was seen in
    training: once one of its paraphrases is in a split, the others can go only there
    (or nowhere, if that split's share of their cell is full: counted as
    `source_elsewhere`). Cells are filled in a fixed order, so this stays seeded.
    """
    rows, counts = [], []
    home: dict[str, str] = {}  # source id -> the split holding its paraphrases
    ordered = df.sort_values(["sim_tag", "bleu_tag", "id", "paraphrase"], kind="stable")
    groups = dict(tuple(ordered.groupby(["sim_tag", "bleu_tag"], sort=True)))
    for index, (s, b) in enumerate(CELLS):
        cell = groups.get((s, b), ordered.iloc[0:0])
        rng = np.random.default_rng([seed, index])
        cell = cell.iloc[rng.permutation(len(cell))]
        weight = cell_weight(b)
        wanted = {
            split: None if per_share.get(split) is None else weight * per_share[split]
            for split in SPLITS
        }
        taken: dict[str, list[int]] = {split: [] for split in SPLITS}
        elsewhere = 0
        for pos, source in enumerate(cell["id"].astype(str)):
            open_splits = [
                split
                for split in ([home[source]] if source in home else SPLITS)
                if wanted[split] is None or len(taken[split]) < wanted[split]
            ]
            if not open_splits:
                elsewhere += source in home
                continue
            taken[open_splits[0]].append(pos)
            home.setdefault(source, open_splits[0])
        count = {"sim_tag": s, "bleu_tag": b, "available": len(cell)}
        for split in SPLITS:
            rows.append(cell.iloc[taken[split]].assign(split=split))
            count[split] = len(taken[split])
            count[f"{split}_wanted"] = wanted[split]
        count["source_elsewhere"] = elsewhere
        counts.append(count)
    sampled = pd.concat(rows, ignore_index=True) if rows else df.assign(split=[])
    return sampled, counts


def summarize_cells(counts: list[dict]) -> dict:
    """Empty and short cells, for the metrics and the log."""
    empty = [f"{c['sim_tag']}{c['bleu_tag']}" for c in counts if c["available"] == 0]
    short = [
        f"{c['sim_tag']}{c['bleu_tag']}"
        for c in counts
        if any(c[f"{s}_wanted"] is not None and c[s] < c[f"{s}_wanted"] for s in SPLITS)
    ]
    return {"n_cells": len(counts), "empty_cells": empty, "short_cells": short}
