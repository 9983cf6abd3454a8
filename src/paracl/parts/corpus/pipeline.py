"""Raw Wikipedia text → filtered, tokenised sentences (stage prepare_corpus).

Order of work, cheapest first, because langdetect (~5 ms a sentence) costs more than
everything else together:

1. read documents (readers.py); split into sentences and tokenise in worker
   processes, one shard of documents per task; drop sentences of <= min_words or
   >= max_words words (PPDB paper §4.2: "more than 5 and fewer than 50"); each
   worker also hashes its sentences' texts for step 2;
2. deduplicate by text, keeping the first occurrence in input order (dedup.py: the
   hashes are spilled to disk in buckets, one bucket in memory at a time);
3. langdetect (seeded) on the survivors in a seeded random order (order.py), again in
   worker processes, keeping those with p(lang) >= threshold, and stopping once
   `max_sentences` are kept. The first k survivors of a random order are a uniform
   random sample of all survivors, so this is the reproducible sample the cap asks
   for, without running langdetect on sentences the cap would discard;
4. stream the kept rows out of the split shards into the output file, in input order.

Results are consumed in submission order and documents are never split across
shards, so the output is the same bytes for any number of workers and shard size, and
for either executor (local worker processes or Ray actors, paracl.core.distributed.executor).
Both phases run as one `CorpusJob` (langdetect seeded once per worker). With a
`ShardCache` each shard's split result and each langdetect block is saved as it is
consumed; a rerun after a crash loads them instead of recomputing (same bytes out).
Sentence ids are `<doc_id>-<n>`, n counting every sentence of the document before
filtering, so an id does not change when a filter setting does.

Memory: split shards go to disk at once (to the given cache, or a temporary one). The
driver then holds the row count of each shard, the indices of the duplicates and of
langdetect's rejects, one dedup bucket (24 bytes × sentences / 64) and one window of
texts being checked (order.py); never the corpus.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from paracl.core import schemas
from paracl.core.configs import from_section
from paracl.core.distributed.executor import Done, Executor, make_executor
from paracl.core.distributed.sharded import Engine
from paracl.core.distributed.shards import ShardCache
from paracl.core.errors import InputError
from paracl.core.io import atomic_path, fingerprint, sha256_file
from paracl.core.params import ParamsError, RunSettings
from paracl.parts.corpus import langid, segment, tokenize
from paracl.parts.corpus.dedup import DigestSpill, is_member, text_digests
from paracl.parts.corpus.order import OrderedCandidates, SplitIndex, check_keys, windows
from paracl.parts.corpus.readers import Document, ReadStats, input_files, read_documents

log = logging.getLogger(__name__)

LANGID_BLOCK = 256  # candidate sentences per langdetect task …
LANGID_MIN_BLOCK = 16  # … shrinking to this near the cap, so little work is wasted
WINDOW = 50_000  # candidates whose texts are read at once for langdetect, doubling …
MAX_WINDOW = 400_000  # … up to this (~50 MB of Arrow text)
ROW_GROUP = 65_536  # output rows per Parquet row group (fixed: bytes never depend on shards)
CACHE_VERSION = 2  # bump when what a cached shard holds changes


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
    def from_params(cls, cfg: dict, run: RunSettings) -> CorpusConfig:
        """From the prepare_corpus section and the run's lang and seed."""
        lang = run.lang
        if cfg["min_words"] >= cfg["max_words"] - 1:
            raise ParamsError(
                f"'prepare_corpus.min_words' ({cfg['min_words']}) must be at least 2 less "
                f"than 'prepare_corpus.max_words' ({cfg['max_words']}): no sentence could pass"
            )
        # a float, also where YAML writes 1 for 1.0: the cache key hashes it
        threshold = float(cfg["langdetect_threshold"])
        section = {**cfg, **cfg["input"][lang], "langdetect_threshold": threshold}
        return from_section(cls, section, lang=lang, seed=run.seed)


