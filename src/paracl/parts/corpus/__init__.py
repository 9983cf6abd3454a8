"""The corpus stage: raw Wikipedia text → clean, filtered, tokenised sentences.

readers (Wiki-40B text, plain text, JaQuAD JSON) → segment (Moses rules /
ja_sentence_segmenter) → tokenize (Moses / MeCab+IPAdic) → length filter, dedup
(dedup: hashes spilled to disk), langdetect (langid) in a seeded order up to a reproducible cap
(order: streamed windows) (pipeline). See pipeline.py for the order and why.
"""

from paracl.parts.corpus.pipeline import CorpusConfig, prepare_corpus
from paracl.parts.corpus.readers import Document, ReadStats, read_documents

__all__ = ["CorpusConfig", "Document", "ReadStats", "prepare_corpus", "read_documents"]
