"""Stage corrupt: corpus + adapted T5 → hard negatives (a resumable shard directory).

    python stages/corrupt.py <corpus> <t5 model dir> <negatives out> <metrics.json>

Noun chunks (spaCy / GiNZA) of each sampled anchor are replaced by T5 sentinels and T5
fills them by beam search; each returned sequence is a hard negative (JCSE §3.2). Each
worker (a Ray actor on `executor: ray`, the driver process locally) loads the chunker
and T5 once and corrupts whole shards of `corrupt.shard_size` anchors
(paracl.negatives.sharded.corrupt_corpus).
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
