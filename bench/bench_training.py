"""Training throughput: paracl's trainer vs sentence-transformers' own trainer, same setup.

Both train the same model on the same (text, paraphrase) pairs with InfoNCE
(MultipleNegativesRankingLoss, scale 20 = tau 0.05), the same batch size, sequence
length, lr and one epoch; we report training samples (pairs) per second of wall time
for the training call itself (model loading excluded). The two runs alternate
`--repeats` times and the median is kept, since this machine's CPUs are shared.

    python bench/bench_training.py --pairs 256 --batch-size 32 --seq-len 32
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time

import numpy as np
import pandas as pd
import torch

from paracl.models import resolve_model
from paracl.training.encoder import build_encoder
from paracl.training.losses import infonce
from paracl.training.trainer import TrainConfig, train

WORDS = (
    "a man woman child dog cat plays runs eats guitar piano field kitchen city river sea "
    "sun red small big old new quickly slowly near under over with in on the".split()
)


def make_pairs(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(8, 20)))) for _ in range(n)]
    paras = [" ".join(t.split()[::-1]) for t in texts]
    return pd.DataFrame({"anchor": texts, "positive": paras, "negative": None})


def run_paracl(path: str, pairs: pd.DataFrame, args) -> float:
    torch.manual_seed(0)
    model = build_encoder(path, "mean", args.seq_len)
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    cfg = TrainConfig(lr=5e-5, epochs=1, batch_size=args.batch_size, seed=0)
    start = time.perf_counter()
    res = train(model, pairs, obj, cfg)
    return res.examples_seen / (time.perf_counter() - start)


def run_st(path: str, pairs: pd.DataFrame, args) -> float:
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    torch.manual_seed(0)
    model = build_encoder(path, "mean", args.seq_len)
    data = Dataset.from_dict({"anchor": pairs.anchor.tolist(), "positive": pairs.positive.tolist()})
    with tempfile.TemporaryDirectory() as tmp:
        targs = SentenceTransformerTrainingArguments(
            output_dir=tmp,
            per_device_train_batch_size=args.batch_size,
            num_train_epochs=1,
            learning_rate=5e-5,
            warmup_steps=0,
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            seed=0,
            dataloader_drop_last=False,
            disable_tqdm=True,
            use_cpu=not torch.cuda.is_available(),
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=targs,
            train_dataset=data,
            loss=MultipleNegativesRankingLoss(model, scale=20.0),
        )
        start = time.perf_counter()
        trainer.train()
        return len(pairs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    path = str(resolve_model(args.model).path)
    pairs = make_pairs(args.pairs)
    ours, theirs = [], []
    for _ in range(args.repeats):
        ours.append(run_paracl(path, pairs, args))
        theirs.append(run_st(path, pairs, args))
    result = {
        "model": args.model,
        "pairs": args.pairs,
        "batch_size": args.batch_size,
        "seq_len": args.seq_len,
        "threads": torch.get_num_threads(),
        "paracl_samples_per_s": round(statistics.median(ours), 2),
        "st_trainer_samples_per_s": round(statistics.median(theirs), 2),
    }
    result["speedup"] = round(
        result["paracl_samples_per_s"] / result["st_trainer_samples_per_s"], 3
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
