"""Anchor sentences → hard-negative rows: chunk, mask, fill, reassemble, filter.

Counts everything that is skipped or dropped, so the stage's metrics say where the
anchors went: sentences without a noun chunk, fills T5 left out or added, negatives
identical to their anchor, duplicates among one anchor's beams.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields

import pandas as pd

from paracl.negatives.chunks import noun_chunk_spans
from paracl.negatives.generate import T5Filler
from paracl.negatives.masking import Masked, mask_spans, parse_fills, reassemble
from paracl.params import ParamsError

COUNT_NAMES = (
    "skipped_no_chunk",
    "skipped_has_sentinel",
    "skipped_too_many_chunks",
    "chunks_masked",
    "candidates",
    "fills_missing",
    "fills_extra",
    "candidates_with_missing",
    "candidates_with_extra",
    "dropped_missing",
    "dropped_identical",
    "dropped_duplicate",
)


@dataclass(frozen=True)
class CorruptConfig:
    num_beams: int = 4
    num_return_sequences: int = 4
    batch_size: int = 16
    max_fill_tokens: int = 8
    on_missing: str = "original"  # original | drop
    chunk_batch_size: int = 64

    @classmethod
    def from_params(cls, cfg: dict) -> CorruptConfig:
        """The `corrupt` params section's generation settings; beam search cannot return
        more sequences than it has beams, so that is a params error, not a crash later."""
        names = [f.name for f in fields(cls)]
        config = cls(**{name: cfg[name] for name in names})
        if config.num_return_sequences > config.num_beams:
            raise ParamsError(
                f"params.yaml: 'corrupt.num_return_sequences' ({config.num_return_sequences}) "
                f"must be <= 'corrupt.num_beams' ({config.num_beams})"
            )
        return config


def mask_texts(
    texts: Sequence[str], nlp, max_blanks: int, batch_size: int = 64
) -> tuple[list[Masked | None], Counter]:
    """Mask every noun chunk of each text; None where the text is skipped (counted)."""
    counts: Counter = Counter()
    out: list[Masked | None] = []
    for text, spans in zip(texts, noun_chunk_spans(texts, nlp, batch_size), strict=True):
        if not spans:
            counts["skipped_no_chunk"] += 1
            out.append(None)
            continue
        try:
            m = mask_spans(text, spans)
        except ValueError:  # the text itself contains a sentinel string
            counts["skipped_has_sentinel"] += 1
            out.append(None)
            continue
        if len(m.chunks) > max_blanks:
            counts["skipped_too_many_chunks"] += 1
            out.append(None)
            continue
        counts["chunks_masked"] += len(m.chunks)
        out.append(m)
    return out, counts


def corrupt(
    anchors: pd.DataFrame, nlp, filler: T5Filler, cfg: CorruptConfig
) -> tuple[pd.DataFrame, dict]:
    """Hard negatives for `anchors` (columns id, text); returns (rows, counts)."""
    texts = anchors["text"].tolist()
    masked, counts = mask_texts(texts, nlp, filler.n_sentinels, cfg.chunk_batch_size)
    keep = [i for i, m in enumerate(masked) if m is not None]
    cands = filler.fill(
        [masked[i].masked for i in keep],
        [len(masked[i].chunks) for i in keep],
        num_beams=cfg.num_beams,
        num_return_sequences=cfg.num_return_sequences,
        batch_size=cfg.batch_size,
        max_fill_tokens=cfg.max_fill_tokens,
    )
    rows = []
    per_anchor: Counter = Counter()
    ids = anchors["id"].tolist()
    for i, beams in zip(keep, cands, strict=True):
        m = masked[i]
        seen: set[str] = set()
        for rank, cand in enumerate(beams):
            counts["candidates"] += 1
            fills = parse_fills(cand.target, len(m.chunks))
            counts["fills_missing"] += fills.n_missing
            counts["fills_extra"] += fills.n_extra
            counts["candidates_with_missing"] += fills.n_missing > 0
            counts["candidates_with_extra"] += fills.n_extra > 0
            negative = reassemble(m, fills, cfg.on_missing)
            if negative is None:
                counts["dropped_missing"] += 1
                continue
            if negative.strip() == m.text.strip():
                counts["dropped_identical"] += 1
                continue
            if negative in seen:
                counts["dropped_duplicate"] += 1
                continue
            seen.add(negative)
            per_anchor[i] += 1
            rows.append(
                {
                    "id": ids[i],
                    "text": m.text,
                    "negative": negative,
                    "masked": m.masked,
                    "chunks": list(m.chunks),
                    "fills": [f if f is not None else "" for f in fills.fills],
                    "rank": rank,
                    "score": cand.score,
                    "n_missing": fills.n_missing,
                    "n_extra": fills.n_extra,
                }
            )
    counts["sentences_in"] = len(texts)
    counts["sentences_masked"] = len(keep)
    counts["negatives"] = len(rows)
    counts["anchors_with_negative"] = len(per_anchor)
    for name in COUNT_NAMES:
        counts.setdefault(name, 0)
    stats = {k: int(v) for k, v in sorted(counts.items())}
    stats["negatives_per_anchor"] = round(len(rows) / len(per_anchor), 4) if per_anchor else 0.0
    stats["negatives_per_masked_sentence"] = round(len(rows) / len(keep), 4) if keep else 0.0
    stats["negatives_per_anchor_histogram"] = {
        str(k): int(v) for k, v in sorted(Counter(per_anchor.get(i, 0) for i in keep).items())
    }
    columns = [
        "id",
        "text",
        "negative",
        "masked",
        "chunks",
        "fills",
        "rank",
        "score",
        "n_missing",
        "n_extra",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for col in ("rank", "n_missing", "n_extra"):
        frame[col] = frame[col].astype("int32")
    frame["score"] = frame["score"].astype("float32")
    return frame, stats


def merge_stats(parts: Sequence[dict]) -> dict:
    """Sum the `corrupt` stats of several shards into the stats of their union (every
    count is per anchor, so sums are exact; the ratios are recomputed)."""
    counts: Counter = Counter()
    histogram: Counter = Counter()
    for part in parts:
        for key, value in part.items():
            if key == "negatives_per_anchor_histogram":
                histogram.update({int(k): int(v) for k, v in value.items()})
            elif not key.startswith("negatives_per_"):
                counts[key] += int(value)
    for name in (*COUNT_NAMES, "sentences_in", "sentences_masked", "negatives"):
        counts.setdefault(name, 0)
    counts.setdefault("anchors_with_negative", 0)
    stats = {k: int(v) for k, v in sorted(counts.items())}
    neg, anchors, masked = (
        stats["negatives"],
        stats["anchors_with_negative"],
        stats["sentences_masked"],
    )
    stats["negatives_per_anchor"] = round(neg / anchors, 4) if anchors else 0.0
    stats["negatives_per_masked_sentence"] = round(neg / masked, 4) if masked else 0.0
    stats["negatives_per_anchor_histogram"] = {str(k): v for k, v in sorted(histogram.items())}
    return stats
