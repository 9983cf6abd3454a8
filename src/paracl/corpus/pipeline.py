"""Raw Wikipedia text → filtered, tokenised sentences (stage prepare_corpus).

Order of work, cheapest first, because langdetect (~5 ms a sentence) costs more than
everything else together:

1. read documents (readers.py); split into sentences and tokenise in worker
   processes, one shard of documents per task; drop sentences of <= min_words or
   >= max_words words (PPDB paper §4.2: "more than 5 and fewer than 50");
2. deduplicate by text, keeping the first occurrence in input order;
3. langdetect (seeded) on the survivors in a seeded random order, again in worker
   processes, keeping those with p(lang) >= threshold, and stopping once
   `max_sentences` are kept. The first k survivors of a random permutation are a
   uniform random sample of all survivors, so this is the reproducible sample the
   cap asks for, without running langdetect on sentences the cap would discard.

Results are consumed in submission order and documents are never split across
shards, so the output is the same bytes for any number of workers. Sentence ids are
`<doc_id>-<n>`, n counting every sentence of the document before filtering, so an id
does not change when a filter setting does.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from tqdm import tqdm

from paracl.corpus import langid, segment, tokenize
from paracl.corpus.readers import Document, ReadStats, read_documents
from paracl.params import ParamsError
from paracl.stage import InputError

log = logging.getLogger(__name__)

LANGID_BLOCK = 256  # candidate sentences per langdetect task …
LANGID_MIN_BLOCK = 16  # … shrinking to this near the cap, so little work is wasted


@dataclass(frozen=True)
class CorpusConfig:
    """Everything the corpus depends on (workers and shard size change only speed)."""

    source: str
    format: str
    lang: str
    min_words: int
    max_words: int
    langdetect_threshold: float
    max_sentences: int | None
    seed: int

    @classmethod
    def from_params(cls, params: dict) -> CorpusConfig:
        cfg = params["prepare_corpus"]
        lang = params["lang"]
        if cfg["min_words"] >= cfg["max_words"] - 1:
            raise ParamsError(
                f"'prepare_corpus.min_words' ({cfg['min_words']}) must be at least 2 less "
                f"than 'prepare_corpus.max_words' ({cfg['max_words']}): no sentence could pass"
            )
        return cls(
            source=cfg["input"][lang]["source"],
            format=cfg["input"][lang]["format"],
            lang=lang,
            min_words=cfg["min_words"],
            max_words=cfg["max_words"],
            langdetect_threshold=float(cfg["langdetect_threshold"]),
            max_sentences=cfg["max_sentences"],
            seed=params["seed"],
        )


# A sentence that passed the length filter: (doc_id, title, n, text, tokens).
Record = tuple[str, str, int, str, list[str]]


def _init_worker(seed: int) -> None:
    langid.set_seed(seed)


def split_shard(task: tuple[list[Document], str, int, int]) -> tuple[list[Record], dict]:
    """Split, tokenise and length-filter one shard of documents (runs in a worker)."""
    docs, lang, min_words, max_words = task
    records: list[Record] = []
    counts = {"sentences": 0, "too_short": 0, "too_long": 0}
    for doc in docs:
        n = 0
        for para in doc.paragraphs:
            for sent in segment.split_sentences(para, lang):
                tokens = tokenize.tokenize(sent, lang)
                counts["sentences"] += 1
                if len(tokens) <= min_words:
                    counts["too_short"] += 1
                elif len(tokens) >= max_words:
                    counts["too_long"] += 1
                else:
                    records.append((doc.doc_id, doc.title, n, sent, tokens))
                n += 1
    return records, counts


def detect_block(task: tuple[list[str], str]) -> list[float]:
    """langdetect's p(lang) for each sentence of a block (runs in a worker)."""
    texts, lang = task
    return [langid.language_prob(t, lang) for t in texts]


AHEAD = 2  # tasks in flight per worker


def ordered_map(
    fn: Callable, tasks: Iterable, pool: ProcessPoolExecutor | None, in_flight: int
) -> Iterator:
    """`map(fn, tasks)` over a process pool: results in task order (so the output does
    not depend on the number of workers), at most `in_flight` tasks submitted and not
    yet handed out (bounded memory on a large corpus). Tasks are drawn lazily, one each time a result
    is handed out; closing the iterator early cancels what has not started."""
    if pool is None:
        yield from map(fn, tasks)
        return
    pending: deque = deque()
    try:
        for task in tasks:
            pending.append(pool.submit(fn, task))
            if len(pending) >= in_flight:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for fut in pending:
            fut.cancel()


@contextlib.contextmanager
def worker_pool(workers: int, seed: int) -> Iterator[ProcessPoolExecutor | None]:
    """One pool for both phases (start-up and langdetect's profile loading happen
    once per worker); None for workers=1, which runs everything in this process."""
    if workers <= 1:
        _init_worker(seed)
        yield None
        return
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(seed,)) as pool:
        yield pool


def shard_documents(docs: Iterable[Document], shard_size: int) -> Iterator[list[Document]]:
    """Group whole documents into shards of about `shard_size` paragraphs."""
    shard: list[Document] = []
    size = 0
    for doc in docs:
        shard.append(doc)
        size += len(doc.paragraphs)
        if size >= shard_size:
            yield shard
            shard, size = [], 0
    if shard:
        yield shard


