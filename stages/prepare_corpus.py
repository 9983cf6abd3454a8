"""Stage prepare_corpus: data/raw/<wiki> → the sentence corpus + metrics.

    python stages/prepare_corpus.py <corpus out> <metrics.json>

The source is `prepare_corpus.input[lang]` (a path under data/raw); the work is
paracl.stages.prepare_corpus.
"""

from paracl.core.distributed.sharded import Engine
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.prepare_corpus import build_corpus

# dvc.yaml's metrics (paracl.core.key_figures): sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("corpus", "metrics")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    metrics = build_corpus(params["prepare_corpus"], settings, engine, paths.corpus)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
