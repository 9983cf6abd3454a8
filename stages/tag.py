"""Stage tag: round-trip candidates → SIM/BLEU scores → <SIM><BLEU> tags → balanced splits.

    python stages/tag.py CANDIDATES SCORER SCORED TAGGED METRICS HEATMAP_CSV HEATMAP_PNG

Every candidate is scored shard by shard into SCORED (resumable; Ray actors on
`executor: ray`), then one streaming pass keeps the high-quality pairs for the balanced
dev/test/train split and a seeded sample for the SIM×BLEU heatmap (paper Figure 1);
see paracl.stages.tag.
"""

import logging

from paracl.core import schemas
from paracl.core.distributed.sharded import Engine
from paracl.core.io import read_metadata, write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.parts.tags import heatmap, tagging
from paracl.stages import tag as scoring

log = logging.getLogger("tag")


# dvc.yaml's metrics (paracl.core.key_figures): high-quality candidates, training pairs
KEY_FIGURES = ("n_high_quality", "split_sizes.train")


def main(params: dict) -> None:
    paths = args(
        "candidates", "scorer", "scored", "tagged", "metrics", "heatmap_csv", "heatmap_png"
    )
    cfg, seed = params["tag"], params["seed"]
    source_meta = read_metadata(paths.candidates)
    manifest, n_candidates = scoring.score_candidates(
        paths.candidates, paths.scorer, paths.scored, cfg, RunSettings.of(params),
        Engine.from_params(params),
    )  # fmt: skip
    summary = scoring.summarize_scored(paths.scored, seed, cfg["heatmap_max_pairs"])
    per_share = {s: cfg[f"{s}_per_share"] for s in tagging.SPLITS}
    tagged, cells = tagging.balanced_split(summary.good, per_share, seed)
    source = {k: v for k, v in source_meta.items() if k != "params"}
    write_parquet(
        tagged, paths.tagged, schemas.ROUNDTRIP_TAGGED, metadata={"params": cfg, "source": source}
    )
    sim, bleu = summary.heatmap_pairs()
    heatmap.write_csv(heatmap.plot_rows(sim, bleu), paths.heatmap_csv)
    heatmap.write_png({"round-trip candidates": (sim, bleu)}, paths.heatmap_png)
    metrics = scoring.tag_metrics(
        summary, tagged, cells, source_meta, n_candidates, len(manifest["shards"])
    )
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    log.info(
        "%d candidates scored; %d high quality; splits %s",
        metrics["n_scored"],
        metrics["n_high_quality"],
        metrics["split_sizes"],
    )


if __name__ == "__main__":
    run(main)
