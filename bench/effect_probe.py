"""A quick probe of one method's effect on a plain base, over seeds: STS-B test Spearman
of the base as it is (`none`) next to the method trained for a few steps per seed.

It is not the effect preset (which trains and evaluates every method through DVC): it
answers "does this method move this base at all, beyond the seed spread?" in minutes,
with the training and scoring code of the pipeline itself (train_method, sts_spearman).

    python bench/effect_probe.py --method simcse_unsup --dropout 0.1 --seeds 42 43 44

Needs data/corpus/sentences.parquet (`dvc repro prepare_corpus`) and the data mirror.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

import torch

from paracl.schema import load_params
from paracl.stages.train_contrastive.training.dev import read_sts, sts_spearman
from paracl.stages.train_contrastive.training.methods import method_spec, train_method

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    ap.add_argument("--method", default="simcse_unsup")
    ap.add_argument("--input", default="data/corpus/sentences.parquet")
    ap.add_argument("--pooling", default="mean")
    ap.add_argument("--dropout", type=float, default=None)
    ap.add_argument("--freeze-embeddings", action="store_true", help="as effect-ja does")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44])
    ap.add_argument("--test", default="data/raw/stsbenchmark/sts-test.csv")
    ap.add_argument("--test-pairs", type=int, default=500)
    ap.add_argument("--dev", default="data/raw/stsbenchmark/sts-dev.csv")
    ap.add_argument("--out", default=None, help="append one JSON line per run here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    cfg = load_params(REPO / "params.yaml")["train_contrastive"]
    cfg.update(
        base_model=args.base,
        pooling=args.pooling,
        dropout=args.dropout,
        freeze_embeddings=args.freeze_embeddings,
        batch_size=args.batch_size,
        max_seq_length=args.seq_len,
        lr=args.lr,
        epochs=1,
        max_examples=args.steps * args.batch_size,
        dev_max_pairs=100,  # training's own dev score: kept small, the test set decides
        checkpoint_every=None,
    )
    test = read_sts(args.test, args.test_pairs, 0)  # the same seeded 500 pairs every run
    runs = []
    for method, seeds in (("none", [args.seeds[0]]), (args.method, args.seeds)):
        for seed in seeds:
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / method
                loss = "none" if method == "none" else "infonce"
                spec = method_spec(method, {"loss": loss, "input": args.input})
                metrics = train_method(spec, cfg, seed, torch.device("cpu"), out, args.dev)
                from sentence_transformers import SentenceTransformer

                score = sts_spearman(SentenceTransformer(str(out), device="cpu"), test)
            run = {"method": method, "seed": seed, "test_spearman": round(score, 2),
                   "steps": metrics.get("steps", 0), "base": args.base,
                   "pooling": args.pooling, "dropout": args.dropout,
                   "freeze_embeddings": args.freeze_embeddings,
                   "seconds": round(time.perf_counter() - t0)}  # fmt: skip
            print(json.dumps(run), flush=True)
            runs.append(run)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(run) + "\n")
    trained = [r["test_spearman"] for r in runs if r["method"] != "none"]
    sd = statistics.stdev(trained) if len(trained) > 1 else 0.0
    print(f"none {runs[0]['test_spearman']:.2f}; {args.method} "
          f"{statistics.mean(trained):.2f} ± {sd:.2f} over seeds {args.seeds}")  # fmt: skip


if __name__ == "__main__":
    main()
