"""The prepare_corpus stage: the source in `prepare_corpus.input[lang]` → the sentence corpus.

The reading, splitting, tokenising, language-ID filter and dedup are shared with
prepare_domain and live in paracl.parts.corpus; this is the stage's own call of them.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Literal

from paracl.core.distributed.sharded import Engine
from paracl.core.key_figures import write_metrics
from paracl.core.params import Lang, ParamsError, RunSettings, RunWide, Section, param
from paracl.core.stage import args
from paracl.parts.corpus.pipeline import CorpusConfig, prepare_resumable

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class PrepareCorpus(Section):
    class CorpusInput(Section):
        source: str = param(
            help="a file or folder of the raw corpus: a fetched one (data/raw/...) or your own "
            "text file, hashed by DVC as a dep"
        )
        format: Literal["text", "wiki40b", "jaquad", "wiki_lines"] = param(
            help="its reader: text = one sentence or paragraph a line (.txt); wiki40b = "
            "Wiki-40B's marker format (.txt or Parquet); jaquad = JaQuAD's JSON contexts; "
            "wiki_lines = Wikipedia a sentence a line, each article from its title line"
        )

    input: dict[Lang, CorpusInput]
    min_words: int = param(min=1, help="keep sentences with more than this many words")
    max_words: int = param(min=2, help="keep sentences with fewer than this many words")
    langdetect_threshold: float = param(min=0.0, max=1.0)
    max_sentences: int | None = param(min=1)
    workers: int = param(min=1, max=256)
    shard_size: int = param(min=1)


class Params(RunWide):
    """What stage prepare_corpus reads of params.yaml: the run-wide keys and these."""

    prepare_corpus: PrepareCorpus


log = logging.getLogger("prepare_corpus")


# The folders dvc.yaml hashes for this stage: a source elsewhere would change without the
# stage rerunning. data/raw is fetch's output; data/own/corpus holds a user's own files.
SOURCE_DIRS = (Path("data/raw"), Path("data/own/corpus"))


def check_source(source: str, lang: str) -> None:
    """Refuse a corpus source outside the folders the stage depends on (SOURCE_DIRS)."""
    path = Path(source)
    if not path.is_absolute() and any(path.is_relative_to(d) for d in SOURCE_DIRS):
        return
    raise ParamsError(
        f"params.yaml: 'prepare_corpus.input.{lang}.source': {source} is not under "
        f"{' or '.join(d.as_posix() for d in SOURCE_DIRS)}, which DVC hashes for this stage; "
        "put your own corpus file in data/own/corpus/ (docs/own-data.md)"
    )


def build_corpus(section: dict, run: RunSettings, engine: Engine, out: str) -> dict:
    """Write the corpus of `section` (the prepare_corpus section) to `out` (atomically,
    resumable); return the metrics, which hold no timings or worker counts: same params,
    same bytes."""
    cfg = CorpusConfig.from_params(section, run)
    start = time.perf_counter()
    metrics, workers = prepare_resumable(cfg, out, section, engine)
    log.info(
        "%d sentences (%s) -> %s in %.1f s with %d %s worker(s)",
        metrics["kept"],
        cfg.lang,
        out,
        time.perf_counter() - start,
        workers,
        engine.executor,
    )
    return metrics


# dvc.yaml's metrics (paracl.core.key_figures): sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("corpus", "metrics")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    check_source(params["prepare_corpus"]["input"][settings.lang]["source"], settings.lang)
    metrics = build_corpus(params["prepare_corpus"], settings, engine, paths.corpus)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
