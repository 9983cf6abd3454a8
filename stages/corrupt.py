"""Stage corrupt: corpus + the filler adapt_t5 left → hard negatives (a resumable shard dir).

    python stages/corrupt.py <corpus> <t5 model dir> <negatives out> <metrics.json>

Noun chunks (spaCy / GiNZA) of each sampled anchor become blanks. A T5 fills them by
beam search (JCSE §3.2); a causal LM (the offline default, named by the directory's
paracl_t5.json) samples fills with the masked sentence as its prompt and keeps the
hypotheses whose whole sentence it finds most likely (paracl.negatives.causal). Each
worker (a Ray actor on `executor: ray`, the driver process locally) loads the chunker
and the filler once and corrupts whole shards of `corrupt.shard_size` anchors
(paracl.negatives.sharded.corrupt_corpus). The metrics name the model, say
`paper_model` and carry the quality measures (`quality`) and the wall time.
"""

from paracl.io import write_json
from paracl.negatives.sharded import corrupt_corpus
from paracl.stage import args, run


def main(params: dict) -> None:
    paths = args("corpus", "model", "negatives", "metrics")
    metrics = corrupt_corpus(paths.corpus, paths.model, paths.negatives, params)
    write_json(metrics, paths.metrics)


if __name__ == "__main__":
    run(main)
