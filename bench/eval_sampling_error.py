"""Sampling error of unsupervised STS scores: all-MiniLM-L6-v2 (`none`) on the English
sets, whole vs seeded stratified samples (paracl.parts.evaluation.sample), with bootstrap SEs.

    nice -n 10 .venv/bin/python bench/eval_sampling_error.py ../shared/data
"""

import json
import sys
import time

import numpy as np
import torch
from scipy import stats

from paracl.core.models import resolve_model
from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
from paracl.parts.evaluation.sample import sample_rows
from paracl.parts.evaluation.unsup_sts import strata_column, sts_sets

torch.set_num_threads(2)
raw = sys.argv[1]
SEED, REPS = 42, 1000
CAPS = (100, 200, 300, 400, 500, 700, 1000)
sets = sts_sets("en", raw)
model = resolve_model("sentence-transformers/all-MiniLM-L6-v2").path
cache = EmbeddingCache(load_encoder(model, torch.device("cpu")), 64)
t0 = time.time()
cos = {
    k: cache.cosine(df["sentence1"].tolist(), df["sentence2"].tolist()) for k, df in sets.items()
}
print(f"encoded {cache.encoded} sentences in {time.time() - t0:.0f} s", file=sys.stderr)
rng = np.random.default_rng(0)


def rho(c, g):
    return stats.spearmanr(c, g).statistic * 100


def boot_se(c, g, reps=REPS):
    n = len(c)
    idx = rng.integers(0, n, size=(reps, n))
    return float(np.std([rho(c[i], g[i]) for i in idx], ddof=1))


out = {"whole": {}, "caps": {}}
for k, df in sets.items():
    g = df["label"].to_numpy(float)
    out["whole"][k] = {"n": len(df), "spearman": rho(cos[k], g), "boot_se": boot_se(cos[k], g)}
for cap in CAPS:
    row = {}
    for k, df in sets.items():
        pos = np.arange(len(df))
        d = df.assign(_pos=pos)
        by = strata_column(df)
        g = df["label"].to_numpy(float)
        s, rec = sample_rows(d, cap, SEED, by)
        p = s["_pos"].to_numpy()
        # spread over 200 other seeds' samples: the error vs the whole set (finite population)
        spread = []
        for seed in range(1000, 1200):
            q = sample_rows(d, cap, seed, by)[0]["_pos"].to_numpy()
            spread.append(rho(cos[k][q], g[q]))
        row[k] = {
            "n": len(p),
            "spearman": rho(cos[k][p], g[p]),
            "boot_se": boot_se(cos[k][p], g[p]),
            "sd_over_samples": float(np.std(spread, ddof=1)),
        }
    row["avg"] = {
        "spearman": float(np.mean([row[k]["spearman"] for k in sets])),
        "boot_se": float(np.sqrt(np.sum([row[k]["boot_se"] ** 2 for k in sets])) / len(sets)),
    }
    out["caps"][cap] = row
    print(cap, {k: round(v["spearman"], 1) for k, v in row.items()}, file=sys.stderr)
w = out["whole"]
out["whole"]["avg"] = {
    "spearman": float(np.mean([w[k]["spearman"] for k in sets])),
    "boot_se": float(np.sqrt(np.sum([w[k]["boot_se"] ** 2 for k in sets])) / len(sets)),
}
print(json.dumps(out, indent=1))
