"""Sentinel masking of noun chunks and reassembly of T5's fills into sentences.

T5 is trained on inputs like `The <extra_id_0> sat on <extra_id_1> .` with targets
`<extra_id_0> cat <extra_id_1> the mat <extra_id_2>`. Each masked chunk gets its own
sentinel, numbered from 0 within the sentence, as T5 expects. A generated target may
lack a sentinel (a *missing* fill), repeat one, or name a sentinel the input never had
(*extra* fills); these are counted, never silently merged into the wrong blank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SENTINEL_RE = re.compile(r"<extra_id_(\d+)>")


def sentinel(i: int) -> str:
    """The i-th T5 sentinel token."""
    return f"<extra_id_{i}>"


@dataclass(frozen=True)
class Masked:
    """A sentence with its chunks replaced by sentinels 0..n-1, left to right."""

    text: str
    masked: str
    chunks: tuple[str, ...]


def mask_spans(text: str, spans: list[tuple[int, int]], merge: bool = True) -> Masked:
    """Replace each (start, end) character span of `text` with its own sentinel.

    Overlapping or touching spans are merged first (two sentinels side by side would
    ask T5 for two fills where the original had one phrase). merge=False keeps touching
    spans apart (one blank per chunk filled one at a time, sequential.py); overlapping
    spans are then an error.
    """
    if SENTINEL_RE.search(text):
        raise ValueError("text already contains a T5 sentinel; it cannot be masked")
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if not 0 <= start < end <= len(text):
            raise ValueError(f"span ({start}, {end}) is outside a text of {len(text)} chars")
        if merged and start < merged[-1][1] and not merge:
            raise ValueError(f"span ({start}, {end}) overlaps the one before")
        if merged and start <= merged[-1][1] and merge:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, chunks, pos = [], [], 0
    for i, (start, end) in enumerate(merged):
        out.append(text[pos:start])
        out.append(sentinel(i))
        chunks.append(text[start:end])
        pos = end
    out.append(text[pos:])
    return Masked(text=text, masked="".join(out), chunks=tuple(chunks))


@dataclass(frozen=True)
class Fills:
    """The fills parsed from one generated target, one slot per sentinel of the input."""

    fills: tuple[str | None, ...]  # None where T5 gave no (or an empty) fill
    n_missing: int
    n_extra: int  # sentinels beyond the input's, repeated sentinels


def parse_fills(generated: str, n_sentinels: int) -> Fills:
    """Split `<extra_id_0> a <extra_id_1> b ...` into one fill per input sentinel.

    `generated` is the decoded target with special tokens kept except pad and eos
    (strip those first). Text before the first sentinel is ignored. A sentinel numbered
    >= n_sentinels, or seen twice, counts as extra and its text is discarded. The last
    sentinel T5 emits to close the final span (`<extra_id_n>` with n == n_sentinels and
    no text after it) is T5's normal end marker, not an extra fill.
    """
    fills: list[str | None] = [None] * n_sentinels
    seen: set[int] = set()
    n_extra = 0
    parts = SENTINEL_RE.split(generated)
    # parts = [before, id0, text0, id1, text1, ...]
    for k in range(1, len(parts), 2):
        idx, fill = int(parts[k]), parts[k + 1].strip()
        if idx == n_sentinels and not fill and k + 2 >= len(parts):
            continue  # T5's closing sentinel
        if idx >= n_sentinels or idx in seen:
            n_extra += 1
            continue
        seen.add(idx)
        fills[idx] = fill or None
    n_missing = sum(f is None for f in fills)
    return Fills(fills=tuple(fills), n_missing=n_missing, n_extra=n_extra)


def reassemble(m: Masked, fills: Fills, on_missing: str = "original") -> str | None:
    """Put the fills into the masked sentence's blanks.

    on_missing: `original` puts the original chunk back into a blank T5 did not fill
    (the rest of the sentence is still corrupted); `drop` gives up on the sentence
    (returns None).
    """
    if len(fills.fills) != len(m.chunks):
        raise ValueError(f"{len(fills.fills)} fills for {len(m.chunks)} blanks")
    if on_missing not in ("original", "drop"):
        raise ValueError(f"on_missing must be 'original' or 'drop', got {on_missing!r}")
    if fills.n_missing and on_missing == "drop":
        return None
    out, pos = [], 0
    for i, fill in enumerate(fills.fills):
        start = m.masked.index(sentinel(i), pos)
        out.append(m.masked[pos:start])
        out.append(m.chunks[i] if fill is None else fill)
        pos = start + len(sentinel(i))
    out.append(m.masked[pos:])
    return "".join(out)
