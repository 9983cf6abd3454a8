"""Throughput of the corrupt stage: noun chunking and T5 blank filling, sentences/s.

Both are measured batched (as the stage runs them) and one sentence at a time, in one
run, on the same sentences:

    python bench/bench_negatives.py --n 200 --model models/t5_adapted
    python bench/bench_negatives.py --n 200 --lang ja --corpus data/corpus/sentences.parquet

Without --model it builds the tiny-random:t5 stand-in (untrained: it never emits eos,
so every fill runs to the generation budget, the slowest case).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch

from paracl.device import select_device
from paracl.negatives.chunks import load_pipeline, noun_chunk_spans
from paracl.negatives.generate import T5Filler
from paracl.negatives.masking import mask_spans
from paracl.standins import build_standin_t5

MIRROR = Path(os.environ.get("PARACL_DATA_MIRROR", "../shared/data"))


def load_sentences(args) -> list[str]:
    if args.corpus:
        import pandas as pd

        df = pd.read_parquet(args.corpus, columns=["text", "lang"])
        return df[df["lang"] == args.lang]["text"].head(args.n).tolist()
    path = MIRROR / "wiki-en" / "wiki1m_for_simcse.txt"
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if 5 < len(line.split()) < 50:
                out.append(line.strip())
            if len(out) == args.n:
                break
    return out


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:8.1f} sentences/s ({seconds:6.2f} s for {n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--lang", default="en", choices=("en", "ja"))
    parser.add_argument("--corpus", help="a corpus Parquet (default: the mirror's wiki-en)")
    parser.add_argument("--model", help="a T5 directory (default: build the stand-in)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--beams", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = load_sentences(args)
    n = len(texts)
    print(f"{n} sentences ({args.lang}), torch threads {args.threads}")

    nlp = load_pipeline(args.lang)
    list(noun_chunk_spans(texts[:8], nlp))  # warm up
    t = time.perf_counter()
    batched = list(noun_chunk_spans(texts, nlp, batch_size=64))
    print("chunking   nlp.pipe(batch 64):", rate(n, time.perf_counter() - t))
    t = time.perf_counter()
    single = [[(c.start_char, c.end_char) for c in nlp(x).noun_chunks] for x in texts]
    print("chunking   one at a time:     ", rate(n, time.perf_counter() - t))
    assert single == batched

    masked = [mask_spans(x, s) for x, s in zip(texts, batched, strict=True) if s]
    device = select_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model
        if path is None:
            build_standin_t5(texts, tmp, vocab_size=3000, d_model=96)
            path = tmp
        filler = T5Filler(path, device)
        inputs, blanks = [m.masked for m in masked], [len(m.chunks) for m in masked]
        kw = {"num_beams": args.beams, "num_return_sequences": args.beams, "max_fill_tokens": 8}
        filler.fill(inputs[:4], blanks[:4], batch_size=4, **kw)  # warm up
        t = time.perf_counter()
        filler.fill(inputs, blanks, batch_size=args.batch_size, **kw)
        print(
            f"generation batch {args.batch_size}, bucketed:  ",
            rate(len(inputs), time.perf_counter() - t),
        )
        t = time.perf_counter()
        filler.fill(inputs, blanks, batch_size=1, **kw)
        print("generation one at a time:    ", rate(len(inputs), time.perf_counter() - t))
    print(
        f"device {device}, beams {args.beams}, model {args.model or 'tiny-random:t5 (untrained)'}"
    )


if __name__ == "__main__":
    main()