def prepare_corpus(
    cfg: CorpusConfig, workers: int = 1, shard_size: int = 2000
) -> tuple[pd.DataFrame, dict]:
    """Run the whole stage; return the sentences (schemas.CORPUS) and metrics.

    `workers` processes split/tokenise shards of about `shard_size` paragraphs and then
    run langdetect; neither setting changes the result.
    """
    stats = ReadStats()
    docs = read_documents(cfg.source, cfg.format, stats)
    tasks = (
        (shard, cfg.lang, cfg.min_words, cfg.max_words)
        for shard in shard_documents(docs, shard_size)
    )
    with worker_pool(workers, cfg.seed) as pool:
        counts, candidates = _split_and_dedup(tasks, pool, workers)
        log.info(
            "%s: %d documents, %d sentences, %d pass length filter and dedup",
            cfg.source,
            stats.documents,
            counts["sentences"],
            len(candidates),
        )
        kept, checked, lang_dropped = _langdetect_sample(cfg, candidates, pool, workers)
    frame = _frame([candidates[i] for i in sorted(kept)], cfg.lang)
    if frame.empty:
        raise InputError(
            f"{cfg.source}: no sentence survived the filters ({counts['sentences']} "
            f"sentences; {len(candidates)} passed length/dedup; {lang_dropped} of them "
            f"had p({cfg.lang}) < {cfg.langdetect_threshold}). Is the input in '{cfg.lang}'?"
        )
    metrics = {
        "lang": cfg.lang,
        "input": {"source": cfg.source, "format": cfg.format, **stats.as_dict()},
        "sentences_in": counts["sentences"],
        "dropped": {
            "too_short": counts["too_short"],
            "too_long": counts["too_long"],
            "duplicate": counts["duplicate"],
            "langdetect": lang_dropped,
            "over_max_sentences": len(candidates) - checked,
        },
        "langdetect_checked": checked,
        "kept": len(frame),
        "params": {k: v for k, v in asdict(cfg).items() if k not in ("source", "format")},
        "tools": {
            "sentence_splitter": segment.describe(cfg.lang),
            **tokenize.describe(cfg.lang),
            "langdetect": f"{langid.describe()} (DetectorFactory.seed={cfg.seed})",
        },
        "n_words": _length_summary(frame),
    }
    return frame, metrics


def _split_and_dedup(
    tasks: Iterable, pool: ProcessPoolExecutor | None, workers: int
) -> tuple[dict, list[Record]]:
    """Phase 1 over all shards; dedup here, in input order (it needs every shard)."""
    counts = {"sentences": 0, "too_short": 0, "too_long": 0, "duplicate": 0}
    seen: set[str] = set()
    candidates: list[Record] = []
    results = ordered_map(split_shard, tasks, pool, AHEAD * workers)
    for records, shard_counts in tqdm(results, desc="split+tokenise (shards)", disable=None):
        for key, value in shard_counts.items():
            counts[key] += value
        for rec in records:
            if rec[3] in seen:
                counts["duplicate"] += 1
            else:
                seen.add(rec[3])
                candidates.append(rec)
    return counts, candidates


def _langdetect_sample(
    cfg: CorpusConfig,
    candidates: list[Record],
    pool: ProcessPoolExecutor | None,
    workers: int,
) -> tuple[list[int], int, int]:
    """Indices of the kept candidates, how many were checked, how many langdetect dropped.

    Candidates are checked in a seeded random order (input order without a cap) and
    consumed strictly in that order, so the kept set never depends on timing. Blocks
    shrink as the cap nears, so workers do not run far past it.
    """
    order = np.arange(len(candidates))
    if cfg.max_sentences is not None:
        order = np.random.default_rng(cfg.seed).permutation(len(candidates))
    cap = min(cfg.max_sentences or len(candidates), len(candidates))
    submitted: deque[np.ndarray] = deque()  # blocks handed to workers, not yet consumed
    kept: list[int] = []

    def tasks() -> Iterator[tuple[list[str], str]]:
        pos = 0
        while pos < len(order):
            need = cap - len(kept) - sum(len(b) for b in submitted)
            size = int(np.clip(need // workers, LANGID_MIN_BLOCK, LANGID_BLOCK))
            block = order[pos : pos + size]
            pos += size
            submitted.append(block)
            yield [candidates[i][3] for i in block], cfg.lang

    checked = dropped = 0
    results = ordered_map(detect_block, tasks(), pool, AHEAD * workers)
    bar = tqdm(total=cap, desc="langdetect (kept)", disable=None)
    try:
        for probs in results:
            block = submitted.popleft()
            for idx, prob in zip(block, probs, strict=True):
                if len(kept) >= cap:
                    break
                checked += 1
                if prob >= cfg.langdetect_threshold:
                    kept.append(int(idx))
                    bar.update(1)
                else:
                    dropped += 1
            if len(kept) >= cap:
                break
    finally:
        results.close()
        bar.close()
    log.info("langdetect: checked %d, dropped %d, kept %d", checked, dropped, len(kept))
    return kept, checked, dropped


def _frame(records: list[Record], lang: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"{r[0]}-{r[2]}" for r in records],
            "doc_id": [r[0] for r in records],
            "title": [r[1] for r in records],
            "text": [r[3] for r in records],
            "tokens": [r[4] for r in records],
            "n_words": np.array([len(r[4]) for r in records], dtype=np.int32),
            "lang": [lang] * len(records),
        }
    )


def _length_summary(frame: pd.DataFrame) -> dict:
    if frame.empty:
        return {}
    n = frame["n_words"]
    return {"mean": round(float(n.mean()), 3), "min": int(n.min()), "max": int(n.max())}


def default_workers(requested: int) -> int:
    """Never more processes than cores: extra ones only add start-up time."""
    return max(1, min(requested, os.cpu_count() or 1))
