"""Benchmark: sentences/s of the unsupervised STS evaluation (batched, cached).

    python bench/bench_eval.py [--model ID_OR_DIR] [--pairs N] [--batch-size B]

Encodes the unique sentences of the English STS sets (STS12–16, STS-B test, SICK-R
test; the first N pairs of each with --pairs) once, then scores them; reports unique
sentences, the cache's saving (pair sides / unique sentences) and throughput, per
wall second and per CPU second of this process (the figure that does not depend on
other jobs sharing the cores). A second pass over the same sets shows the cached cost.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from paracl.core.device import select_device
from paracl.core.models import resolve_model
from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
from paracl.parts.evaluation.unsup_sts import evaluate_unsup_sts, sts_sets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    ap.add_argument("--raw", default="data/raw")
    ap.add_argument("--pairs", type=int, default=300, help="pairs per set (0 = all)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    device = select_device(args.device)
    model = load_encoder(resolve_model(args.model).path, device)
    sets = sts_sets("en", args.raw)
    cache = EmbeddingCache(model, args.batch_size)
    start, cpu = time.perf_counter(), time.process_time()
    out = evaluate_unsup_sts(cache, sets, args.pairs or None)
    first, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    start = time.perf_counter()
    evaluate_unsup_sts(cache, sets, args.pairs or None)
    second = time.perf_counter() - start
    print(json.dumps({
        "model": args.model, "device": str(device), "threads": torch.get_num_threads(),
        "pairs_per_set": args.pairs or "all", "unique_sentences": out["unique_sentences"],
        "pair_sides": out["total_sentences"], **cache.speed(),
        "first_pass_s": round(first, 2), "first_pass_cpu_s": round(first_cpu, 2),
        "sentences_per_cpu_second": round(out["unique_sentences"] / first_cpu, 1),
        "cached_pass_s": round(second, 2),
        "avg_spearman": round(out["avg_spearman"], 2),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
