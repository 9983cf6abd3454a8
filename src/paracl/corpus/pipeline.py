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
shards, so the output is the same bytes for any number of workers, and for either
executor (a local process pool or Ray tasks, paracl.distributed.executor). With a
`ShardCache` each shard's split result and each langdetect block is saved as it is
consumed; a rerun after a crash loads them instead of recomputing (same bytes out).
Sentence ids are `<doc_id>-<n>`, n counting every sentence of the document before
filtering, so an id does not change when a filter setting does.

Memory: split shards always go to disk (to the given cache, or a temporary one), and
the driver keeps of each deduplicated candidate only its text (needed for dedup and
langdetect) and where its record lies; the kept records are read back from the shards
at the end. Tokens, titles and ids of the whole corpus are never held at once.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import tempfile
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from paracl.corpus import langid, segment, tokenize
from paracl.corpus.readers import Document, ReadStats, read_documents
from paracl.distributed.executor import Done, Executor, make_executor
from paracl.distributed.shards import ShardCache
from paracl.io import fingerprint, sha256_file
from paracl.params import ParamsError
from paracl.stage import InputError

log = logging.getLogger(__name__)

LANGID_BLOCK = 256  # candidate sentences per langdetect task …
LANGID_MIN_BLOCK = 16  # … shrinking to this near the cap, so little work is wasted
CACHE_VERSION = 1  # bump when what a cached shard holds changes


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


def input_checksums(source: str | Path) -> list[tuple[str, str]]:
    """(relative path, sha256) of the input file(s): part of a shard cache's key, so
    an edited input never reuses shards of the old one."""
    root = Path(source)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    return [(str(p.relative_to(root)) if root.is_dir() else p.name, sha256_file(p)) for p in files]


def cache_key(cfg: CorpusConfig, shard_size: int) -> str:
    """Everything cached shards depend on: config, shard boundaries, input bytes."""
    return fingerprint(CACHE_VERSION, asdict(cfg), shard_size, input_checksums(cfg.source))