# A sentence that passed the length filter: (doc_id, title, n, text, tokens).
Record = tuple[str, str, int, str, list[str]]


@dataclass(frozen=True)
class CorpusJob:
    """The stage's worker (paracl.core.distributed.executor.ShardJob): langdetect seeded
    once, then ("split", shard) and ("langid", block) tasks."""

    seed: int

    def setup(self) -> None:
        langid.set_seed(self.seed)

    def process(self, state: None, task: tuple[str, tuple]) -> pa.Table | list[float]:
        kind, payload = task
        return split_table(payload) if kind == "split" else detect_block(payload)


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


def split_table(task: tuple[list[Document], str, int, int]) -> pa.Table:
    """split_shard's result as one Arrow table (runs in a worker): the records, a
    128-bit digest of each text for dedup (h1, h2), the filter counts in the metadata."""
    records, counts = split_shard(task)
    columns = list(zip(*records, strict=True)) if records else [[]] * 5
    h1, h2 = text_digests(columns[3])
    table = pa.table(
        {
            "doc_id": pa.array(columns[0], pa.string()),
            "title": pa.array(columns[1], pa.string()),
            "n": pa.array(columns[2], pa.int64()),
            "text": pa.array(columns[3], pa.string()),
            "tokens": pa.array(columns[4], pa.list_(pa.string())),
            "h1": pa.array(h1, pa.uint64()),
            "h2": pa.array(h2, pa.uint64()),
        }
    )
    return table.replace_schema_metadata({b"counts": json.dumps(counts).encode()})


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


def check_input(cfg: CorpusConfig) -> list[tuple[Path, str]]:
    """The input's files, checked before any work (present, not empty, text); an error
    names the param that points at them, so the user knows what to fix."""
    try:
        return input_files(cfg.source, cfg.format)
    except InputError as err:
        raise InputError(f"prepare_corpus.input.{cfg.lang}.source: {err}") from None


def input_checksums(source: str | Path) -> list[tuple[str, str]]:
    """(relative path, sha256) of the input file(s): part of a shard cache's key, so
    an edited input never reuses shards of the old one."""
    root = Path(source)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    return [(str(p.relative_to(root)) if root.is_dir() else p.name, sha256_file(p)) for p in files]


def cache_key(cfg: CorpusConfig, shard_size: int) -> str:
    """Everything cached shards depend on: config, shard boundaries, input bytes."""
    check_input(cfg)
    return fingerprint(CACHE_VERSION, asdict(cfg), shard_size, input_checksums(cfg.source))


def prepare_corpus(
    cfg: CorpusConfig,
    out: str | Path,
    workers: int = 1,
    shard_size: int = 2000,
    executor: str = "local",
    ray_address: str | None = None,
    cache: ShardCache | None = None,
) -> dict:
    """Run the whole stage: write the sentences to `out` (schemas.CORPUS, atomically);
    return the metrics.

    `workers` processes (local) or Ray actors split/tokenise shards of about
    `shard_size` paragraphs and then run langdetect; neither these nor `executor`
    change the result. With `cache` (keyed by `cache_key`), finished shards survive a
    crash and are not recomputed by the rerun; without, a temporary one is used.
    """
    with contextlib.ExitStack() as stack:
        if cache is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="paracl-corpus-"))
            cache = ShardCache(Path(tmp) / "sentences", "run")
        return _prepare(cfg, Path(out), workers, shard_size, executor, ray_address, cache)


def prepare_resumable(
    cfg: CorpusConfig, out: str, section: dict, engine: Engine
) -> tuple[dict, int]:
    """prepare_corpus with `section`'s (prepare_corpus') workers and shard_size and the
    engine's executor, finished shards kept in <out>.partial-<key>/ until it succeeds (an
    interrupted run resumes from them, with the same bytes as a clean run); returns
    (metrics, workers)."""
    executor = engine.executor
    # local: never more processes than cores; ray: tasks in flight on the cluster
    workers = default_workers(section["workers"]) if executor == "local" else section["workers"]
    cache = ShardCache(out, cache_key(cfg, section["shard_size"]))
    metrics = prepare_corpus(
        cfg,
        out,
        workers=workers,
        shard_size=section["shard_size"],
        executor=executor,
        ray_address=engine.ray_address,
        cache=cache,
    )
    cache.remove()
    return metrics, workers


