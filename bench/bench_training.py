"""Training throughput: paracl's trainer vs sentence-transformers' own trainer, same setup.

Both train the same model on the same (text, paraphrase) pairs with InfoNCE
(MultipleNegativesRankingLoss, scale 20 = tau 0.05), the same batch size, sequence
length, lr and one epoch; we report training samples (pairs) per second of wall time
for the training call itself (model loading excluded). The runs alternate
`--repeats` times, each repeat starting with the next runner, and the median is kept.

    python bench/bench_training.py --pairs 256 --batch-size 32 --seq-len 32

`--text wiki` (default) trains unsupervised SimCSE-style pairs (anchor = positive) on the
first Wikipedia sentences of the data mirror, whose lengths vary as a real corpus's do;
`--text synthetic` on made-up 8-20 word pairs. paracl runs twice, with its default random
batches and with `length_grouping` (batches of similar length); sentence-transformers with
its default batch sampler, which a user of it would get.

`--train-layers all 4` also runs paracl with only the top 4 transformer layers (+ the
final norm) trained (train_contrastive.train_layers, paracl.core.freeze): the same data,
batch and length, so `speedup_top4_vs_all` is what freezing the lower layers saves. The
sentence-transformers trainer always trains every layer.

    python bench/bench_training.py --model HuggingFaceTB/SmolLM2-135M --dropout 0.1 \
        --train-layers all 4
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from paracl.core.freeze import freeze
from paracl.core.models import resolve_model
from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.parts.training.trainer import TrainConfig, train

WORDS = (
    "a man woman child dog cat plays runs eats guitar piano field kitchen city river sea "
    "sun red small big old new quickly slowly near under over with in on the".split()
)


def make_pairs(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(8, 20)))) for _ in range(n)]
    paras = [" ".join(t.split()[::-1]) for t in texts]
    return pd.DataFrame({"anchor": texts, "positive": paras, "negative": None})


def wiki_pairs(n: int) -> pd.DataFrame:
    """The mirror's first `n` Wikipedia sentences as (sentence, itself) pairs."""
    mirror = Path(os.environ.get("PARACL_DATA_MIRROR", Path(__file__).parents[2] / "shared/data"))
    lines = (mirror / "wiki-en/wiki1m_for_simcse.txt").read_text(encoding="utf-8").splitlines()
    texts = [t.strip() for t in lines[:-1] if t.strip()][:n]  # the last line is cut mid-word
    return pd.DataFrame({"anchor": texts, "positive": texts, "negative": None})


def run_paracl(
    path: str, pairs: pd.DataFrame, args, grouping: bool = False, layers: int | None = None
) -> float:
    """paracl's trainer; `layers`: only the top ones train (None: all, as the ST trainer)."""
    torch.manual_seed(0)
    model = build_encoder(path, "mean", args.seq_len, dropout=args.dropout)
    freeze(model[0].auto_model, layers, False, "--train-layers")
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    cfg = TrainConfig(
        lr=5e-5, epochs=1, batch_size=args.batch_size, seed=0, length_grouping=grouping
    )
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
    model = build_encoder(path, "mean", args.seq_len, dropout=args.dropout)
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text", choices=("wiki", "synthetic"), default="wiki")
    parser.add_argument("--dropout", type=float, default=None, help="e.g. 0.1 for a causal LM")
    parser.add_argument(
        "--train-layers",
        nargs="+",
        type=layer_count,
        default=[None],
        help="paracl runs, one per value: 'all' or the top N layers trained (e.g. all 4)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    path = str(resolve_model(args.model).path)
    pairs = wiki_pairs(args.pairs) if args.text == "wiki" else make_pairs(args.pairs)
    runners = {
        **{
            paracl_name(n): (lambda n=n: run_paracl(path, pairs, args, layers=n))
            for n in dict.fromkeys(args.train_layers)
        },
        "paracl_grouped": lambda: run_paracl(path, pairs, args, grouping=True),
        "st_trainer": lambda: run_st(path, pairs, args),
    }
    runs: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(args.repeats):  # alternating, and each repeat starts with the next one:
        k = r % len(names)  # a process's first run is slower
        for name in names[k:] + names[:k]:
            runs[name].append(runners[name]())
    result = {
        "model": args.model,
        "text": args.text,
        "pairs": args.pairs,
        "batch_size": args.batch_size,
        "seq_len": args.seq_len,
        "threads": torch.get_num_threads(),
        "train_layers": [n or "all" for n in dict.fromkeys(args.train_layers)],
        **{f"{name}_samples_per_s": round(statistics.median(v), 2) for name, v in runs.items()},
    }
    print(json.dumps(result | speedups(result, names), indent=2))


def layer_count(text: str) -> int | None:
    """--train-layers value: 'all' (None) or a number of top layers >= 1."""
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'all' or a number >= 1, got {text!r}")
    return int(text)


def paracl_name(layers: int | None) -> str:
    """The runner's name: `paracl` trains every layer, `paracl_top4` the top 4."""
    return "paracl" if layers is None else f"paracl_top{layers}"


def speedups(result: dict, names: list[str]) -> dict[str, float]:
    """Each paracl run over the ST trainer; each top-N run over paracl with all layers."""
    rate = {name: result[f"{name}_samples_per_s"] for name in names}
    out = {}
    for name in names[:-1]:  # the last is the ST trainer
        suffix = name.removeprefix("paracl").lstrip("_")
        out["speedup" + (f"_{suffix}" if suffix else "")] = round(
            rate[name] / rate["st_trainer"], 3
        )
        if name.startswith("paracl_top") and "paracl" in rate:
            out[f"speedup_{suffix}_vs_all"] = round(rate[name] / rate["paracl"], 3)
    return out


if __name__ == "__main__":
    main()
