"""Throughput of prepare_corpus on the mirrored Wikipedia samples (not a test).

For each language and worker count, runs the whole corpus pipeline (read, split,
tokenise, length filter, dedup, langdetect up to the cap) and prints sentences/s:
`in/s` counts every sentence split from the input, `kept/s` the sentences written;
`cpu s` is the CPU time of this process and its workers (on a shared machine the wall
time mostly says how busy the other tenants were, the CPU time does not).
It also times each step alone on one core, to show where the time goes.

    python bench/bench_corpus.py                      # en+ja, 1 and 2 workers, cap 2000
    python bench/bench_corpus.py --langs en --workers 1 2 4 --max-sentences 10000
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from paracl.parts.corpus import langid, segment, tokenize
from paracl.parts.corpus.pipeline import CorpusConfig, prepare_corpus
from paracl.parts.corpus.readers import ReadStats, read_documents

REPO = Path(__file__).resolve().parents[1]
INPUTS = {"en": ("wiki-en/wiki1m_for_simcse.txt", "text"), "ja": ("wiki-ja", "jaquad")}


def per_step(cfg: CorpusConfig, n: int = 500) -> dict[str, float]:
    """Sentences/s of each step alone, in this process, on the first n sentences."""
    paragraphs = [
        p for d in read_documents(cfg.source, cfg.format, ReadStats()) for p in d.paragraphs
    ]
    t0 = time.perf_counter()
    sentences: list[str] = []
    for p in paragraphs:
        sentences.extend(segment.split_sentences(p, cfg.lang))
        if len(sentences) >= n:
            break
    t_split = time.perf_counter() - t0
    sentences = sentences[:n]
    t0 = time.perf_counter()
    for s in sentences:
        tokenize.tokenize(s, cfg.lang)
    t_tok = time.perf_counter() - t0
    langid.set_seed(cfg.seed)
    langid.language_prob(sentences[0], cfg.lang)  # load the profiles outside the timing
    t0 = time.perf_counter()
    for s in sentences:
        langid.language_prob(s, cfg.lang)
    t_lang = time.perf_counter() - t0
    return {
        "split": len(sentences) / t_split,
        "tokenise": len(sentences) / t_tok,
        "langdetect": len(sentences) / t_lang,
    }


def cpu_seconds() -> float:
    """User+system CPU of this process and its finished children (the pool workers)."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=os.environ.get("PARACL_DATA_MIRROR"))
    ap.add_argument("--langs", nargs="+", default=["en", "ja"], choices=["en", "ja"])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--max-sentences", type=int, default=2000)
    ap.add_argument("--shard-size", type=int, default=2000)
    args = ap.parse_args()
    mirror = Path(args.mirror) if args.mirror else REPO.parent / "shared" / "data"

    print(f"cores: {os.cpu_count()}; cap: {args.max_sentences} sentences kept")
    print("| lang | workers | sentences in | kept | wall s | cpu s | in/s | kept/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    steps = {}
    for lang in args.langs:
        rel, fmt = INPUTS[lang]
        cfg = CorpusConfig(
            source=str(mirror / rel),
            format=fmt,
            lang=lang,
            min_words=5,
            max_words=50,
            langdetect_threshold=0.99,
            max_sentences=args.max_sentences,
            seed=42,
        )
        for workers in args.workers:
            cpu0 = cpu_seconds()
            start = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "sentences.parquet"
                metrics = prepare_corpus(cfg, out, workers=workers, shard_size=args.shard_size)
            wall = time.perf_counter() - start
            cpu = cpu_seconds() - cpu0
            n_in = metrics["sentences_in"]
            print(
                f"| {lang} | {workers} | {n_in} | {metrics['kept']} | {wall:.1f} | {cpu:.1f} | "
                f"{n_in / wall:.0f} | {metrics['kept'] / wall:.0f} |",
                flush=True,
            )
        steps[lang] = per_step(cfg)
    print("\none core, each step alone (sentences/s):")
    for lang, rates in steps.items():
        print(f"  {lang}: " + ", ".join(f"{k} {v:.0f}" for k, v in rates.items()))


if __name__ == "__main__":
    main()
