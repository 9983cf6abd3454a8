"""Quality and speed of the corrupt stage's negatives on real sentences, one language.

Runs what the stage runs (paracl.parts.filler.pipeline.corrupt, the params' corrupt
settings) on a seeded sample of a corpus and prints the quality measures the stage puts
into metrics/negatives.json (share identical / outside text changed / garbled, median
perplexity ratio), the wall time and a few examples:

    python bench/bench_negatives.py --corpus /tmp/after/data/corpus/sentences.parquet --n 200
    python bench/bench_negatives.py --corpus /tmp/ja/data/corpus/sentences.parquet --lang ja
    python bench/bench_negatives.py --model t5-base ...   # any id resolve_model knows

--model defaults to the params' adapt_filler.model for the language; a T5 is used as is
(not adapted). --out writes the rows and the report (JSON) there.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
import torch
import yaml

from paracl.core.device import select_device
from paracl.core.models import resolve_model
from paracl.core.sampling import sample_corpus
from paracl.parts.filler.causal import CausalFiller, is_causal_lm
from paracl.parts.filler.chunks import load_pipeline
from paracl.parts.filler.generate import T5Filler
from paracl.parts.filler.pipeline import CorruptConfig, corrupt, merge_stats

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--lang", default="en")
    ap.add_argument("--n", type=int, default=200, help="anchors")
    ap.add_argument("--model", default=None)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    model_id = args.model or params["adapt_filler"]["model"][args.lang]
    torch.set_num_threads(args.threads)
    device = select_device(args.device)
    path = resolve_model(model_id).path
    causal = is_causal_lm(path)
    cfg = CorruptConfig.from_params(params["corrupt"], seq2seq=not causal)
    anchors = sample_corpus(args.corpus, args.n, args.seed, args.lang)[["id", "text"]]
    nlp = load_pipeline(args.lang)
    started = time.perf_counter()
    if causal:
        filler = CausalFiller(path, device, cfg.sampling(), args.seed)
    else:
        filler = T5Filler(path, device)
    loaded = time.perf_counter()
    rows, stats = corrupt(anchors, nlp, filler, cfg)
    done = time.perf_counter()
    merged = merge_stats([stats])
    report = {
        "model": model_id,
        "lang": args.lang,
        "anchors": len(anchors),
        "negatives": merged["negatives"],
        "candidates": merged["candidates"],
        "anchors_with_negative": merged["anchors_with_negative"],
        "quality": merged["quality"],
        "load_s": round(loaded - started, 1),
        "fill_s": round(done - loaded, 1),
        "counts": {k: v for k, v in merged.items() if isinstance(v, int)},
    }
    print(json.dumps(report, indent=1, ensure_ascii=False))
    best = rows[rows["rank"] == 0].head(8)
    for _, r in best.iterrows():
        print(f"- {r.text}\n  → {r.negative}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        rows.to_parquet(out / f"negatives_{args.lang}.parquet")
        (out / f"report_{args.lang}.json").write_text(
            json.dumps(report, indent=1, ensure_ascii=False)
        )
        pd.DataFrame(best).to_json(
            out / f"examples_{args.lang}.json", orient="records", force_ascii=False
        )


if __name__ == "__main__":
    main()
