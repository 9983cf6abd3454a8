"""Stage rank_fluency: keep each sentence's lowest-perplexity candidate as its paraphrase.

    python stages/rank_fluency.py <candidates> <rules> <pairs out> <metrics.json>

Perplexity comes from a causal LM (`rank_fluency.model[lang]`, resolved offline by
paracl.core.models; the metrics say which weights ran). `max_sentences` caps how many
sentences are scored (the first ones with candidates) so that a CPU run stays short.
The pairs are a resumable shard directory (paracl.stages.rank_fluency.rank_candidates).
The rule table's metadata holds ppdb_substitute's metrics, repeated in this stage's.
"""

from paracl.core.distributed.sharded import Engine
from paracl.core.io import read_metadata
from paracl.core.key_figures import write_metrics
from paracl.core.models import resolve_model
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.rank_fluency import rank_candidates

# dvc.yaml's metrics (paracl.core.key_figures): training pairs made
KEY_FIGURES = ("pairs",)


def main(params: dict) -> None:
    paths = args("candidates", "rules", "pairs", "metrics")
    upstream = read_metadata(paths.candidates)
    substituted = read_metadata(paths.rules).get("metrics", {})
    cfg, settings = params["rank_fluency"], RunSettings.of(params)
    model = resolve_model(cfg["model"][settings.lang])
    metrics = rank_candidates(
        paths.candidates, paths.pairs, model, cfg, settings, Engine.from_params(params),
        upstream, substituted,
    )  # fmt: skip
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
