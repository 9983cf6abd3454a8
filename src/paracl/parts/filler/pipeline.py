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
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from paracl.core.configs import from_section
from paracl.core.errors import ParamsError
from paracl.parts.filler.causal import CausalFiller, Sampling, drop_reason
from paracl.parts.filler.chunks import noun_chunk_spans
from paracl.parts.filler.fills import quality_counts
from paracl.parts.filler.generate import T5Filler
from paracl.parts.filler.masking import (
    SENTINEL_RE,
    Fills,
    Masked,
    mask_spans,
    parse_fills,
    reassemble,
)
from paracl.parts.filler.script_chunks import (
    SCRIPT,
    SCRIPT_MAX_LENGTH,
    SCRIPT_NUM_BEAMS,
    SCRIPT_RANK,
    VARIANTS,
    script_targets,
)
from paracl.parts.filler.sequential import Chain, causal_step, run_chains, t5_step

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
    "chunks_not_found",
    "steps_short_of_rank",
    "q_identical",
    "q_outside_changed",
    "q_garbled",
)
RATIOS = "ppl_log_ratios"
COLUMNS = ["id", "text", "negative", "masked", "chunks", "fills", "rank", "score"]
COLUMNS += ["n_missing", "n_extra"]


MASK_MODES = ("sequential", "all_at_once")
SHORT_OF_RANK = ("lowest", "keep")
AUTHORS = {"num_beams": SCRIPT_NUM_BEAMS, "fill_max_length": SCRIPT_MAX_LENGTH}  # both scripts