def prepare_corpus(
    cfg: CorpusConfig,
    workers: int = 1,
    shard_size: int = 2000,
    executor: str = "local",
    ray_address: str | None = None,
    cache: ShardCache | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Run the whole stage; return the sentences (schemas.CORPUS) and metrics.

    `workers` processes (local) or Ray tasks in flight split/tokenise shards of about
    `shard_size` paragraphs and then run langdetect; neither these nor `executor`
    change the result. With `cache` (keyed by `cache_key`), finished shards survive a
    crash and are not recomputed by the rerun; without, a temporary one is used.
    """
    with contextlib.ExitStack() as stack:
        if cache is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="paracl-corpus-"))
            cache = ShardCache(Path(tmp) / "sentences", "run")
        return _prepare(cfg, workers, shard_size, executor, ray_address, cache)


def _prepare(
    cfg: CorpusConfig,
    workers: int,
    shard_size: int,
    executor: str,
    ray_address: str | None,
    cache: ShardCache,
) -> tuple[pd.DataFrame, dict]:
    stats = ReadStats()
    docs = read_documents(cfg.source, cfg.format, stats)
    with make_executor(executor, workers, _init_worker, (cfg.seed,), ray_address) as ex:
        counts, candidates = _split_and_dedup(cfg, shard_documents(docs, shard_size), ex, cache)
        log.info(
            "%s: %d documents, %d sentences, %d pass length filter and dedup",
            cfg.source,
            stats.documents,
            counts["sentences"],
            len(candidates),
        )
        kept, checked, lang_dropped = _langdetect_sample(cfg, candidates, ex, cache)
    log.info("shard cache %s: %d shard(s) reused from an earlier run", cache.dir, cache.loaded)
    frame = _frame(_read_records(cache, candidates, sorted(kept)), cfg.lang)
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


def _records_table(records: list[Record], counts: dict) -> pa.Table:
    """One split shard as Arrow (its filter counts in the schema metadata)."""
    columns = list(zip(*records, strict=True)) if records else [[]] * 5
    table = pa.table(
        {
            "doc_id": pa.array(columns[0], pa.string()),
            "title": pa.array(columns[1], pa.string()),
            "n": pa.array(columns[2], pa.int64()),
            "text": pa.array(columns[3], pa.string()),
            "tokens": pa.array(columns[4], pa.list_(pa.string())),
        }
    )
    return table.replace_schema_metadata({b"counts": json.dumps(counts).encode()})


def _table_records(table: pa.Table) -> list[Record]:
    cols = [table.column(n).to_pylist() for n in ("doc_id", "title", "n", "text", "tokens")]
    return list(zip(*cols, strict=True))


def _split_name(shard: int) -> str:
    return f"split-{shard:06d}"


@dataclass
class Candidates:
    """The deduplicated sentences in input order: each one's text (dedup and langdetect
    need it) and where its record lies (split shard, row); the records stay on disk."""

    texts: list[str] = field(default_factory=list)
    shard: array = field(default_factory=lambda: array("l"))
    row: array = field(default_factory=lambda: array("l"))

    def __len__(self) -> int:
        return len(self.texts)


def _split_and_dedup(
    cfg: CorpusConfig,
    shards: Iterable[list[Document]],
    ex: Executor,
    cache: ShardCache,
) -> tuple[dict, Candidates]:
    """Phase 1 over all shards; dedup here, in input order (it needs every shard)."""
    counts = {"sentences": 0, "too_short": 0, "too_long": 0, "duplicate": 0}
    seen: set[str] = set()
    candidates = Candidates()
    fresh: deque[bool] = deque()  # per task in order: computed now (to be saved)?

    def tasks() -> Iterator:
        for i, shard in enumerate(shards):
            table = cache.get(_split_name(i))
            fresh.append(table is None)
            yield (
                Done(table)
                if table is not None
                else (shard, cfg.lang, cfg.min_words, cfg.max_words)
            )

    results = ex.map(split_shard, tasks())
    for i, result in enumerate(tqdm(results, desc="split+tokenise (shards)", disable=None)):
        if fresh.popleft():
            result = _records_table(*result)
            cache.put(_split_name(i), result)
        for key, value in json.loads(result.schema.metadata[b"counts"]).items():
            counts[key] += value
        for row, text in enumerate(result.column("text").to_pylist()):
            if text in seen:
                counts["duplicate"] += 1
            else:
                seen.add(text)
                candidates.texts.append(text)
                candidates.shard.append(i)
                candidates.row.append(row)
    return counts, candidates


def _read_records(cache: ShardCache, candidates: Candidates, indices: list[int]) -> list[Record]:
    """The records of the candidates at `indices` (ascending), read back shard by shard."""
    records: list[Record] = []
    for shard, group in itertools.groupby(indices, key=lambda i: candidates.shard[i]):
        rows = [candidates.row[i] for i in group]
        records.extend(_table_records(cache.read(_split_name(shard)).take(rows)))
    return records


def _langdetect_sample(
    cfg: CorpusConfig,
    candidates: Candidates,
    ex: Executor,
    cache: ShardCache,
) -> tuple[list[int], int, int]:
    """Indices of the kept candidates, how many were checked, how many langdetect dropped.

    Candidates are checked in a seeded random order (input order without a cap) and
    consumed strictly in that order, so the kept set never depends on timing. Blocks
    shrink as the cap nears, so workers do not run far past it. A cached block is
    named by its start position in the order, so a rerun reuses it as it was.
    """
    workers = ex.workers
    order = np.arange(len(candidates))
    if cfg.max_sentences is not None:
        order = np.random.default_rng(cfg.seed).permutation(len(candidates))
    cap = min(cfg.max_sentences or len(candidates), len(candidates))
    # blocks handed out, not yet consumed, with the cache name to save each under
    submitted: deque[tuple[np.ndarray, str | None]] = deque()
    kept: list[int] = []

    def tasks() -> Iterator:
        pos = 0
        while pos < len(order):
            name = f"langid-{pos:010d}"
            table = cache.get(name)
            if table is not None:
                probs = table.column("prob").to_pylist()
                submitted.append((order[pos : pos + len(probs)], None))
                pos += len(probs)
                yield Done(probs)
                continue
            need = cap - len(kept) - sum(len(b) for b, _ in submitted)
            size = int(np.clip(need // workers, LANGID_MIN_BLOCK, LANGID_BLOCK))
            block = order[pos : pos + size]
            pos += size
            submitted.append((block, name))
            yield [candidates.texts[i] for i in block], cfg.lang

    checked = dropped = 0
    results = ex.map(detect_block, tasks())
    bar = tqdm(total=cap, desc="langdetect (kept)", disable=None)
    try:
        for probs in results:
            block, name = submitted.popleft()
            if name is not None:
                cache.put(name, pa.table({"prob": pa.array(probs, pa.float64())}))
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
