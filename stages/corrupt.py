"""Stage corrupt: target corpus + a filler → hard negatives (a resumable shard dir).

    python stages/corrupt.py <corpus> <filler dir | unadapted> <negatives out> <metrics.json>
        <reference corpus>

Noun chunks (spaCy / GiNZA) of each sampled anchor become blanks. A T5 fills them by
beam search (JCSE §3.2); a causal LM (the offline default, named by the directory's
paracl_filler.json) samples fills with the masked sentence as its prompt and keeps the
hypotheses whose whole sentence it finds most likely (paracl.parts.filler.causal). The
filler is what adapt_filler wrote, or `unadapted`: adapt_filler.model as it is (the
adaptation ablation, `corrupt_unadapted`). Each worker (a Ray actor on `executor: ray`,
the driver process locally) loads the chunker and the filler once and corrupts whole
shards of `corrupt.shard_size` anchors (paracl.stages.corrupt.corrupt_corpus). The
metrics name the model, say `paper_model` and `adapted`, carry the quality measures
(`quality`), and the share of fills in the target domain's vocabulary, the words of the
corpus that are rare in the reference corpus (`domain_vocabulary`; null when the target
is the reference).
"""

from paracl.core.distributed.sharded import Engine
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.corrupt import corrupt_corpus

# dvc.yaml's metrics (paracl.core.key_figures): hard negatives made
KEY_FIGURES = ("negatives",)


def main(params: dict) -> None:
    paths = args("corpus", "model", "negatives", "metrics", "reference")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    base = params["adapt_filler"]["model"][settings.lang]  # the filler `unadapted` names
    metrics = corrupt_corpus(
        paths.corpus, paths.model, paths.negatives, params["corrupt"], settings, engine, base,
        paths.reference,
    )  # fmt: skip
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
