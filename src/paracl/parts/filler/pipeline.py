"""Anchor sentences → hard-negative rows: chunk, mask, fill, reassemble, filter.

Counts everything that is skipped or dropped, so the stage's metrics say where the
anchors went: sentences without a noun chunk, fills T5 left out or added, a causal LM's
candidates with a garbled, cut-off or unchanged fill, negatives identical to their
anchor, duplicates among one anchor's candidates. Both fillers' written negatives get
the same quality counts (fills.quality_counts); the causal LM's also carry the log
perplexity ratio negative / anchor of each negative (`ppl_log_ratios`, summarised by
merge_stats and then dropped).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from paracl.core.params import ParamsError
from paracl.parts.filler.causal import CausalFiller, Sampling
from paracl.parts.filler.chunks import noun_chunk_spans
from paracl.parts.filler.fills import is_dangling, is_garbled, is_original, quality_counts
from paracl.parts.filler.generate import T5Filler
from paracl.parts.filler.masking import Fills, Masked, mask_spans, parse_fills, reassemble

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
    "dropped_garbled",
    "dropped_truncated",
    "dropped_dangling",
    "dropped_fill_is_original",
    "skipped_too_long",
    "q_identical",
    "q_outside_changed",
    "q_garbled",
)
RATIOS = "ppl_log_ratios"
COLUMNS = ["id", "text", "negative", "masked", "chunks", "fills", "rank", "score"]
COLUMNS += ["n_missing", "n_extra"]


@dataclass(frozen=True)
class CorruptConfig:
    num_beams: int = 4
    num_return_sequences: int = 4
    batch_size: int = 16
    max_fill_tokens: int = 8
    on_missing: str = "original"  # original | drop
    chunk_batch_size: int = 64
    num_samples: int = 6  # causal LM: hypotheses sampled per anchor
    top_k: int = 20
    temperature: float = 1.0
    fill_slack_tokens: int = 4
    max_blanks: int = 2
    quantize: bool = True

    @classmethod
    def from_params(cls, cfg: dict, seq2seq: bool = True) -> CorruptConfig:
        """The `corrupt` params section's generation settings; beam search cannot return
        more sequences than it has beams, nor sampling keep more than it drew: params
        errors, not a crash later."""
        names = [f.name for f in fields(cls)]
        config = cls(**{name: cfg[name] for name in names})
        if not seq2seq:
            if config.num_return_sequences > config.num_samples:
                raise ParamsError(
                    f"params.yaml: 'corrupt.num_return_sequences' ({config.num_return_sequences}) "
                    f"must be <= 'corrupt.num_samples' ({config.num_samples})"
                )
            return config
        if config.num_return_sequences > config.num_beams:
            raise ParamsError(
                f"params.yaml: 'corrupt.num_return_sequences' ({config.num_return_sequences}) "
                f"must be <= 'corrupt.num_beams' ({config.num_beams})"
            )
        return config

    def sampling(self) -> Sampling:
        return Sampling(
            num_samples=self.num_samples,
            top_k=self.top_k,
            temperature=self.temperature,
            fill_slack_tokens=self.fill_slack_tokens,
            batch_size=self.batch_size,
            max_blanks=self.max_blanks,
            quantize=self.quantize,
        )


def join_spaced(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans separated only by whitespace as one span: a causal LM needs text between
    two blanks to tell where the first fill ends."""
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and not text[out[-1][1] : start].strip():
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def mask_texts(
    texts: Sequence[str], nlp, max_blanks: int, batch_size: int = 64, join: bool = False
) -> tuple[list[Masked | None], Counter]:
    """Mask every noun chunk of each text; None where the text is skipped (counted).
    join: chunks separated by whitespace only become one blank (join_spaced)."""
    counts: Counter = Counter()
    out: list[Masked | None] = []
    for text, spans in zip(texts, noun_chunk_spans(texts, nlp, batch_size), strict=True):
        spans = join_spaced(text, spans) if join else spans
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
    anchors: pd.DataFrame, nlp, filler: T5Filler | CausalFiller, cfg: CorruptConfig
) -> tuple[pd.DataFrame, dict]:
    """Hard negatives for `anchors` (columns id, text); returns (rows, counts)."""
    if isinstance(filler, CausalFiller):
        return corrupt_causal(anchors, nlp, filler, cfg)
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
                negative_row(
                    ids[i],
                    m,
                    negative,
                    fills.fills,
                    rank,
                    cand.score,
                    fills.n_missing,
                    fills.n_extra,
                )
            )
    return _finish(rows, counts, per_anchor, len(texts), len(keep))


