"""Stage ppdb_substitute: corpus sentences + paraphrase dictionary → candidates.

    python stages/ppdb_substitute.py <corpus> <rules out> <candidates out> <metrics.json>

Keeps the rules of `ppdb_substitute.dictionary[lang]` with p(d|s) >= `theta` and writes
every sentence's substitution candidates (PPDB paper §3.2, Figure 1) as a resumable
shard directory (paracl.stages.ppdb_substitute.substitute_corpus). The rule table carries
this stage's metrics in its metadata, for rank_fluency's metrics.
"""

from paracl.core import schemas
from paracl.core.distributed.sharded import Engine
from paracl.core.io import write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.stage import args, run
from paracl.stages.ppdb_substitute import substitute_corpus

# dvc.yaml's metrics (paracl.core.key_figures): rules kept at θ, candidates made
KEY_FIGURES = ("rules_kept_theta", "candidates")


def main(params: dict) -> None:
    paths = args("corpus", "rules", "candidates", "metrics")
    done = substitute_corpus(
        paths.corpus,
        paths.candidates,
        params["ppdb_substitute"],
        params["lang"],
        params["theta"],
        Engine.from_params(params),
    )
    write_parquet(done.rules, paths.rules, schemas.PPDB_RULES, metadata=done.metadata)
    write_metrics(done.metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
