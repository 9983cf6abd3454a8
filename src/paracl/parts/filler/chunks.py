"""Noun chunks with spaCy (English) and GiNZA (Japanese), batched through nlp.pipe.

JCSE masks noun chunks rather than single nouns "to generate more natural data"
(§3.2): a chunk is the noun with its determiners and modifiers (`the lazy dog`), so T5
replaces a whole phrase. Only the parser is needed; other components are disabled to
make the pipe faster.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from paracl.core.languages import profile, profiles

log = logging.getLogger(__name__)

PIPELINES = {p.code: p.noun_chunks for p in profiles()}  # each profile's `noun_chunks`
# components noun_chunks does not read (the syntax iterators need the parse and POS)
_NOT_NEEDED = ("ner", "lemmatizer", "compound_splitter")


def load_pipeline(lang: str):
    """Load the packaged spaCy pipeline for `lang` with only what noun_chunks needs."""
    import spacy

    name = profile(lang).noun_chunks
    nlp = spacy.load(name)
    disable = [p for p in _NOT_NEEDED if p in nlp.pipe_names]
    for pipe in disable:
        nlp.disable_pipe(pipe)
    log.info("noun chunks: spaCy pipeline %s (%s)", name, ", ".join(nlp.pipe_names))
    return nlp


def noun_chunk_spans(
    texts: Iterable[str], nlp, batch_size: int = 64
) -> Iterator[list[tuple[int, int]]]:
    """Yield, for each text, the (start, end) character spans of its noun chunks."""
    for doc in nlp.pipe(texts, batch_size=batch_size):
        yield [(c.start_char, c.end_char) for c in doc.noun_chunks]
