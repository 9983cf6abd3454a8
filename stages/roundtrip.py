"""Stage roundtrip: corpus sentences → data/roundtrip/candidates.parquet (resumable shards)."""

import logging
import time
from pathlib import Path

from tqdm import tqdm

from paracl import schemas
from paracl.device import seed_everything, select_device
from paracl.io import ShardedWriter, fingerprint, read_parquet, sha256_file, write_json
from paracl.params import ParamsError
from paracl.roundtrip.standin import seq2seq_model
from paracl.roundtrip.translate import Sampling, Translator, round_trip
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
    corpus = read_parquet(CORPUS, schemas.CORPUS, columns=["id", "text"])
    corpus = corpus.sort_values("id", kind="stable").reset_index(drop=True)
    if cfg["max_sentences"] is not None and len(corpus) > cfg["max_sentences"]:
        corpus = corpus.sample(n=cfg["max_sentences"], random_state=seed).sort_values("id")
        corpus = corpus.reset_index(drop=True)
    device = select_device(params["device"])
    decode = {
        "batch_size": cfg["batch_size"],
        "max_new_tokens": cfg["max_new_tokens"],
        "length_ratio": cfg["length_ratio"],
        "num_beams": cfg["num_beams"],
    }
    key = fingerprint(
        cfg, seed, params["lang"], sha256_file(CORPUS) if CORPUS.is_file() else str(CORPUS)
    )
    n_shards = max(1, -(-len(corpus) // cfg["shard_size"]))
    started = time.perf_counter()
    with (
        seq2seq_model(cfg["forward_model"], seed=0) as (fwd_path, fwd_desc),
        seq2seq_model(cfg["backward_model"], seed=1) as (bwd_path, bwd_desc),
    ):
        forward = Translator(fwd_path, device, cfg["src_lang_code"], cfg["pivot_lang_code"])
        backward = Translator(bwd_path, device, cfg["pivot_lang_code"], cfg["src_lang_code"])
        meta = {"params": cfg, "forward_model": fwd_desc, "backward_model": bwd_desc}
        writer = ShardedWriter(OUT, schemas.ROUNDTRIP_CANDIDATES, key, metadata=meta)
        skipped = 0
        for shard in tqdm(range(n_shards), desc="roundtrip shards"):
            if writer.done(shard):
                skipped += 1
                continue
            part = corpus.iloc[shard * cfg["shard_size"] : (shard + 1) * cfg["shard_size"]]
            frame = round_trip(
                forward,
                backward,
                part["id"].tolist(),
                part["text"].tolist(),
                decoding,
                seed,
                **decode,
            )
            writer.write(shard, frame)
        manifest = writer.finalize(n_shards)
    seconds = time.perf_counter() - started
    if skipped:
        log.info("resumed: %d of %d shards were already done", skipped, n_shards)
    stand_in = fwd_desc["stand_in"] or bwd_desc["stand_in"]
    write_json(
        {
            "forward_model": fwd_desc,
            "backward_model": bwd_desc,
            "stand_in": stand_in,
            "mode": cfg["mode"],
            "settings": [s.name for s in decoding],
            "n_sentences": len(corpus),
            "n_candidates": manifest["rows"],
            "candidates_per_sentence": len(decoding) ** 2,
            "n_shards": n_shards,
            "device": device.type,
        },
        METRICS,
    )
    log.info(
        "%d sentences → %d candidates in %.1f s%s",
        len(corpus),
        manifest["rows"],
        seconds,
        " (STAND-IN model: outputs are noise)" if stand_in else "",
    )


if __name__ == "__main__":
    run(main)
