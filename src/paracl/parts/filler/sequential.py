"""JCSE's negatives as its authors' code makes them: one noun chunk at a time.

Why: JCSE's text masks all noun chunks at once with distinct sentinels, but its released
generators (mu-kindai/JCSE, gen_forsup_contra.py and its QAbot twin
gen_forsup_contra_qa.py) do otherwise, and the code is what made the paper's data. They
take the blanks of the *original* sentence (script_chunks: the noun chunks, or for QAbot
the merged ones) and, for each in turn, replace its first occurrence in the sentence *as
edited so far* by the one sentinel `<extra_id_0>`, beam-search T5 (200 beams, at most 15
decoder tokens; QAbot: 5 for a target under 3 characters) and splice one beam's fill in
(the 2nd of 2; QAbot: the 8th of 8), kept as their `_filter` keeps it (every decoded token
after `<extra_id_0>`, special tokens skipped: generate.T5Filler.script_span), then move on
to the next blank. A blank no longer in the edited sentence (an earlier fill swallowed
it) is skipped, as the QA script does. The script writes one negative per anchor.

A *chain* is that walk for one sentence and one kept beam rank; K negatives per anchor are
K chains keeping ranks keep_rank .. keep_rank+K-1 (K = 1, the scripts', by default).
Work is batched by step: the i-th blank of every live chain goes to the filler together
(sentences with fewer blanks drop out), and identical inputs, such as every chain of a
sentence at its first step, are filled once. A causal LM takes the place of the beams by
its sampled hypotheses, reranked by likelihood after fills.py's rules (`causal_step`),
each fill at most the script's span budget in the LM's tokens; where fewer are usable
than the rank, `short_of_rank` says whether the lowest-ranked one or the chunk stays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from paracl.parts.filler.causal import CausalFiller, drop_reason
from paracl.parts.filler.generate import T5Filler
from paracl.parts.filler.masking import Masked, sentinel
from paracl.parts.filler.script_chunks import step_max_length

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
    lowest: bool = False,
) -> list[Chain]:
    """Every sentence with a chunk, one chain per rank, walked chunk by chunk. A step with
    fewer candidates than a chain's rank (a causal LM's usable samples) keeps the chunk,
    or with `lowest` splices the lowest-ranked candidate there is (the script's kept beam
    is the last it returns)."""
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
        unique = {(m.masked, m.chunks): m for _, m in todo}  # each distinct input filled once
        found = dict(zip(unique, step(list(unique.values())), strict=True))
        for chain, m in todo:
            cands = found[(m.masked, m.chunks)]
            if len(cands) < chain.rank:
                counts["steps_short_of_rank"] += 1
                if not (lowest and cands):
                    continue  # the chunk stays
            fill, score = cands[min(chain.rank, len(cands)) - 1]
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
    variant: str,
    counts: Counter,
) -> Step:
    """T5's beams for the single blank, best first, each fill as the authors' scripts
    keep it (Candidate.span: the decoded tokens after `<extra_id_0>`, special tokens
    skipped, unstripped), each input's decoder budget the variant's (step_max_length)."""

    def step(masked: Sequence[Masked]) -> list[list[tuple[str, float]]]:
        budgets = [step_max_length(m.chunks[0], variant, max_length) for m in masked]
        texts = [m.masked for m in masked]
        beams = filler.fill_one(texts, num_beams, num_return_sequences, batch_size, budgets)
        out = []
        for cands in beams:
            counts["candidates"] += len(cands)
            out.append([(c.span or "", c.score) for c in cands])
        return out

    return step


def causal_step(filler: CausalFiller, max_length: int, variant: str, counts: Counter) -> Step:
    """A causal LM's sampled hypotheses for the single blank that pass fills.py's rules,
    distinct, best mean log-likelihood first (none for an input too long to fill). A fill
    has at most the script's span budget in the LM's tokens: the step's max_length less
    the decoder start and `<extra_id_0>` (13; QAbot's short targets 3)."""

    def step(masked: Sequence[Masked]) -> list[list[tuple[str, float]]]:
        caps = [max(1, step_max_length(m.chunks[0], variant, max_length) - 2) for m in masked]
        out = []
        for m, res in zip(masked, filler.fill(masked, caps), strict=True):
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