def corrupt_causal(
    anchors: pd.DataFrame, nlp, filler: CausalFiller, cfg: CorruptConfig
) -> tuple[pd.DataFrame, dict]:
    """Hard negatives from a causal LM: each anchor's sampled hypotheses that pass the
    fill rules (fills.py), best mean log-likelihood first, num_return_sequences kept."""
    texts, ids = anchors["text"].tolist(), anchors["id"].tolist()
    masked, counts = mask_texts(texts, nlp, filler.n_sentinels, cfg.chunk_batch_size, join=True)
    keep = [i for i, m in enumerate(masked) if m is not None]
    rows: list[dict] = []
    per_anchor: Counter = Counter()
    ratios: list[float] = []
    for i, res in zip(keep, filler.fill([masked[i] for i in keep]), strict=True):
        if res is None:
            counts["skipped_too_long"] += 1
            continue
        m, found, seen = masked[i], [], set()
        for h in res.hyps:
            counts["candidates"] += 1
            fills = tuple(None if f is None else f.strip() for f in h.fills)
            pairs = [(f, c) for f, c in zip(fills, m.chunks, strict=True) if f is not None]
            if not h.clean or any(is_garbled(f, c) for f, c in pairs):
                counts["dropped_garbled"] += 1
            elif h.truncated:
                counts["dropped_truncated"] += 1
            elif any(is_dangling(f) for f, _ in pairs):
                counts["dropped_dangling"] += 1
            elif any(is_original(f, c) for f, c in pairs):
                counts["dropped_fill_is_original"] += 1
            else:
                negative = reassemble(m, Fills(fills, 0, 0))
                if negative.strip() == m.text.strip():
                    counts["dropped_identical"] += 1
                elif negative in seen:
                    counts["dropped_duplicate"] += 1
                else:
                    seen.add(negative)
                    found.append((-h.score, len(found), negative, fills, h.score))
        for rank, (_, _, negative, fills, score) in enumerate(
            sorted(found)[: cfg.num_return_sequences]
        ):
            per_anchor[i] += 1
            ratios.append(round(res.anchor_score - score, 6))  # log(ppl negative / anchor)
            rows.append(negative_row(ids[i], m, negative, fills, rank, round(score, 6)))
    frame, stats = _finish(rows, counts, per_anchor, len(texts), len(keep))
    stats[RATIOS] = ratios
    return frame, stats


def negative_row(
    anchor_id: str,
    masked,
    negative: str,
    fills,
    rank: int,
    score: float,
    n_missing: int = 0,
    n_extra: int = 0,
) -> dict:
    """One row of schemas.NEGATIVES (either filler); a blank left unfilled is ""."""
    return {
        "id": anchor_id,
        "text": masked.text,
        "negative": negative,
        "masked": masked.masked,
        "chunks": list(masked.chunks),
        "fills": ["" if f is None else f for f in fills],
        "rank": rank,
        "score": score,
        "n_missing": n_missing,
        "n_extra": n_extra,
    }


def _finish(
    rows: list[dict], counts: Counter, per_anchor: Counter, n_texts: int, n_masked: int
) -> tuple[pd.DataFrame, dict]:
    """The rows as a frame of the NEGATIVES columns, and the shard's counts."""
    frame = pd.DataFrame(rows, columns=COLUMNS)
    counts.update(
        quality_counts(
            frame["text"], frame["negative"], frame["masked"], frame["chunks"], frame["fills"]
        )
    )
    counts["sentences_in"] = n_texts
    counts["sentences_masked"] = n_masked
    counts["negatives"] = len(rows)
    counts["anchors_with_negative"] = len(per_anchor)
    for name in COUNT_NAMES:
        counts.setdefault(name, 0)
    stats = {k: int(v) for k, v in sorted(counts.items())}
    stats["negatives_per_anchor"] = round(len(rows) / len(per_anchor), 4) if per_anchor else 0.0
    stats["negatives_per_masked_sentence"] = round(len(rows) / n_masked, 4) if n_masked else 0.0
    keys = [k for k in per_anchor] + [None] * (n_masked - len(per_anchor))
    hist = Counter(per_anchor[k] if k is not None else 0 for k in keys)
    stats["negatives_per_anchor_histogram"] = {str(k): int(v) for k, v in sorted(hist.items())}
    for col in ("rank", "n_missing", "n_extra"):
        frame[col] = frame[col].astype("int32")
    frame["score"] = frame["score"].astype("float32")
    return frame, stats


def merge_stats(parts: Sequence[dict]) -> dict:
    """Sum the `corrupt` stats of several shards into the stats of their union (every
    count is per anchor, so sums are exact; the ratios are recomputed)."""
    counts: Counter = Counter()
    histogram: Counter = Counter()
    ratios: list[float] = []
    for part in parts:
        for key, value in part.items():
            if key == RATIOS:
                ratios += value
            elif key == "negatives_per_anchor_histogram":
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
    stats["quality"] = quality(stats, ratios)
    return stats


def quality(stats: dict, ratios: Sequence[float]) -> dict:
    """Shares over the written negatives (and, for a causal LM, over its candidates) and
    the median perplexity ratio negative / anchor (null without a causal LM)."""
    neg, cands = stats["negatives"], stats["candidates"]

    def share(n: int, of: int) -> float | None:
        return round(n / of, 4) if of else None

    return {
        "share_identical": share(stats["q_identical"], neg),
        "share_outside_changed": share(stats["q_outside_changed"], neg),
        "share_garbled": share(stats["q_garbled"], neg),
        "median_ppl_ratio": round(math.exp(float(np.median(ratios))), 4) if ratios else None,
        "candidate_share_garbled": share(stats["dropped_garbled"], cands),
        "candidate_share_truncated": share(stats["dropped_truncated"], cands),
        "candidate_share_dangling": share(stats["dropped_dangling"], cands),
        "candidate_share_fill_is_original": share(stats["dropped_fill_is_original"], cands),
        "candidate_share_identical": share(stats["dropped_identical"], cands),
    }