@dataclass(frozen=True)
class CorruptConfig:
    """The generation settings of the `corrupt` section (params.yaml says what each is)."""

    num_beams: int
    num_return_sequences: int
    batch_size: int
    max_fill_tokens: int
    on_missing: str  # original | drop
    chunk_batch_size: int
    num_samples: int  # causal LM: hypotheses sampled per anchor
    top_k: int
    temperature: float
    fill_slack_tokens: int
    max_blanks: int
    quantize: bool
    mask_mode: str  # sequential (JCSE's code) | all_at_once (its text)
    variant: str  # sequential: which of the authors' scripts (script_chunks.VARIANTS)
    keep_rank: int | None  # sequential: the candidate kept per chunk (1 = best); None: the script's
    fill_max_length: int  # sequential: decoder tokens per chunk, start token included
    short_of_rank: str  # sequential: fewer candidates than the rank: lowest | keep (the chunk)

    @classmethod
    def from_params(cls, cfg: dict, seq2seq: bool = True) -> CorruptConfig:
        """The `corrupt` params section's generation settings, checked: a bad value is a
        one-line params error naming it, not a crash later."""
        config = from_section(cls, cfg)
        config.check(seq2seq)
        return config

    def check(self, seq2seq: bool) -> None:
        """Beam search cannot return more sequences than it has beams, nor sampling keep
        more than it drew; sequential mode needs ranks keep_rank .. keep_rank+K-1."""

        def fail(name: str, why: str) -> None:
            value = getattr(self, name)
            null_rank = name == "keep_rank" and value is None
            shown = f"null: the script's {self.rank}" if null_rank else repr(value)
            raise ParamsError(f"params.yaml: 'corrupt.{name}' ({shown}) {why}")

        if self.mask_mode not in MASK_MODES:
            fail("mask_mode", f"must be one of {', '.join(MASK_MODES)}")
        if self.short_of_rank not in SHORT_OF_RANK:
            fail("short_of_rank", f"must be one of {', '.join(SHORT_OF_RANK)}")
        if self.variant not in VARIANTS:
            fail("variant", f"must be one of {', '.join(VARIANTS)}")
        if self.keep_rank is not None and (
            not isinstance(self.keep_rank, int) or isinstance(self.keep_rank, bool)
            or self.keep_rank < 1
        ):  # fmt: skip
            fail("keep_rank", "must be null (the script's) or an integer >= 1 (1 = the best)")
        if not isinstance(self.fill_max_length, int) or self.fill_max_length < 2:
            fail("fill_max_length", "must be an integer >= 2 (start token and sentinel)")
        pool, pool_name = (self.num_beams, "num_beams") if seq2seq else (
            self.num_samples, "num_samples")  # fmt: skip
        if self.num_return_sequences > pool:
            fail("num_return_sequences", f"must be <= 'corrupt.{pool_name}' ({pool})")
        if self.mask_mode == "sequential" and self.deepest_rank > pool:
            fail(
                "keep_rank", f"+ num_return_sequences - 1 must be <= 'corrupt.{pool_name}' ({pool})"
            )

    @property
    def rank(self) -> int:
        """Sequential mode: the first rank kept; keep_rank null is the variant's script's
        (the 2nd beam; QAbot's the 8th)."""
        return self.keep_rank if self.keep_rank is not None else SCRIPT_RANK[self.variant]

    @property
    def deepest_rank(self) -> int:
        """Sequential mode: the last rank a chain keeps (one chain per negative)."""
        return self.rank + self.num_return_sequences - 1

    def summary(self, causal: bool) -> dict:
        """How negatives were generated, for the metrics, with every departure from
        JCSE's authors' code named (docs/models.md, JCSE)."""
        sequential = self.mask_mode == "sequential"
        return {
            "mask_mode": self.mask_mode,
            "variant": self.variant if sequential else None,
            "script": SCRIPT[self.variant] if sequential else None,
            "search": "sampled hypotheses, reranked" if causal else "beam search",
            "beam_width": self.num_samples if causal else self.num_beams,
            "kept_ranks": list(range(self.rank, self.deepest_rank + 1)) if sequential else None,
            "fill_max_length": self.fill_max_length if sequential else None,
            "deviations": self.deviations(causal),
        }

    def deviations(self, causal: bool) -> list[str]:
        """Each departure from the authors' script (the variant's), in words."""
        if self.mask_mode != "sequential":
            out = ["all chunks at once with distinct sentinels (JCSE's text), not one chunk at "
                   "a time (its authors' code)"]  # fmt: skip
        else:
            script_rank = SCRIPT_RANK[self.variant]
            out = [f"{n} {getattr(self, n)}, the authors' {v}" for n, v in AUTHORS.items()
                   if getattr(self, n) != v and not (causal and n == "num_beams")]  # fmt: skip
            if self.rank != script_rank:
                out.append(f"keep_rank {self.rank}, the authors' {script_rank}")
        if self.num_return_sequences != 1:
            out.append(f"{self.num_return_sequences} negatives per anchor; the authors' "
                       "scripts write 1 (JCSE's text: 4)")  # fmt: skip
        if causal:
            out += self._causal_deviations()
        out.append("a negative identical to its anchor (or an anchor with no noun chunk) is "
                   "dropped; the authors write the sentence as it is")  # fmt: skip
        return out

    def _causal_deviations(self) -> list[str]:
        """What the causal LM filler cannot do as the authors' T5 does."""
        sequential = self.mask_mode == "sequential"
        budget = ", within the span budget in the LM's tokens" if sequential else ""
        out = [
            f"a causal LM samples {self.num_samples} hypotheses a blank, reranked by "
            f"likelihood; the authors beam-search T5 with {SCRIPT_NUM_BEAMS} beams",
            f"a fill ends where the LM writes the text after its blank or at its chunk's "
            f"length (+1){budget}; the authors keep every T5 token after <extra_id_0> up "
            "to max_length",
            "candidates with a garbled, cut-off, truncated or unchanged fill are dropped "
            "before ranking; the authors keep the beam as it is",
        ]
        if sequential:
            short = "splices the lowest-ranked" if self.short_of_rank == "lowest" else (
                "keeps its chunk")  # fmt: skip
            out.append(f"a step with fewer usable samples than the rank {short}; "
                       f"{SCRIPT_NUM_BEAMS} beams always reach the authors' rank")  # fmt: skip
        return out

    def sampling(self) -> Sampling:
        """The causal LM filler's share of these settings."""
        return from_section(Sampling, asdict(self))


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
    if cfg.mask_mode == "sequential":
        return corrupt_sequential(anchors, nlp, filler, cfg)
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
            reason = drop_reason(h, m.chunks)
            if reason is not None:
                counts[reason] += 1
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


