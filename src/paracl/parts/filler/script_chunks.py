"""What each one-chunk-at-a-time step blanks, and its span budget, as JCSE's authors'
two generators decide (mu-kindai/JCSE).

Why: the released scripts, not the paper's text, made the paper's negatives, and the two
differ. `gen_forsup_contra.py` (variant `main`, the clinical corpus) blanks the text of
each GiNZA noun chunk in turn, gives T5 at most 15 decoder tokens and splices the 2nd of
2 returned beams in. `gen_forsup_contra_qa.py` (variant `qabot`, the programming course's
Q&A) first merges adjacent chunks, blanks the token after a bare `課題` ("exercise")
instead of the word, takes a number after a chunk with it, gives a target shorter than 3
characters only 5 decoder tokens and splices the 8th of 8 beams in. The merge keeps the
script's quirks: a chunk that ends the sentence is never merged, and in a run of three
adjacent chunks only the last two survive, joined.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

VARIANTS = ("main", "qabot")
SCRIPT = {"main": "gen_forsup_contra.py", "qabot": "gen_forsup_contra_qa.py"}
SCRIPT_RANK = {"main": 2, "qabot": 8}  # the beam spliced in: results[1] of 2, results[7] of 8
SCRIPT_NUM_BEAMS = 200
SCRIPT_MAX_LENGTH = 15  # decoder tokens, the start token and <extra_id_0> included
QABOT_SHORT_CHARS = 3  # qabot: a target shorter than this …
QABOT_SHORT_MAX_LENGTH = 5  # … gets this max_length instead
QABOT_TASK_WORD = "課題"  # qabot: a chunk that is only this word blanks the token after it
NUM = "NUM"  # the universal POS tag of a number


@dataclass(frozen=True)
class Token:
    """A token of the parsed sentence: its text, universal POS and character offset."""

    text: str
    pos: str
    idx: int


@dataclass(frozen=True)
class Noun:
    """A noun chunk (or a merge of two): its text and token range [start, end)."""

    text: str
    start: int
    end: int


def merge_adjacent(nouns: Sequence[Noun], n_tokens: int) -> list[Noun]:
    """The QA script's merge: a chunk that starts where the one before it ends, and does not
    end the sentence, replaces the last kept entry by the two joined (the one before as
    spaCy gave it, so of three adjacent chunks only the last two survive). The first chunk
    compares with the last (Python's index -1), as the script's does; should that ever
    match, the script deletes the entry it just added."""
    out: list[Noun] = []
    for i, noun in enumerate(nouns):
        prev = nouns[i - 1]
        if noun.end < n_tokens and noun.start == prev.end:
            if i == 0:
                continue
            out[-1] = Noun(prev.text + noun.text, prev.start, noun.end)
        else:
            out.append(noun)
    return out


def qabot_targets(nouns: Sequence[Noun], tokens: Sequence[Token]) -> list[tuple[str, int, int]]:
    """The QA script's blanks after the merge, each with its token range: a bare `課題`
    gives the token after it; a chunk followed by a number gives the chunk and the
    number's text joined; any other chunk its own text."""
    out = []
    for noun in merge_adjacent(nouns, len(tokens)):
        nxt = tokens[noun.end] if noun.end < len(tokens) else None
        if nxt is not None and noun.text == QABOT_TASK_WORD:
            out.append((nxt.text, noun.end, noun.end + 1))
        elif nxt is not None and nxt.pos == NUM:
            out.append((noun.text + nxt.text, noun.start, noun.end + 1))
        else:
            out.append((noun.text, noun.start, noun.end))
    return out


def step_max_length(target: str, variant: str, fill_max_length: int) -> int:
    """The decoder budget of one step: fill_max_length (the scripts' 15), or for the QA
    script's targets shorter than 3 characters its 5."""
    if variant == "qabot" and len(target) < QABOT_SHORT_CHARS:
        return min(QABOT_SHORT_MAX_LENGTH, fill_max_length)
    return fill_max_length


def doc_targets(doc, variant: str) -> list[tuple[str, tuple[int, int]]]:
    """A parsed sentence's blanks in order, each (the string the script looks for, its
    character span in the sentence: where the row's `masked` shows it)."""
    tokens = [Token(t.text, t.pos_, t.idx) for t in doc]
    nouns = [Noun(c.text, c.start, c.end) for c in doc.noun_chunks]
    if variant == "qabot":
        ranges = qabot_targets(nouns, tokens)
    else:
        ranges = [(n.text, n.start, n.end) for n in nouns]
    out = []
    for text, start, end in ranges:
        last = tokens[end - 1]
        out.append((text, (tokens[start].idx, last.idx + len(last.text))))
    return out


def script_targets(
    texts: Iterable[str], nlp, variant: str, batch_size: int = 64
) -> Iterator[list[tuple[str, tuple[int, int]]]]:
    """doc_targets of each text, parsed through nlp.pipe."""
    for doc in nlp.pipe(texts, batch_size=batch_size):
        yield doc_targets(doc, variant)