def _prepare(
    cfg: CorpusConfig,
    out: Path,
    workers: int,
    shard_size: int,
    executor: str,
    ray_address: str | None,
    cache: ShardCache,
) -> dict:
    check_input(cfg)
    stats = ReadStats()
    docs = read_documents(cfg.source, cfg.format, stats)
    with make_executor(CorpusJob(cfg.seed), executor, workers, ray_address) as ex:
        counts, index = _split_and_dedup(cfg, shard_documents(docs, shard_size), ex, cache)
        log.info(
            "%s: %d documents, %d sentences, %d pass length filter and dedup",
            cfg.source,
            stats.documents,
            counts["sentences"],
            index.candidates,
        )
        checked = _langdetect_sample(cfg, index, ex, cache)
    log.info("shard cache %s: %d shard(s) reused from an earlier run", cache.dir, cache.loaded)
    if checked.kept == 0:
        raise InputError(
            f"{cfg.source}: no sentence survived the filters ({counts['sentences']} "
            f"sentences; {index.candidates} passed length/dedup; {len(checked.dropped)} of "
            f"them had p({cfg.lang}) < {cfg.langdetect_threshold}). Is the input in '{cfg.lang}'?"
        )
    params = {k: v for k, v in asdict(cfg).items() if k not in ("source", "format")}
    tools = {
        "sentence_splitter": segment.describe(cfg.lang),
        **tokenize.describe(cfg.lang),
        "langdetect": f"{langid.describe()} (DetectorFactory.seed={cfg.seed})",
    }
    # Metadata holds no timings or worker counts: same params, same bytes.
    meta = {"stage": "prepare_corpus", "config": params, "tools": tools}
    n_words = _write_kept(cfg, index, checked, cache, out, meta)
    return {
        "lang": cfg.lang,
        "input": {"source": cfg.source, "format": cfg.format, **stats.as_dict()},
        "sentences_in": counts["sentences"],
        "dropped": {
            "too_short": counts["too_short"],
            "too_long": counts["too_long"],
            "duplicate": counts["duplicate"],
            "langdetect": len(checked.dropped),
            "over_max_sentences": index.candidates - checked.count,
        },
        "langdetect_checked": checked.count,
        "kept": checked.kept,
        "params": params,
        "tools": tools,
        "n_words": n_words,
    }


def _split_name(shard: int) -> str:
    return f"split-{shard:06d}"


def _split_and_dedup(
    cfg: CorpusConfig,
    shards: Iterable[list[Document]],
    ex: Executor,
    cache: ShardCache,
) -> tuple[dict, SplitIndex]:
    """Phase 1 over all shards, then dedup (it needs every shard's hashes)."""
    counts = {"sentences": 0, "too_short": 0, "too_long": 0, "duplicate": 0}
    rows: list[int] = []
    fresh: deque[bool] = deque()  # per task in order: computed now (to be saved)?

    def tasks() -> Iterator:
        for i, shard in enumerate(shards):
            table = cache.get(_split_name(i))
            fresh.append(table is None)
            split = ("split", (shard, cfg.lang, cfg.min_words, cfg.max_words))
            yield Done(table) if table is not None else split

    with tempfile.TemporaryDirectory(prefix="dedup-", dir=cache.open()) as spill_dir:
        spill = DigestSpill(spill_dir)
        try:
            results = ex.map(tasks())
            for i, table in enumerate(tqdm(results, desc="split+tokenise (shards)", disable=None)):
                if fresh.popleft():
                    cache.put(_split_name(i), table)
                for key, value in json.loads(table.schema.metadata[b"counts"]).items():
                    counts[key] += value
                spill.add(table.column("h1").to_numpy(), table.column("h2").to_numpy())
                rows.append(table.num_rows)
            duplicates = spill.duplicates()
        finally:
            spill.close()
    counts["duplicate"] = len(duplicates)
    return counts, SplitIndex(rows, duplicates)


