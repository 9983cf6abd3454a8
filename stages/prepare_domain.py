"""Stage prepare_domain: a target-domain corpus → its sentences, and the main corpus with them.

    python stages/prepare_domain.py <name> <main corpus> <domain out> <mix out> <metrics.json>

The input is `prepare_domain.corpora[name]`; the work (and what the mix is for) is
paracl.stages.prepare_domain.
"""

from paracl.core.distributed.sharded import Engine
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.prepare_domain import build_domain

# dvc.yaml's metrics (paracl.core.key_figures): domain sentences kept
KEY_FIGURES = ("kept",)


def main(params: dict) -> None:
    paths = args("name", "main", "corpus", "mix", "metrics")
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    metrics = build_domain(
        params["prepare_domain"], params["prepare_corpus"], settings, engine,
        paths.name, paths.main, paths.corpus, paths.mix,
    )  # fmt: skip
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
