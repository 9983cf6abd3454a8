"""Throughput of round-trip generation and of tagging (not a test; run by hand).

    python bench/bench_roundtrip.py --n 48 [--model google/gemma-3-270m] [--scorer models/sts_scorer]

Round trip: sentences/s for 2 × 2 sampled settings (4 candidates a sentence), paracl's
batched decoding versus one sentence at a time, in one run, on the same sentences:

- a packaged GGUF (the default gemma-3-270m): paracl.parts.llama_batch (`--batch-size`
  sequences side by side, each prompt read once per grid) versus llama-cpp-python's own
  `Llama.create_completion`, one completion at a time (what a user of the library
  writes, and what paracl ran before);
- a transformers seq2seq model (tiny-random:marian, FSMT, …): length-sorted batches of
  `--batch-size` versus batches of 1.

Tagging: pairs/s for symbol stripping + sentence BLEU, and for the STS score when a
trained scorer directory is given (or found at models/sts_scorer).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

import torch

from paracl.core.device import select_device
from paracl.core.models import model_dir
from paracl.parts import sts_scorer
from paracl.parts.tags import tagging
from paracl.parts.translate import (
    PAPER_SETTINGS,
    LlamaCppTranslator,
    Sampling,
    Translator,
    batch_seed,
    few_shot_prefix,
    load_translator,
    round_trip,
    translation_prompt,
)
from paracl.testing import standins

CORPUS = Path("data/corpus/sentences.parquet")
FALLBACK = [
    "The river flows into the sea near the old harbour.",
    "He was born in London and studied physics at Oxford.",
    "The city council approved the new budget on Monday.",
    "A woman is slicing an onion in the kitchen.",
]


def sentences(n: int) -> list[str]:
    """`n` corpus sentences: the run's corpus where it exists, else a seeded sample of the
    data mirror's Wikipedia lines kept as prepare_corpus keeps them (5 < words < 50)."""
    if CORPUS.exists():
        from paracl.core.io import read_parquet

        texts = read_parquet(CORPUS, columns=["text"])["text"].tolist()[:n]
        if texts:
            return texts
    mirror = Path(os.environ.get("PARACL_DATA_MIRROR", Path(__file__).parents[2] / "shared/data"))
    lines = (mirror / "wiki-en/wiki1m_for_simcse.txt").read_text(encoding="utf-8").splitlines()
    random.Random(0).shuffle(lines)
    return [t.strip() for t in lines if 5 < len(t.split()) < 50][:n]


class CreateCompletion(LlamaCppTranslator):
    """The reference: llama-cpp-python's `create_completion`, one sentence at a time,
    each from the saved state of the few-shot examples (paracl's code before batching)."""

    def translate_grid(self, texts, settings, seeds, max_new_tokens=128, length_ratio=2.0, **_):
        llm = self.llm
        if not hasattr(self, "state"):
            llm.reset()
            llm.eval(llm.tokenize(few_shot_prefix(self.src, self.tgt).encode(), add_bos=True))
            self.state = llm.save_state()
        out = []
        for setting, seed in zip(settings, seeds, strict=True):
            decode = (
                {"temperature": 0.0}
                if setting.top_k is None
                else {"temperature": setting.temperature, "top_k": setting.top_k}
            )
            row = []
            for text in texts:
                n = len(llm.tokenize(text.encode(), add_bos=False))
                llm.load_state(self.state)
                completion = llm.create_completion(
                    translation_prompt(text, self.src, self.tgt),
                    max_tokens=min(max_new_tokens, int(length_ratio * n + 0.999) + 5),
                    stop=["\n"],
                    top_p=1.0,
                    min_p=0.0,
                    repeat_penalty=1.0,
                    seed=batch_seed(seed, setting.name, [text]) & 0x7FFF_FFFF,
                    **decode,
                )
                row.append(completion["choices"][0]["text"].strip())
            out.append(row)
        return out


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=64, help="sentences")
    parser.add_argument("--model", default="google/gemma-3-270m")
    parser.add_argument("--top-k", type=int, nargs="+", default=[20, 30])
    parser.add_argument("--temperature", type=float, nargs="+", default=[0.7, 0.5])
    parser.add_argument("--length-ratio", type=float, default=1.5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--scorer", default="models/sts_scorer")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    standins.register()  # tiny-random:<arch> ids, as the tests name them
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
    settings = [Sampling(k, t) for k, t in zip(args.top_k, args.temperature, strict=True)]
    report["settings"] = [x.name for x in settings]
    decode = {"max_new_tokens": args.max_new_tokens, "length_ratio": args.length_ratio}
    if args.model in ("google/gemma-3-270m", "HuggingFaceTB/SmolLM2-135M-Instruct"):
        loaded: dict = {}
        batched = [
            load_translator(args.model, 0, device, "en", "de", loaded=loaded),
            load_translator(args.model, 1, device, "de", "en", loaded=loaded),
        ]
        reference = [CreateCompletion(b.llm, b.src, b.tgt) for b in batched]
        runners = (
            ("paracl_batched", batched, args.batch_size),
            ("create_completion", reference, 1),
        )
        report["model"] = args.model
    else:
        runners = ()
        with model_dir(args.model) as (path, desc):
            report["model"] = desc
            tr = Translator(path, device)
            tr.translate(texts[:2], PAPER_SETTINGS[0], max_new_tokens=4)  # warm-up
            runners = (("batched", (tr, tr), args.batch_size), ("one_at_a_time", (tr, tr), 1))
    for name, (fwd, bwd), bs in runners:
        seconds, out = timed(
            lambda fwd=fwd, bwd=bwd, bs=bs: round_trip(
                fwd, bwd, ids, texts, settings, seed=0, batch_size=bs, **decode
            )
        )
        report[f"roundtrip_{name}"] = {
            "batch_size": bs,
            "seconds": round(seconds, 2),
            "sentences_per_s": round(len(texts) / seconds, 3),
            "candidates_per_s": round(len(out) / seconds, 2),
            "empty": int((out["paraphrase"] == "").sum()),
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
