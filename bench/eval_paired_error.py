"""How many pairs per set make the sampling error smaller than the seed spread (issue 33
item 3)? Two encoders scored on the same pairs: the spread, over bootstrap draws of n pairs
per set, of one encoder's 7-set STS average (the error of a score) and of the difference
between the two (the error of a comparison: both are scored on the same pairs, so much of
it cancels).

    nice -n 10 .venv/bin/python bench/eval_paired_error.py ../shared/data \
        models/encoders/none models/encoders/simcse_unsup_s1 --pool 1000 > paired.json

The draws come from a pool: each set's seeded stratified sample of `--pool` pairs (the
evaluate stage's paracl.parts.evaluation.sample; whole sets with --pool 0), embedded once per
encoder; n pairs are drawn from it with replacement, i.e. from a population shaped like the
set. A pool of 1,000 per set costs ~14,000 sentences per encoder.
"""

import argparse
import json
import sys
import time

import numpy as np
import torch
from scipy import stats

from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
from paracl.parts.evaluation.sample import sample_rows
from paracl.parts.evaluation.unsup_sts import strata_column, sts_sets

CAPS = (100, 250, 500, 1000)


def pool(sets: dict, size: int | None, seed: int) -> dict:
    """Each set's seeded stratified sample of `size` pairs (None: the whole set)."""
    return {k: sample_rows(df, size, seed, strata_column(df))[0] for k, df in sets.items()}


def cosines(encoder: str, sets: dict, batch: int) -> dict[str, np.ndarray]:
    """Each set's cosine per pair, one encoding of each sentence."""
    cache = EmbeddingCache(load_encoder(encoder, torch.device("cpu")), batch)
    t0 = time.time()
    out = {
        k: cache.cosine(df["sentence1"].tolist(), df["sentence2"].tolist())
        for k, df in sets.items()
    }
    print(f"{encoder}: {cache.encoded} sentences in {time.time() - t0:.0f} s", file=sys.stderr)
    return out


def rho(cos: np.ndarray, gold: np.ndarray) -> float:
    return float(stats.spearmanr(cos, gold).statistic * 100)


def spread(sets: dict, a: dict, b: dict, n: int, draws: int, rng) -> dict:
    """SD over bootstrap draws of n pairs per set: A's 7-set average and (B − A) on the
    same draws."""
    avg_a, diff = [], []
    for _ in range(draws):
        ra, rb = [], []
        for k, df in sets.items():
            p = rng.integers(0, len(df), size=n)
            gold = df["label"].to_numpy(float)[p]
            ra.append(rho(a[k][p], gold))
            rb.append(rho(b[k][p], gold))
        avg_a.append(np.mean(ra))
        diff.append(np.mean(rb) - np.mean(ra))
    return {"avg_a": float(np.mean(avg_a)), "sd_avg_a": float(np.std(avg_a, ddof=1)),
            "diff": float(np.mean(diff)), "sd_diff": float(np.std(diff, ddof=1))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("raw", help="the data mirror (or data/raw)")
    parser.add_argument("a", help="encoder A (e.g. the untrained base)")
    parser.add_argument("b", help="encoder B (e.g. a trained run)")
    parser.add_argument("--pool", type=int, default=1000, help="pairs per set; 0 = whole sets")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42, help="the pool's sample seed")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sets = pool(sts_sets("en", args.raw), args.pool or None, args.seed)
    a, b = cosines(args.a, sets, args.batch), cosines(args.b, sets, args.batch)
    whole = {k: {"a": rho(a[k], df["label"].to_numpy(float)), "b": rho(b[k], df["label"].to_numpy(float))}
             for k, df in sets.items()}  # fmt: skip
    out = {"a": args.a, "b": args.b, "pool": {k: len(df) for k, df in sets.items()},
           "pool_scores": whole, "draws": args.draws, "n": {}}  # fmt: skip
    rng = np.random.default_rng(0)
    for n in CAPS:
        out["n"][str(n)] = row = spread(sets, a, b, n, args.draws, rng)
        print(n, {k: round(v, 2) for k, v in row.items()}, file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
