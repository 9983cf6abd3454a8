"""Stage generate_paraphrases: corpus sentences × requested tags → data/paraphraser/generated.parquet.

Each output is scored like the tagger scores candidates (STS ×100, sentence BLEU ×100),
so the metrics and the heatmap (paper Figure 3) show whether the tags were obeyed.

Runs through paracl.distributed.sharded.map_shards as a model stage: each worker (a Ray
actor on `executor: ray`, the driver process locally) loads the BART paraphraser and the
STS scorer once (from models/paraphraser and models/sts_scorer: on a cluster, paths
every node can read) and handles whole shards of `shard_size` sentences, all tag pairs
of a shard together (rows: shard by shard, tag-major within a shard). The seeded
max_sentences sample is drawn on the driver from the id column alone and (id, text) is
streamed. The driver holds the corpus ids while drawing, the picked ids, the shards in
flight, and afterwards one (sim, bleu) pair and two token counts per generated row for
the metrics and the heatmap. Output bytes depend on shard_size, not on the engine.
"""

import logging
import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from paracl import schemas
from paracl.device import seed_everything
from paracl.distributed.sharded import Engine, map_shards, stream_shards
from paracl.io import (
    check_parquet,
    fingerprint,
    input_checksum,
    iter_batches,
    read_json,
    write_json,
)
from paracl.models import check_model_dir
from paracl.params import ParamsError
from paracl.roundtrip import heatmap, paraphraser, tagging
from paracl.roundtrip.paraphraser import generate_shard, init_worker
from paracl.sampling import iter_sample
from paracl.stage import run

log = logging.getLogger("generate_paraphrases")

CORPUS = Path("data/corpus/sentences.parquet")
MODEL = Path("models/paraphraser")
SCORER = Path("models/sts_scorer")
OUT = Path("data/paraphraser/generated.parquet")
METRICS = Path("metrics/roundtrip/generate.json")
HEATMAP_DIR = Path("metrics/roundtrip/heatmaps/generated")
HEATMAP_PNG = Path("metrics/roundtrip/generated_heatmap.png")
_TAG = re.compile(r"<[A-Z]+[0-9_]+>")


def parse_tags(value: str) -> tuple[str, str]:
    """'<SIM95><BLEU20>' → ('<SIM95>', '<BLEU20>'); anything else is a params error."""
    found = _TAG.findall(value)
    if (
        "".join(found) != value.replace(" ", "")
        or len(found) != 2
        or found[0] not in tagging.SIM_TAGS
        or found[1] not in tagging.BLEU_TAGS
    ):
        raise ParamsError(
            f"params.yaml: 'generate_paraphrases.tags' entry {value!r} must be one SIM tag "
            f"({', '.join(tagging.SIM_TAGS)}) followed by one BLEU tag ({', '.join(tagging.BLEU_TAGS)})"
        )
    return found[0], found[1]


