"""Stage prepare_corpus: data/raw/<wiki> → data/corpus/sentences.parquet + metrics."""

import logging
import time

from paracl import schemas
from paracl.corpus.pipeline import CorpusConfig, default_workers, prepare_corpus
from paracl.io import write_json, write_parquet
from paracl.stage import run

OUT = "data/corpus/sentences.parquet"
METRICS = "metrics/corpus.json"


def main(params: dict) -> None:
    cfg = CorpusConfig.from_params(params)
    section = params["prepare_corpus"]
    workers = default_workers(section["workers"])
    start = time.perf_counter()
    frame, metrics = prepare_corpus(cfg, workers=workers, shard_size=section["shard_size"])
    # Metadata and metrics hold no timings or worker counts: same params, same bytes.
    meta = {"stage": "prepare_corpus", "config": metrics["params"], "tools": metrics["tools"]}
    write_parquet(frame, OUT, schemas.CORPUS, metadata=meta)
    write_json(metrics, METRICS)
    logging.getLogger("prepare_corpus").info(
        "%d sentences (%s) -> %s in %.1f s with %d worker(s)",
        len(frame),
        cfg.lang,
        OUT,
        time.perf_counter() - start,
        workers,
    )


if __name__ == "__main__":
    run(main)
