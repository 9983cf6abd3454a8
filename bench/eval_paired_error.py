"""How many pairs per set make the sampling error smaller than the seed spread (issue 33
item 3)? Two encoders scored on the same seeded stratified samples (the evaluate stage's
paracl.evaluation.sample), for several caps: the spread, over other seeds' samples, of one
encoder's 7-set STS average (the error of a score) and of the difference between the two
(the error of a comparison: both are scored on the same pairs, so most of it cancels).

    nice -n 10 .venv/bin/python bench/eval_paired_error.py ../shared/data \
        models/encoders/none models/encoders/simcse_unsup_s1 > paired.json

Each encoder embeds the whole sets once (the cosines are then sampled), so one run costs two
whole-set encodings: ~37,600 sentences each.
"""

import argparse
import json
import sys
import time

import numpy as np
import torch
from scipy import stats

from paracl.evaluation.encoder import EmbeddingCache, load_encoder
from paracl.evaluation.sample import sample_rows
from paracl.evaluation.unsup_sts import strata_column, sts_sets

CAPS = (100, 250, 500, 1000)
SAMPLE_SEEDS = range(1000, 1200)  # 200 other seeds' samples, as eval_sampling_error.py


def cosines(encoder: str, sets: dict, batch: int) -> dict[str, np.ndarray]:
    """Each set's cosine per pair, whole sets, one encoding of each sentence."""
    cache = EmbeddingCache(load_encoder(encoder, torch.device("cpu")), batch)
    t0 = time.time()
    out = {k: cache.cosine(df["sentence1"].tolist(), df["sentence2"].tolist()) for k, df in sets.items()}
    print(f"{encoder}: {cache.encoded} sentences in {time.time() - t0:.0f} s", file=sys.stderr)
    return out


def rho(cos: np.ndarray, gold: np.ndarray) -> float:
    return float(stats.spearmanr(cos, gold).statistic * 100)


def spread(sets: dict, a: dict, b: dict, cap: int | None) -> dict:
    """SD over SAMPLE_SEEDS of A's 7-set average and of (B − A) on the same samples."""
    avg_a, diff = [], []
    for seed in SAMPLE_SEEDS if cap is not None else [0]:
        ra, rb = [], []
        for k, df in sets.items():
            d = df.assign(_pos=np.arange(len(df)))
            p = sample_rows(d, cap, seed, strata_column(df))[0]["_pos"].to_numpy()
            gold = df["label"].to_numpy(float)[p]
            ra.append(rho(a[k][p], gold))
            rb.append(rho(b[k][p], gold))
        avg_a.append(np.mean(ra))
        diff.append(np.mean(rb) - np.mean(ra))
    sd = (lambda v: float(np.std(v, ddof=1))) if cap is not None else (lambda v: 0.0)
    return {"avg_a": float(np.mean(avg_a)), "sd_avg_a": sd(avg_a),
            "diff": float(np.mean(diff)), "sd_diff": sd(diff)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("raw", help="the data mirror (or data/raw)")
    parser.add_argument("a", help="encoder A (e.g. the untrained base)")
    parser.add_argument("b", help="encoder B (e.g. a trained run)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sets = sts_sets("en", args.raw)
    a, b = cosines(args.a, sets, args.batch), cosines(args.b, sets, args.batch)
    out = {"a": args.a, "b": args.b, "sample_seeds": len(SAMPLE_SEEDS), "caps": {}}
    for cap in (*CAPS, None):
        out["caps"][str(cap or "whole")] = row = spread(sets, a, b, cap)
        print(cap, {k: round(v, 2) for k, v in row.items()}, file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