def main(params: dict) -> None:
    cfg = params["generate_paraphrases"]
    lang, seed = params["lang"], params["seed"]
    requested = [parse_tags(t) for t in cfg["tags"]]
    if cfg["min_ratio"] > cfg["max_ratio"]:
        raise ParamsError("params.yaml: 'generate_paraphrases.min_ratio' exceeds 'max_ratio'")
    seed_everything(seed)
    # every input checked first (the corpus too: an untrained paraphraser never reads it)
    check_parquet(CORPUS, schemas.CORPUS)
    info = read_json(check_model_dir(MODEL) / "paracl_paraphraser.json")
    check_model_dir(SCORER)
    key = fingerprint(
        cfg, seed, lang, input_checksum(CORPUS), input_checksum(MODEL), input_checksum(SCORER)
    )
    n_sentences = 0

    def shards() -> Iterator[pd.DataFrame]:
        nonlocal n_sentences
        if not info["trained"]:
            return
        sample = iter_sample(CORPUS, cfg["max_sentences"], seed)
        for shard in stream_shards(sample, cfg["shard_size"]):
            n_sentences += len(shard)
            yield shard

    if not info["trained"]:
        log.warning(
            "the paraphraser was not trained (%d training pairs): writing an empty %s",
            info["n_train"],
            OUT,
        )
    gen = {
        "num_beams": cfg["num_beams"],
        "min_ratio": cfg["min_ratio"],
        "max_ratio": cfg["max_ratio"],
        "batch_size": cfg["batch_size"],
        "max_length": cfg["max_length"],
    }
    manifest = map_shards(
        generate_shard,
        shards(),
        out=OUT,
        schema=schemas.GENERATED_PARAPHRASES,
        key=key,
        engine=Engine.from_params(params),
        metadata={"params": cfg, "paraphraser": info},
        model=True,
        init=init_worker if info["trained"] else None,
        init_args=(
            str(MODEL.resolve()),
            str(SCORER.resolve()),
            params["device"],
            lang,
            [s + b for s, b in requested],
            gen,
        ),
        desc="generate shards",
    )
    summarize(params, requested, info, n_sentences, manifest)


def summarize(params: dict, requested, info: dict, n_sentences: int, manifest: dict) -> None:
    """Metrics and heatmaps from the artifact, streamed (a few numbers per row held)."""
    lang, min_words = params["lang"], params["tag"]["heatmap_min_words"]
    cols: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for batch in iter_batches(OUT, schema=schemas.GENERATED_PARAPHRASES):
        for tags, part in batch.groupby("tags", sort=False):
            mask = heatmap.long_enough(part["text"], part["paraphrase"], lang, min_words)
            c = cols[tags]
            for name in ("sim", "bleu", "n_input_tokens", "n_output_tokens"):
                c[name].append(part[name].to_numpy())
            c["mask"].append(np.asarray(mask, dtype=bool))

    def column(tags: str, name: str) -> np.ndarray:
        parts = cols[tags][name] if tags in cols else []
        return np.concatenate(parts) if parts else np.zeros(0)

    per_tag, panels = {}, {}
    if HEATMAP_DIR.exists():
        shutil.rmtree(HEATMAP_DIR)
    HEATMAP_DIR.mkdir(parents=True, exist_ok=True)
    for sim_tag, bleu_tag in requested:
        tags = sim_tag + bleu_tag
        sim_all, bleu_all = column(tags, "sim"), column(tags, "bleu")
        mask = column(tags, "mask").astype(bool)
        sim, bleu = sim_all[mask], bleu_all[mask]
        name = tags.replace("><", "_").strip("<>")
        heatmap.write_csv(heatmap.plot_rows(sim, bleu), HEATMAP_DIR / f"{name}.csv")
        panels[tags] = (sim, bleu)
        n = len(sim_all)
        per_tag[tags] = {
            "n": n,
            "sim_mean": float(sim_all.mean()) if n else None,
            "bleu_mean": float(bleu_all.mean()) if n else None,
            "hit_rate": float(
                np.mean(
                    [
                        tagging.sim_tag(s) == sim_tag and tagging.bleu_tag(b) == bleu_tag
                        for s, b in zip(sim_all, bleu_all, strict=True)
                    ]
                )
            )
            if n
            else None,
            "length_ratio": paraphraser.ratio_summary(
                column(tags, "n_output_tokens").astype(int).tolist(),
                column(tags, "n_input_tokens").astype(int).tolist(),
            ),
        }
    heatmap.write_png(panels, HEATMAP_PNG)
    write_json(
        {
            "paraphraser": info,
            "stand_in": bool(info["stand_in"]),
            "n_sentences": n_sentences,
            "n_generated": manifest["rows"],
            "n_shards": len(manifest["shards"]),
            "per_tag": per_tag,
        },
        METRICS,
    )
    log.info("%d paraphrases for %d tag pairs", manifest["rows"], len(requested))


if __name__ == "__main__":
    run(main)