def chunk_texts(
    texts: Sequence[str], nlp, variant: str, batch_size: int = 64
) -> tuple[list[list[tuple[str, tuple[int, int]]]], Counter]:
    """Each text's blanks as the variant's script picks them (script_chunks), in order,
    with their character spans; none where the text is skipped (counted: no noun chunk,
    or a sentinel string in the text itself)."""
    counts: Counter = Counter()
    out = []
    for text, found in zip(texts, script_targets(texts, nlp, variant, batch_size), strict=True):
        if not found:
            counts["skipped_no_chunk"] += 1
        elif SENTINEL_RE.search(text):
            counts["skipped_has_sentinel"] += 1
            found = []
        out.append(found)
    return out, counts


def corrupt_sequential(
    anchors: pd.DataFrame, nlp, filler: T5Filler | CausalFiller, cfg: CorruptConfig
) -> tuple[pd.DataFrame, dict]:
    """Hard negatives as JCSE's authors' code makes them (paracl.parts.filler.sequential):
    one chain per kept rank, num_return_sequences chains per anchor, each written
    stripped as the scripts write it. A row's `masked` is the anchor with the blanks its
    chain replaced as sentinels (the quality counts then say whether an edit strayed
    outside them), `rank` the kept rank - 1, `score` the kept candidates' mean."""
    texts, ids = anchors["text"].tolist(), anchors["id"].tolist()
    targets, counts = chunk_texts(texts, nlp, cfg.variant, cfg.chunk_batch_size)
    chunks = [[t for t, _ in found] for found in targets]
    if isinstance(filler, CausalFiller):
        step = causal_step(filler, cfg.fill_max_length, cfg.variant, counts)
    else:
        step = t5_step(filler, cfg.num_beams, cfg.deepest_rank, cfg.batch_size,
                       cfg.fill_max_length, cfg.variant, counts)  # fmt: skip
    ranks = range(cfg.rank, cfg.deepest_rank + 1)
    rows: list[dict] = []
    per_anchor: Counter = Counter()
    seen: set[tuple[int, str]] = set()
    lowest = cfg.short_of_rank == "lowest"
    for chain in run_chains(texts, chunks, step, ranks, counts, lowest):
        chain.text = chain.text.strip()
        if chain.text == texts[chain.anchor].strip():
            counts["dropped_identical"] += 1
        elif (chain.anchor, chain.text) in seen:
            counts["dropped_duplicate"] += 1
        else:
            seen.add((chain.anchor, chain.text))
            per_anchor[chain.anchor] += 1
            rows.append(_chain_row(ids[chain.anchor], texts[chain.anchor], targets, chain))
    n_masked = sum(bool(found) for found in targets)
    return _finish(rows, counts, per_anchor, len(texts), n_masked)


def _chain_row(anchor_id: str, text: str, targets: list, chain: Chain) -> dict:
    """One NEGATIVES row of a finished chain: `chunks` the strings its steps blanked,
    `masked` their spans in the anchor as sentinels (a span overlapping an earlier one,
    as a QAbot target can, is left out of `masked` only)."""
    spans: list[tuple[int, int]] = []
    for k in chain.replaced:  # the script's blanks come left to right, replaced in order
        start, end = targets[chain.anchor][k][1]
        if not spans or start >= spans[-1][1]:
            spans.append((start, end))
    masked = mask_spans(text, spans, merge=False).masked
    m = Masked(text, masked, tuple(targets[chain.anchor][k][0] for k in chain.replaced))
    score = round(sum(chain.scores) / len(chain.scores), 6)
    n_missing = sum(not f for f in chain.fills)
    return negative_row(anchor_id, m, chain.text, chain.fills, chain.rank - 1, score, n_missing)


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
