"""Stage prepare_corpus: data/raw/<wiki> → the sentence corpus + metrics.

    python stages/prepare_corpus.py <corpus out> <metrics.json>

The source is `prepare_corpus.input[lang]` (a path under data/raw).
"""

import logging
import time

from paracl.core.distributed.shards import ShardCache
from paracl.core.key_figures import write_metrics
from paracl.core.stage import args, run
from paracl.parts.corpus.pipeline import CorpusConfig, cache_key, default_workers, prepare_corpus

# dvc.yaml's metrics (paracl.core.key_figures): sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("corpus", "metrics")
    cfg = CorpusConfig.from_params(params)
    section = params["prepare_corpus"]
    executor = params["executor"]
    # local: never more processes than cores; ray: tasks in flight on the cluster
    workers = default_workers(section["workers"]) if executor == "local" else section["workers"]
    start = time.perf_counter()
    # Finished shards go to <corpus>.partial-<key>/ as they are consumed: an
    # interrupted run resumes from them (same bytes as a clean run).
    cache = ShardCache(paths.corpus, cache_key(cfg, section["shard_size"]))
    metrics = prepare_corpus(
        cfg,
        paths.corpus,
        workers=workers,
        shard_size=section["shard_size"],
        executor=executor,
        ray_address=params["ray_address"],
        cache=cache,
    )
    # Metrics hold no timings or worker counts: same params, same bytes.
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    cache.remove()
    logging.getLogger("prepare_corpus").info(
        "%d sentences (%s) -> %s in %.1f s with %d %s worker(s)",
        metrics["kept"],
        cfg.lang,
        paths.corpus,
        time.perf_counter() - start,
        workers,
        executor,
    )


if __name__ == "__main__":
    run(main)
