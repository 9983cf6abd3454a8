"""Stage corrupt: corpus + models/t5_adapted → data/negatives/negatives.parquet.

Noun chunks (spaCy / GiNZA) of each sampled anchor are replaced by T5 sentinels and T5
fills them by beam search; each returned sequence is a hard negative (JCSE §3.2).
"""

import json
import logging
from pathlib import Path

import torch

from paracl import schemas
from paracl.device import seed_everything, select_device
from paracl.io import write_json, write_parquet
from paracl.negatives.chunks import PIPELINES, load_pipeline
from paracl.negatives.generate import T5Filler
from paracl.negatives.pipeline import CorruptConfig, corrupt, sample_corpus
from paracl.params import ParamsError
from paracl.stage import run

CORPUS = "data/corpus/sentences.parquet"
MODEL = "models/t5_adapted"
OUT = "data/negatives/negatives.parquet"
METRICS = "metrics/negatives.json"

log = logging.getLogger("corrupt")


def main(params: dict) -> None:
    cfg, lang, seed = params["corrupt"], params["lang"], params["seed"]
    seed_everything(seed)
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    device = select_device(params["device"])
    info_path = Path(MODEL) / "paracl_t5.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {"model": MODEL}
    anchors = sample_corpus(CORPUS, lang, cfg["max_sentences"], seed)
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
    if anchors.empty:
        log.warning("%s has no sentence of lang %r: writing an empty negatives file", CORPUS, lang)
    filler = T5Filler(MODEL, device)
    rows, stats = corrupt(anchors, load_pipeline(lang), filler, ccfg)
    meta = {"model": info, "chunker": PIPELINES[lang], "lang": lang, "seed": seed, "params": cfg}
    write_parquet(rows, OUT, schemas.NEGATIVES, metadata=meta)
    metrics = {
        **stats,
        "model": info.get("model"),
        "stand_in": bool(info.get("stand_in", False)),
        "adapted": bool(info.get("adapted", False)),
        "chunker": PIPELINES[lang],
        "lang": lang,
        "examples": rows.head(5)[["text", "masked", "negative"]].to_dict("records"),
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
