"""Stage generate_paraphrases: corpus sentences × requested tags → controlled paraphrases.

    python stages/generate_paraphrases.py CORPUS MODEL SCORER OUT BASELINE METRICS \
        HEATMAP_DIR HEATMAP_PNG

Each output is scored as the tagger scores candidates, so the metrics and heatmaps (paper
Figure 3) show whether the tags were obeyed (paracl.parts.tags.adherence), next to the
same paraphraser prompted with no tags (BASELINE, with `baseline: true`). A seeded
sample of `max_sentences` is generated shard by shard (resumable; Ray actors on
`executor: ray`, each loading the paraphraser and the scorer once: see
paracl.stages.generate_paraphrases); output bytes depend on shard_size, not on the engine.
"""

import logging

from paracl.core import schemas
from paracl.core.device import seed_everything
from paracl.core.distributed.sharded import Engine
from paracl.core.io import check_parquet, read_json
from paracl.core.key_figures import write_metrics
from paracl.core.models import check_model_dir
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.parts import paraphraser
from paracl.parts.tags import adherence as tag_adherence
from paracl.parts.tags import heatmap, tagging
from paracl.stages import generate_paraphrases as generation

log = logging.getLogger("generate_paraphrases")
# dvc.yaml's metrics (paracl.core.key_figures): paraphrases generated
KEY_FIGURES = ("n_generated",)


def main(params: dict) -> None:
    paths = args(
        "corpus", "model", "scorer", "out", "baseline", "metrics", "heatmap_dir", "heatmap_png"
    )
    cfg, lang, seed = params["generate_paraphrases"], params["lang"], params["seed"]
    requested = [tagging.parse_tags(t) for t in cfg["tags"]]
    generation.settings(cfg)  # a bad length window fails before any work
    seed_everything(seed)
    # every input checked first (the corpus too: an untrained paraphraser never reads it)
    check_parquet(paths.corpus, schemas.CORPUS)
    info = read_json(check_model_dir(paths.model) / paraphraser.INFO_FILE)
    check_model_dir(paths.scorer)
    if not info["trained"]:
        log.warning(
            "the paraphraser was not trained (%d training pairs): writing an empty %s",
            info["n_train"],
            paths.out,
        )
    tags = [s + b for s, b in requested]
    settings, engine = RunSettings.of(params), Engine.from_params(params)
    manifest, n_sentences = generation.generate_sharded(
        paths.corpus, paths.model, paths.scorer, paths.out, cfg, settings, engine, info, tags
    )
    base, _ = generation.generate_sharded(
        paths.corpus,
        paths.model,
        paths.scorer,
        paths.baseline,
        cfg,
        settings,
        engine,
        info,
        [tag_adherence.BASELINE],
        enabled=cfg["baseline"],
    )
    per_tag, panels = tag_adherence.measure(
        paths.out, requested, lang, cfg["heatmap_min_words"], paths.baseline
    )
    heatmap.write_csv_dir(panels, paths.heatmap_dir)
    heatmap.write_png(panels, paths.heatmap_png)
    metrics = {
        "paraphraser": info,
        "model": info.get("base_model", {}).get("id"),
        "stand_in": bool(info["stand_in"]),
        "paper_model": bool(info.get("paper_model", False)),
        "baseline": "the same paraphraser prompted with no tags" if base["rows"] else None,
        "n_sentences": n_sentences,
        "n_generated": manifest["rows"],
        "n_baseline": base["rows"],
        "n_shards": len(manifest["shards"]),
        "per_tag": per_tag,
    }
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
    log.info("%d paraphrases for %d tag pairs", manifest["rows"], len(requested))


if __name__ == "__main__":
    run(main)
