"""Throughput of round-trip generation and of tagging (not a test; run by hand).

    python bench/bench_roundtrip.py --n 64 [--model tiny-random:marian] [--scorer models/sts_scorer]

Round trip: sentences/s for the paper's 2 × 2 sampled settings (4 candidates a
sentence), batched (length-sorted batches) versus one sentence at a time, in one run.
Tagging: pairs/s for symbol stripping + sentence BLEU, and for the cross-encoder STS
score when a trained scorer directory is given (or found at models/sts_scorer).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from paracl.device import select_device
from paracl.roundtrip import sts_scorer, tagging
from paracl.roundtrip.translate import PAPER_SETTINGS, Translator, round_trip
from paracl.standins import seq2seq_model

CORPUS = Path("data/corpus/sentences.parquet")
FALLBACK = [
    "The river flows into the sea near the old harbour.",
    "He was born in London and studied physics at Oxford.",
    "The city council approved the new budget on Monday.",
    "A woman is slicing an onion in the kitchen.",
]


def sentences(n: int) -> list[str]:
    if CORPUS.exists():
        from paracl.io import read_parquet

        texts = read_parquet(CORPUS, columns=["text"])["text"].tolist()[:n]
        if texts:
            return texts
    return [FALLBACK[i % len(FALLBACK)] for i in range(n)]


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=64, help="sentences")
    parser.add_argument("--model", default="tiny-random:marian")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--scorer", default="models/sts_scorer")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = select_device(args.device)
    texts = sentences(args.n)
    ids = [str(i) for i in range(len(texts))]
    report: dict = {
        "n_sentences": len(texts),
        "device": device.type,
        "threads": torch.get_num_threads(),
    }
    with seq2seq_model(args.model) as (path, desc):
        report["model"] = desc
        tr = Translator(path, device)
        tr.translate(texts[:2], PAPER_SETTINGS[0], max_new_tokens=4)  # warm-up
        for name, bs in (("batched", args.batch_size), ("one_at_a_time", 1)):
            seconds, out = timed(
                lambda bs=bs: round_trip(
                    tr,
                    tr,
                    ids,
                    texts,
                    PAPER_SETTINGS,
                    seed=0,
                    batch_size=bs,
                    max_new_tokens=args.max_new_tokens,
                )
            )
            report[f"roundtrip_{name}"] = {
                "batch_size": bs,
                "seconds": round(seconds, 2),
                "sentences_per_s": round(len(texts) / seconds, 2),
                "candidates_per_s": round(len(out) / seconds, 2),
            }
    pairs = [(t, FALLBACK[i % len(FALLBACK)]) for i, t in enumerate(texts * 4)]
    seconds, _ = timed(lambda: [tagging.sentence_bleu(b, a) for a, b in pairs])
    report["tag_bleu_pairs_per_s"] = round(len(pairs) / seconds, 1)
    if (Path(args.scorer) / "config.json").exists():
        scorer = sts_scorer.load_scorer(args.scorer, str(device))
        seconds, _ = timed(
            lambda: tagging.score_pairs(
                [a for a, _ in pairs],
                [b for _, b in pairs],
                lambda p: sts_scorer.predict(scorer, p, 64),
            )
        )
        report["tag_bleu_and_sts_pairs_per_s"] = round(len(pairs) / seconds, 1)
    else:
        report["tag_bleu_and_sts_pairs_per_s"] = f"skipped: no scorer at {args.scorer}"
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
