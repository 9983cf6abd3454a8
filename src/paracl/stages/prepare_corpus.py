"""The prepare_corpus stage: the source in `prepare_corpus.input[lang]` → the sentence corpus.

The reading, splitting, tokenising, language-ID filter and dedup are shared with
prepare_domain and live in paracl.parts.corpus; this is the stage's own call of them.
"""

from __future__ import annotations

import logging
import time

from paracl.parts.corpus.pipeline import CorpusConfig, prepare_resumable

log = logging.getLogger("prepare_corpus")


def build_corpus(params: dict, out: str) -> dict:
    """Write the corpus of `params` to `out` (atomically, resumable); return the metrics,
    which hold no timings or worker counts: same params, same bytes."""
    cfg = CorpusConfig.from_params(params)
    start = time.perf_counter()
    metrics, workers = prepare_resumable(cfg, out, params)
    log.info(
        "%d sentences (%s) -> %s in %.1f s with %d %s worker(s)",
        metrics["kept"],
        cfg.lang,
        out,
        time.perf_counter() - start,
        workers,
        params["executor"],
    )
    return metrics
