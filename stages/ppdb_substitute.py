"""Stage ppdb_substitute: corpus sentences + paraphrase dictionary → candidates.

    python stages/ppdb_substitute.py <corpus> <rules out> <candidates out> <metrics.json>

Keeps the rules of `ppdb_substitute.dictionary[lang]` with p(d|s) >= `theta` and writes
every sentence's substitution candidates (PPDB paper §3.2, Figure 1) as a resumable
shard directory (paracl.paraphrase.substitute.substitute_corpus). The rule table carries
this stage's metrics in its metadata, for rank_fluency's metrics.
"""

from paracl import schemas
from paracl.distributed.sharded import Engine
from paracl.io import write_parquet
from paracl.key_figures import write_metrics
from paracl.paraphrase.substitute import substitute_corpus
from paracl.stage import args, run

# dvc.yaml's metrics (paracl.key_figures): rules kept at θ, candidates made
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
