"""Throughput of the PPDB stages: substitution and perplexity scoring (candidates/s).

Also measures, in the same run and on the same candidates with the same model, the
batched length-bucketed scorer against a one-sentence-at-a-time loop.

    python bench/bench_ppdb.py                       # SmolLM2, 200 candidates
    python bench/bench_ppdb.py --model gpt2 --candidates 1000 --device cuda

Not a test: it prints a JSON line of measurements (timings vary with the machine and
its load; say which machine and load when you quote them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import torch

from paracl.core import schemas
from paracl.core.device import select_device
from paracl.core.io import read_parquet
from paracl.core.models import resolve_model
from paracl.stages.ppdb_substitute import RuleIndex, candidate_rows
from paracl.stages.ppdb_substitute.ppdb_rules import read_dictionary
from paracl.stages.rank_fluency import PerplexityScorer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="data/corpus/sentences.parquet")
    parser.add_argument("--dictionary", default="data/raw/ppdb/ppdb-sample.tsv")
    parser.add_argument("--format", default="ppdb-sample")
    parser.add_argument("--lang", default="en")
    parser.add_argument("--theta", type=float, default=0.3)
    parser.add_argument("--sentences", type=int, default=5000, help="sentences to substitute")
    parser.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    parser.add_argument("--candidates", type=int, default=200, help="candidates to score")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-batch-tokens", type=int, default=4096)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()

    table = read_dictionary(args.dictionary, args.format)
    rules = table.rules[table.rules["prob"] >= args.theta]
    index = RuleIndex(rules, args.lang, 6 if args.lang == "en" else 7)
    corpus = read_parquet(args.corpus, schemas.CORPUS).head(args.sentences)
    start = time.perf_counter()
    rows = list(candidate_rows(corpus, index, max_candidates=10))
    sub_s = time.perf_counter() - start

    texts = [r["candidate"] for r in rows[: args.candidates]]
    device = select_device(args.device)
    model = resolve_model(args.model)
    scorer = PerplexityScorer(model.path, device, args.batch_size, args.max_batch_tokens)
    scorer.score(texts[:8])  # warm-up (allocations, kernels)
    start, cpu = time.perf_counter(), time.process_time()
    batched = scorer.score(texts)
    batched_s, batched_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    single = scorer.score_one_by_one(texts)
    single_s, single_cpu = time.perf_counter() - start, time.process_time() - cpu
    diff = float(abs(batched - single).max() / batched.mean()) if len(texts) else 0.0

    print(
        json.dumps(
            {
                "machine": f"{platform.machine()} {os.cpu_count()} cpus, torch threads "
                f"{torch.get_num_threads()}, load avg {os.getloadavg()[0]:.1f}",
                "device": str(device),
                "substitution": {
                    "sentences": len(corpus),
                    "rules": len(index),
                    "candidates": len(rows),
                    "seconds": round(sub_s, 3),
                    "candidates_per_s": round(len(rows) / sub_s, 1),
                    "sentences_per_s": round(len(corpus) / sub_s, 1),
                },
                "perplexity": {
                    "model": model.describe(),
                    "candidates": len(texts),
                    "batched_s": round(batched_s, 3),
                    "batched_candidates_per_s": round(len(texts) / batched_s, 2),
                    "one_by_one_s": round(single_s, 3),
                    "one_by_one_candidates_per_s": round(len(texts) / single_s, 2),
                    "speedup_batched_vs_one_by_one": round(single_s / batched_s, 2),
                    # CPU seconds of this process (all threads): less sensitive to other
                    # jobs on a shared machine than wall time
                    "batched_cpu_s": round(batched_cpu, 2),
                    "one_by_one_cpu_s": round(single_cpu, 2),
                    "speedup_cpu_time": round(single_cpu / batched_cpu, 2),
                    "max_relative_difference": diff,
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
