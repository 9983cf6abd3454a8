"""JCSE's negatives as its authors' code makes them: one noun chunk at a time.

Why: JCSE's text masks all noun chunks at once with distinct sentinels, but its released
generator (mu-kindai/JCSE, gen_forsup_contra.py) does otherwise, and the code is what made
the paper's data. It takes the noun chunks of the *original* sentence and, for each in
turn, replaces the chunk's first occurrence in the sentence *as edited so far* by the one
sentinel `<extra_id_0>`, beam-searches T5 (200 beams, at most 15 decoder tokens) and
splices the 2nd-best beam's fill in, then moves on to the next chunk. A chunk no longer in
the edited sentence (an earlier fill swallowed it) is skipped, as the authors' QA script
does.

A *chain* is that walk for one sentence and one kept beam rank; K negatives per anchor are
K chains keeping ranks keep_rank .. keep_rank+K-1 (the `_topK` reading, docs/models.md).
Work is batched by step: the i-th chunk of every live chain goes to the filler together
(sentences with fewer chunks drop out), and identical inputs, such as every chain of a
sentence at its first step, are filled once. A causal LM takes the place of the beams by
its sampled hypotheses, reranked by likelihood after fills.py's rules (`causal_step`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from paracl.parts.filler.causal import CausalFiller, drop_reason
from paracl.parts.filler.generate import T5Filler
from paracl.parts.filler.masking import Masked, parse_fills, sentinel

BLANK = sentinel(0)
# one step's inputs (current text, the chunk blanked) -> per input, (fill, score) best first
Step = Callable[[Sequence[Masked]], list[list[tuple[str, float]]]]


@dataclass
class Chain:
    """One sentence edited chunk by chunk, keeping the `rank`-th candidate (1 = best)."""

    anchor: int
    rank: int
    text: str
    replaced: list[int] = field(default_factory=list)  # chunk numbers, in order
    fills: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)


def blank_first(text: str, chunk: str) -> Masked | None:
    """`text` with the first occurrence of `chunk` as `<extra_id_0>`; None if absent."""
    if not chunk or chunk not in text:
        return None
    return Masked(text=text, masked=text.replace(chunk, BLANK, 1), chunks=(chunk,))


def run_chains(
    texts: Sequence[str],
    chunks: Sequence[Sequence[str]],
    step: Step,
    ranks: Sequence[int],
    counts: Counter,
) -> list[Chain]:
    """Every sentence with a chunk, one chain per rank, walked chunk by chunk."""
    chains = [Chain(i, r, texts[i]) for i in range(len(texts)) if chunks[i] for r in ranks]
    for k in range(max((len(c) for c in chunks), default=0)):
        todo: list[tuple[Chain, Masked]] = []
        for chain in chains:
            if k >= len(chunks[chain.anchor]):
                continue  # this sentence has no k-th chunk
            m = blank_first(chain.text, chunks[chain.anchor][k])
            if m is None:
                counts["chunks_not_found"] += 1
            else:
                todo.append((chain, m))
        unique = {m.masked: m for _, m in todo}  # each distinct input filled once
        found = dict(zip(unique, step(list(unique.values())), strict=True))
        for chain, m in todo:
            cands = found[m.masked]
            if len(cands) < chain.rank:
                counts["steps_short_of_rank"] += 1  # the chunk stays
                continue
            fill, score = cands[chain.rank - 1]
            counts["chunks_masked"] += 1
            counts["fills_missing"] += not fill
            chain.text = m.masked.replace(BLANK, fill, 1)
            chain.replaced.append(k)
            chain.fills.append(fill)
            chain.scores.append(score)
    return chains


def t5_step(
    filler: T5Filler,
    num_beams: int,
    num_return_sequences: int,
    batch_size: int,
    max_length: int,
    counts: Counter,
) -> Step:
    """T5's beams for the single blank, best first; a fill is the text between
    `<extra_id_0>` and the next sentinel (empty where T5 gave none), kept as is."""

    def step(masked: Sequence[Masked]) -> list[list[tuple[str, float]]]:
        beams = filler.fill_one(
            [m.masked for m in masked], num_beams, num_return_sequences, batch_size, max_length
        )
        out = []
        for cands in beams:
            counts["candidates"] += len(cands)
            out.append([(parse_fills(c.target, 1).fills[0] or "", c.score) for c in cands])
        return out

    return step


def causal_step(filler: CausalFiller, counts: Counter) -> Step:
    """A causal LM's sampled hypotheses for the single blank that pass fills.py's rules,
    distinct, best mean log-likelihood first (none for an input too long to fill)."""

    def step(masked: Sequence[Masked]) -> list[list[tuple[str, float]]]:
        out = []
        for m, res in zip(masked, filler.fill(masked), strict=True):
            if res is None:
                counts["skipped_too_long"] += 1
                out.append([])
                continue
            usable: dict[str, float] = {}
            for h in res.hyps:
                counts["candidates"] += 1
                reason = drop_reason(h, m.chunks)
                if reason is None and h.fills[0] is None:
                    reason = "dropped_fill_is_original"  # the chunk kept: no edit
                if reason is not None:
                    counts[reason] += 1
                    continue
                fill = (h.fills[0] or "").strip()
                if fill in usable:
                    counts["dropped_duplicate"] += 1
                usable[fill] = max(h.score, usable.get(fill, h.score))
            out.append(sorted(usable.items(), key=lambda p: (-p[1], p[0])))
        return out

    return step
