"""The prepare_corpus stage: the source in `prepare_corpus.input[lang]` → the sentence corpus.

The reading, splitting, tokenising, language-ID filter and dedup are shared with
prepare_domain and live in paracl.parts.corpus; this is the stage's own call of them.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from paracl.core.distributed.sharded import Engine
from paracl.core.params import ParamsError, RunSettings
from paracl.parts.corpus.pipeline import CorpusConfig, prepare_resumable

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
