"""Stage corrupt: corpus + models/t5_adapted → data/negatives/negatives.parquet (shard dir).

Noun chunks (spaCy / GiNZA) of each sampled anchor are replaced by T5 sentinels and T5
fills them by beam search; each returned sequence is a hard negative (JCSE §3.2).

Runs through paracl.distributed.sharded.map_shards as a model stage: each worker (a Ray
actor on `executor: ray`, the driver process locally) loads the chunker and T5 once and
corrupts whole shards of `corrupt.shard_size` anchors. The seeded anchor sample is drawn
on the driver from the `lang` column alone and (id, text) is streamed: the driver holds
max_sentences sample positions and the shards in flight, never the corpus. The output
bytes depend on shard_size (shard boundaries), not on the engine or the worker count.
The workers read the model from models/t5_adapted (on a cluster: a path every node
can read, e.g. a shared filesystem or Ray's runtime_env working_dir).
"""

import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from paracl import schemas
from paracl.device import seed_everything
from paracl.distributed.sharded import Engine, map_shards, stream_shards
from paracl.io import fingerprint, input_checksum, iter_batches, read_json, write_json
from paracl.models import check_model_dir
from paracl.negatives.chunks import PIPELINES
from paracl.negatives.pipeline import CorruptConfig, merge_stats
from paracl.negatives.sharded import corrupt_shard, init_worker, shard_stats
from paracl.params import ParamsError
from paracl.sampling import iter_sample
from paracl.stage import run

CORPUS = "data/corpus/sentences.parquet"
MODEL = "models/t5_adapted"
OUT = "data/negatives/negatives.parquet"
METRICS = "metrics/negatives.json"

log = logging.getLogger("corrupt")


def main(params: dict) -> None:
    cfg, lang, seed = params["corrupt"], params["lang"], params["seed"]
    seed_everything(seed)
    ccfg = CorruptConfig(
        num_beams=cfg["num_beams"],
        num_return_sequences=cfg["num_return_sequences"],
        batch_size=cfg["batch_size"],
        max_fill_tokens=cfg["max_fill_tokens"],
        on_missing=cfg["on_missing"],
        chunk_batch_size=cfg["chunk_batch_size"],
    )
    if ccfg.num_return_sequences > ccfg.num_beams:
        raise ParamsError(
            f"params.yaml: 'corrupt.num_return_sequences' ({ccfg.num_return_sequences}) "
            f"must be <= 'corrupt.num_beams' ({ccfg.num_beams})"
        )
    info_path = check_model_dir(MODEL) / "paracl_t5.json"
    info = read_json(info_path) if info_path.exists() else {"model": MODEL}
    key = fingerprint(cfg, seed, lang, input_checksum(CORPUS), input_checksum(MODEL))
    n_anchors = 0

    def shards() -> Iterator[pd.DataFrame]:
        nonlocal n_anchors
        anchors = iter_sample(CORPUS, cfg["max_sentences"], seed, lang)
        for shard in stream_shards(anchors, cfg["shard_size"]):
            n_anchors += len(shard)
            yield shard

    meta = {"model": info, "chunker": PIPELINES[lang], "lang": lang, "seed": seed, "params": cfg}
    manifest = map_shards(
        corrupt_shard,
        shards(),
        out=OUT,
        schema=schemas.NEGATIVES,
        key=key,
        engine=Engine.from_params(params),
        metadata=meta,
        model=True,
        init=init_worker,
        init_args=(str(Path(MODEL).resolve()), lang, params["device"], cfg["threads"], ccfg),
        desc="corrupt shards",
    )
    if n_anchors == 0:
        log.warning(
            "%s has no sentence of lang %r: wrote an empty negatives artifact", CORPUS, lang
        )
    stats = merge_stats(shard_stats(OUT))
    first = next(iter_batches(OUT, batch_size=5, schema=schemas.NEGATIVES), pd.DataFrame())
    metrics = {
        **stats,
        "model": info.get("model"),
        "stand_in": bool(info.get("stand_in", False)),
        "adapted": bool(info.get("adapted", False)),
        "chunker": PIPELINES[lang],
        "lang": lang,
        "n_shards": len(manifest["shards"]),
        "examples": first.head(5)[["text", "masked", "negative"]].to_dict("records")
        if len(first)
        else [],
    }
    write_json(metrics, METRICS)
    log.info(
        "%d anchors -> %d negatives (%.2f per anchor with any); %d without noun chunk",
        stats["sentences_in"],
        stats["negatives"],
        stats["negatives_per_anchor"],
        stats["skipped_no_chunk"],
    )


if __name__ == "__main__":
    run(main)
