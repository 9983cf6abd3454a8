"""Stage roundtrip: corpus sentences → data/roundtrip/candidates.parquet (shard directory).

Runs through paracl.distributed.sharded.map_shards: on `executor: ray` each of
`model_workers` Ray actors loads both translators once (stand-ins are built inside the
actor, deterministically) and translates whole shards; locally one in-process worker
does. The seeded `max_sentences` sample is drawn on the driver from the id column
alone, then (id, text) is streamed: the driver holds the corpus ids while drawing,
then the picked ids and the shards in flight, never the corpus text. Sentences keep
corpus order; shard i holds sentences [i × shard_size, (i + 1) × shard_size) of the
sample, so the output bytes depend on shard_size but not on the engine or workers.
"""

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from paracl import schemas
from paracl.device import seed_everything, select_device
from paracl.distributed.sharded import Engine, map_shards, stream_shards
from paracl.io import fingerprint, input_checksum, write_json
from paracl.params import ParamsError
from paracl.roundtrip.standin import describe
from paracl.roundtrip.translate import Sampling, init_worker, round_trip_shard
from paracl.sampling import iter_sample
from paracl.stage import run

log = logging.getLogger("roundtrip")

CORPUS = Path("data/corpus/sentences.parquet")
OUT = Path("data/roundtrip/candidates.parquet")
METRICS = Path("metrics/roundtrip/roundtrip.json")


def settings(cfg: dict) -> list[Sampling]:
    if cfg["mode"] == "greedy":
        return [Sampling()]
    if len(cfg["top_k"]) != len(cfg["temperature"]) or not cfg["top_k"]:
        raise ParamsError(
            "params.yaml: 'roundtrip.top_k' and 'roundtrip.temperature' must be non-empty "
            f"lists of equal length (pairs), got {cfg['top_k']} and {cfg['temperature']}"
        )
    return [Sampling(k, float(t)) for k, t in zip(cfg["top_k"], cfg["temperature"], strict=True)]


def main(params: dict) -> None:
    cfg = params["roundtrip"]
    seed = params["seed"]
    seed_everything(seed)
    decoding = settings(cfg)
    fwd_desc = describe(cfg["forward_model"], seed=0)
    bwd_desc = describe(cfg["backward_model"], seed=1)
    decode = {
        "batch_size": cfg["batch_size"],
        "max_new_tokens": cfg["max_new_tokens"],
        "length_ratio": cfg["length_ratio"],
        "num_beams": cfg["num_beams"],
    }
    key = fingerprint(cfg, seed, params["lang"], input_checksum(CORPUS))
    n_sentences = 0

    def shards() -> Iterator[pd.DataFrame]:
        nonlocal n_sentences
        for shard in stream_shards(
            iter_sample(CORPUS, cfg["max_sentences"], seed), cfg["shard_size"]
        ):
            n_sentences += len(shard)
            yield shard

    started = time.perf_counter()
    manifest = map_shards(
        round_trip_shard,
        shards(),
        out=OUT,
        schema=schemas.ROUNDTRIP_CANDIDATES,
        key=key,
        engine=Engine.from_params(params),
        metadata={"params": cfg, "forward_model": fwd_desc, "backward_model": bwd_desc},
        model=True,
        init=init_worker,
        init_args=(
            cfg["forward_model"],
            cfg["backward_model"],
            cfg["src_lang_code"],
            cfg["pivot_lang_code"],
            params["device"],
            decoding,
            seed,
            decode,
        ),
        desc="roundtrip shards",
    )
    seconds = time.perf_counter() - started
    stand_in = fwd_desc["stand_in"] or bwd_desc["stand_in"]
    write_json(
        {
            "forward_model": fwd_desc,
            "backward_model": bwd_desc,
            "stand_in": stand_in,
            "mode": cfg["mode"],
            "settings": [s.name for s in decoding],
            "n_sentences": n_sentences,
            "n_candidates": manifest["rows"],
            "candidates_per_sentence": len(decoding) ** 2,
            "n_shards": len(manifest["shards"]),
            "device": select_device(params["device"]).type,
        },
        METRICS,
    )
    log.info(
        "%d sentences → %d candidates in %.1f s%s",
        n_sentences,
        manifest["rows"],
        seconds,
        " (STAND-IN model: outputs are noise)" if stand_in else "",
    )


if __name__ == "__main__":
    run(main)
