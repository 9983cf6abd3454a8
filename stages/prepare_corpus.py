"""Stage prepare_corpus: data/raw/<wiki> → the sentence corpus + metrics.

    python stages/prepare_corpus.py <corpus out> <metrics.json>

The source is `prepare_corpus.input[lang]` (a path under data/raw, or a user's own file
under data/own/corpus); the work is
paracl.stages.prepare_corpus.
"""

from paracl.core.distributed.sharded import Engine
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.prepare_corpus import build_corpus, check_source

# dvc.yaml's metrics (paracl.core.key_figures): sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("corpus", "metrics")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    check_source(params["prepare_corpus"]["input"][settings.lang]["source"], settings.lang)
    metrics = build_corpus(params["prepare_corpus"], settings, engine, paths.corpus)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