@dataclass
class Checked:
    """What langdetect did: it checked every candidate whose key (`check_keys` with `seed`
    and `shuffled`; unique, order.py) is <= `last_key`, and rejected the ones whose keys
    are in `dropped` (sorted)."""

    seed: int
    shuffled: bool
    count: int
    last_key: int | None
    dropped: np.ndarray

    @property
    def kept(self) -> int:
        return self.count - len(self.dropped)

    def keeps(self, g: np.ndarray) -> np.ndarray:
        """Which of the sentences g passed langdetect within the cap (duplicates are
        not told apart here: the caller excludes them)."""
        if self.last_key is None:
            return np.zeros(len(g), bool)
        keys = check_keys(g, self.seed, self.shuffled)
        return (keys <= np.uint64(self.last_key)) & ~is_member(keys, self.dropped)


def _langdetect_sample(
    cfg: CorpusConfig,
    index: SplitIndex,
    ex: Executor,
    cache: ShardCache,
) -> Checked:
    """Check candidates in key order (seeded random with a cap, input order without),
    consuming results strictly in that order so the kept set never depends on timing.
    Blocks shrink as the cap nears, so workers do not run far past it. A cached block
    is named by its start position in the order, so a rerun reuses it as it was.
    """
    shuffled = cfg.max_sentences is not None
    cap = min(cfg.max_sentences or index.candidates, index.candidates)

    def read_texts(shard: int, rows: np.ndarray) -> pa.ChunkedArray:
        return cache.read(_split_name(shard), columns=["text"]).column("text").take(rows)

    first = min(max(WINDOW, cap + cap // 4), MAX_WINDOW)
    ordered = OrderedCandidates(windows(index, cfg.seed, shuffled, first, MAX_WINDOW, read_texts))
    run = _LangidRun(ordered, cache, cap, ex.workers, cfg.lang)
    results = ex.map(run.tasks())
    bar = tqdm(total=cap, desc="langdetect (kept)", disable=None)
    try:
        for probs in results:
            if run.kept >= cap:
                break
            run.consume(probs, cfg.langdetect_threshold, bar)
    finally:
        results.close()
        bar.close()
    log.info("langdetect: checked %d, dropped %d, kept %d", run.count, len(run.dropped), run.kept)
    dropped_keys = np.sort(np.frombuffer(run.dropped, np.uint64))
    return Checked(cfg.seed, shuffled, run.count, run.last_key, dropped_keys)


class _LangidRun:
    """langdetect over the candidates in key order until `cap` are kept: `tasks` hands out
    blocks (a cached block as its results, `Done`), `consume` takes each block's results in
    the order handed out and keeps or drops its candidates."""

    def __init__(
        self, ordered: OrderedCandidates, cache: ShardCache, cap: int, workers: int, lang: str
    ):
        self.ordered, self.cache, self.cap, self.workers, self.lang = (
            ordered, cache, cap, workers, lang
        )  # fmt: skip
        # blocks handed out, not yet consumed: their keys, the cache name to save each under
        self.submitted: deque[tuple[np.ndarray, str | None]] = deque()
        self.kept = self.count = 0
        self.last_key: int | None = None
        self.dropped = array("Q")

    def tasks(self) -> Iterator:
        """The blocks to check; each shrinks as the cap nears, so workers do not run far
        past it. A block is cached under its start position in the order."""
        pos = 0
        while True:
            name = f"langid-{pos:010d}"
            table = self.cache.get(name)
            if table is not None:
                probs = table.column("prob").to_pylist()
                keys, _ = self.ordered.take(len(probs))
                self.submitted.append((keys, None))
                pos += len(probs)
                yield Done(probs)
                continue
            need = self.cap - self.kept - sum(len(b) for b, _ in self.submitted)
            keys, texts = self.ordered.take(
                int(np.clip(need // self.workers, LANGID_MIN_BLOCK, LANGID_BLOCK))
            )
            if not len(keys):
                return
            pos += len(keys)
            self.submitted.append((keys, name))
            yield "langid", (texts, self.lang)

    def consume(self, probs: list[float], threshold: float, bar: tqdm) -> None:
        """The next block's results: cached when new, then its candidates kept (prob >=
        threshold) or dropped, in key order, until the cap is reached."""
        keys, name = self.submitted.popleft()
        if name is not None:
            self.cache.put(name, pa.table({"prob": pa.array(probs, pa.float64())}))
        for key, prob in zip(keys, probs, strict=True):
            if self.kept >= self.cap:
                break
            self.count, self.last_key = self.count + 1, int(key)
            if prob >= threshold:
                self.kept += 1
                bar.update(1)
            else:
                self.dropped.append(int(key))


def _write_kept(
    cfg: CorpusConfig,
    index: SplitIndex,
    checked: Checked,
    cache: ShardCache,
    out: Path,
    meta: dict,
) -> dict:
    """Stream the kept rows, shard by shard in input order, into one Parquet file
    (atomically); return the n_words summary. Row groups have a fixed size, so the
    bytes do not depend on where the shards end."""
    schema = schemas.CORPUS.with_metadata(
        {b"paracl": json.dumps(meta, sort_keys=True, ensure_ascii=False).encode()}
    )
    n_sum = n_rows = 0
    n_min, n_max = 1 << 30, 0
    with atomic_path(out) as tmp:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            pending: list[pa.Table] = []
            for shard in range(len(index.rows)):
                g = index.shard_range(shard)
                keep = checked.keeps(g) & ~is_member(g, index.duplicates)
                if not keep.any():
                    continue
                split = cache.read(_split_name(shard)).filter(pa.array(keep))
                rows = _corpus_rows(split, cfg.lang, schema)
                n_words = rows.column("n_words").to_numpy()
                n_sum, n_rows = n_sum + int(n_words.sum()), n_rows + len(n_words)
                n_min, n_max = min(n_min, int(n_words.min())), max(n_max, int(n_words.max()))
                pending.append(rows)
                pending = _write_full_row_groups(writer, pending, final=False)
            _write_full_row_groups(writer, pending, final=True)
    if not n_rows:
        return {}
    return {"mean": round(n_sum / n_rows, 3), "min": n_min, "max": n_max}


def _corpus_rows(split: pa.Table, lang: str, schema: pa.Schema) -> pa.Table:
    """Split-shard rows → schemas.CORPUS rows."""
    ids = pc.binary_join_element_wise(
        split.column("doc_id"), pc.cast(split.column("n"), pa.string()), "-"
    )
    return pa.Table.from_arrays(
        [
            ids,
            split.column("doc_id"),
            split.column("title"),
            split.column("text"),
            split.column("tokens"),
            pc.cast(pc.list_value_length(split.column("tokens")), pa.int32()),
            pa.array([lang] * split.num_rows, pa.string()),
        ],
        schema=schema,
    )


def _write_full_row_groups(
    writer: pq.ParquetWriter, pending: list[pa.Table], final: bool
) -> list[pa.Table]:
    """Write ROW_GROUP-row groups (and on `final` the rest); return what is left over."""
    table = pa.concat_tables(pending) if pending else None
    if table is None:
        return []
    while table.num_rows >= ROW_GROUP or (final and table.num_rows):
        group = table.slice(0, ROW_GROUP).combine_chunks()
        writer.write_table(group, row_group_size=ROW_GROUP)
        table = table.slice(ROW_GROUP)
    return [table] if table.num_rows else []


def default_workers(requested: int) -> int:
    """Never more processes than cores: extra ones only add start-up time."""
    return max(1, min(requested, os.cpu_count() or 1))
