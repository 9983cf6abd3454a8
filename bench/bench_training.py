"""Training throughput: paracl's trainer vs sentence-transformers' own trainer and a bare
PyTorch loop, same setup.

All train the same model on the same (text, paraphrase) pairs with InfoNCE
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

`--precision fp32 bf16` runs every runner once per precision (`auto`: what
paracl.core.device picks here) and reports seconds a step per precision and the speed-up
of each over fp32. `--runners` picks the runners (default: all four).

`bare` is the floor: a plain PyTorch loop over batches tokenized once before the clock's
epoch starts (the tokenizer's own padding per batch), paracl's batches in paracl's order,
the same model call, loss, fused AdamW and schedule. Its losses must equal paracl's
(random batches) to 1e-6, step by step: the bench checks and reports the largest gap.
`--tiny` swaps the model's weights for a random BERT of 2 layers, hidden 64 (the model's
tokenizer kept), where a step is almost all overhead:

    python bench/bench_training.py --tiny --pairs 2048 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from transformers import get_linear_schedule_with_warmup

from paracl.core.configs import from_section
from paracl.core.device import adamw, autocast, autocast_dtype, precision_record, seed_everything
from paracl.core.freeze import freeze
from paracl.core.models import resolve_model
from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.schema import load_params
from paracl.stages.train_contrastive.training.trainer import TrainConfig, epoch_batches, train

WORDS = (
    "a man woman child dog cat plays runs eats guitar piano field kitchen city river sea "
    "sun red small big old new quickly slowly near under over with in on the".split()
)
RUNNERS = ("paracl", "grouped", "bare", "st")
LOSS_TOLERANCE = 1e-6  # bare vs paracl, step by step


@dataclass
class Run:
    """One timed training call: pairs a second, seconds a step (wall, and this process's
    CPU seconds: steadier than wall on a shared machine), the loss of every step."""

    samples_per_s: float
    step_s: float
    cpu_step_s: float
    losses: list[float]


class Clock:
    """Wall and process CPU seconds since it was made."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def run(self, samples: int, steps: int, losses: list[float]) -> Run:
        wall, cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        return Run(samples / wall, wall / steps, cpu / steps, losses)


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


def tiny_bert(path: str, out_dir: Path) -> str:
    """A random BERT of 2 layers, hidden 64, with `path`'s tokenizer: a step of it is almost
    all overhead (tokenising, Python), which is what the tiny runs measure."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(path)
    config = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=256,
                        pad_token_id=tok.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    BertModel(config).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return str(out_dir)


def _encoder(path: str, args):
    torch.manual_seed(0)
    return build_encoder(path, "mean", args.seq_len, dropout=args.dropout)


def run_paracl(
    path: str, pairs: pd.DataFrame, args, precision: str, grouping=False, layers=None
) -> Run:
    """paracl's trainer; `layers`: only the top ones train (None: all, as the ST trainer)."""
    model = _encoder(path, args)
    freeze(model[0].auto_model, layers, False, "--train-layers")
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    own = {"lr": 5e-5, "epochs": 1, "batch_size": args.batch_size, "length_grouping": grouping,
           "precision": precision}  # fmt: skip
    section = {**load_params()["train_contrastive"], **own}
    cfg = from_section(TrainConfig, section, seed=0, mega_batch=1)
    clock = Clock()
    res = train(model, pairs, obj, cfg)
    return clock.run(res.examples_seen, res.steps, res.losses)


def run_bare(path: str, pairs: pd.DataFrame, args, precision: str) -> Run:
    """The floor: paracl's batches (random, seed 0) tokenized once up front, then a plain
    loop of forward, InfoNCE, backward, fused AdamW and the linear schedule."""
    model = _encoder(path, args)
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    device, tok, n = model.device, model.tokenizer, len(pairs)
    clock = Clock()
    seed_everything(0)  # as train() does: the same dropout masks
    batches = epoch_batches(n, args.batch_size, 0, 0)
    texts = pairs.anchor.astype(str).tolist() + pairs.positive.astype(str).tolist()
    enc = tok(texts, truncation=True, max_length=model.max_seq_length)
    rows = [{k: v[i] for k, v in enc.items()} for i in range(2 * n)]
    feats = [tok.pad([rows[i] for i in b] + [rows[n + i] for i in b], return_tensors="pt")
             for b in batches]  # fmt: skip
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = adamw(params, lr=5e-5)
    scheduler = get_linear_schedule_with_warmup(optimizer, 0, len(batches))
    model.train()
    losses = []
    for b, f in zip(batches, feats, strict=True):
        optimizer.zero_grad(set_to_none=True)
        with autocast(device, precision):
            emb = model({k: v.to(device) for k, v in f.items()})["sentence_embedding"].float()
        loss = obj.loss(list(emb.split(len(b))))
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.detach())
    seen = sum(len(b) for b in batches)
    return clock.run(seen, len(batches), [float(x) for x in losses])


def run_st(path: str, pairs: pd.DataFrame, args, precision: str) -> Run:
    """sentence-transformers' trainer as its user runs it, mixed precision as `precision`
    resolves here (its losses are not comparable: its own sampler draws other batches)."""
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = _encoder(path, args)
    dtype = autocast_dtype(model.device, precision)
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
            bf16=dtype == torch.bfloat16,
            fp16=dtype == torch.float16,
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=targs,
            train_dataset=data,
            loss=MultipleNegativesRankingLoss(model, scale=20.0),
        )
        clock = Clock()
        trainer.train()
        return clock.run(len(pairs), trainer.state.global_step, [])


def make_runners(path: str, pairs: pd.DataFrame, args) -> dict:
    """Name -> a call returning a Run: each chosen runner once per precision."""
    out = {}
    for prec in args.precision:
        tag = "" if len(args.precision) == 1 else f"@{prec}"
        if "paracl" in args.runners:
            for n in dict.fromkeys(args.train_layers):
                out[paracl_name(n) + tag] = lambda n=n, p=prec: run_paracl(
                    path, pairs, args, p, layers=n
                )
        if "grouped" in args.runners:
            out["paracl_grouped" + tag] = lambda p=prec: run_paracl(path, pairs, args, p, True)
        if "bare" in args.runners:
            out["bare" + tag] = lambda p=prec: run_bare(path, pairs, args, p)
        if "st" in args.runners:
            out["st_trainer" + tag] = lambda p=prec: run_st(path, pairs, args, p)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--tiny", action="store_true", help="random 2-layer hidden-64 BERT")
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text", choices=("wiki", "synthetic"), default="wiki")
    parser.add_argument("--dropout", type=float, default=None, help="e.g. 0.1 for a causal LM")
    parser.add_argument("--precision", nargs="+", choices=("fp32", "bf16", "auto"),
                        default=["auto"], help="one run of each runner per precision")  # fmt: skip
    parser.add_argument("--runners", nargs="+", choices=RUNNERS, default=list(RUNNERS))
    parser.add_argument(
        "--train-layers",
        nargs="+",
        type=layer_count,
        default=[None],
        help="paracl runs, one per value: 'all' or the top N layers trained (e.g. all 4)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(resolve_model(args.model).path)
        path = tiny_bert(path, Path(tmp)) if args.tiny else path
        pairs = wiki_pairs(args.pairs) if args.text == "wiki" else make_pairs(args.pairs)
        runs = time_runners(make_runners(path, pairs, args), args.repeats)
    print(json.dumps(report(args, runs), indent=2))


def time_runners(runners: dict, repeats: int) -> dict[str, list[Run]]:
    """Every runner `repeats` times, alternating, each repeat starting with the next one
    (a process's first run is slower)."""
    runs: dict[str, list[Run]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            runs[name].append(runners[name]())
    return runs


def report(args, runs: dict[str, list[Run]]) -> dict:
    """The medians, the speed-ups and the bare-vs-paracl loss check."""
    cpu = torch.device("cpu")
    result = {
        "model": args.model + (" (tiny: random BERT, 2 layers, hidden 64)" if args.tiny else ""),
        "text": args.text,
        "pairs": args.pairs,
        "batch_size": args.batch_size,
        "seq_len": args.seq_len,
        "threads": torch.get_num_threads(),
        "train_layers": [n or "all" for n in dict.fromkeys(args.train_layers)],
        "precision": {p: precision_record(cpu, p) for p in args.precision},
        **{f"{name}_samples_per_s": round(statistics.median(r.samples_per_s for r in v), 2)
           for name, v in runs.items()},
        **{f"{name}_step_s": round(statistics.median(r.step_s for r in v), 4)
           for name, v in runs.items()},
        **{f"{name}_cpu_step_s": round(statistics.median(r.cpu_step_s for r in v), 4)
           for name, v in runs.items()},
    }  # fmt: skip
    return result | speedups(result, list(runs)) | loss_check(runs)


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
    """Each run over the ST trainer and over the bare loop of its precision; each top-N run
    over paracl with all layers; each precision over fp32, runner by runner. By wall time
    (pairs/s) and, as `..._cpu`, by CPU seconds a step (steadier on a shared machine)."""
    out = {}
    measures = {"": {n: result[f"{n}_samples_per_s"] for n in names},
                "_cpu": {n: 1 / result[f"{n}_cpu_step_s"] for n in names}}  # fmt: skip
    for suffix, rate in measures.items():
        for name in names:
            base, _, prec = name.partition("@")
            tag = f"@{prec}" if prec else ""
            pairs = [(f"{base}_vs_{ref}{tag}", ref + tag) for ref in ("st_trainer", "bare")
                     if base not in (ref, "st_trainer")]  # fmt: skip
            if base.startswith("paracl_top"):
                pairs.append((f"{base}_vs_all{tag}", "paracl" + tag))
            if prec and prec != "fp32":
                pairs.append((f"{base}_{prec}_vs_fp32", f"{base}@fp32"))
            for key, ref in pairs:
                if ref in rate:
                    out[key + suffix] = round(rate[name] / rate[ref], 3)
    return out


def loss_check(runs: dict[str, list[Run]]) -> dict:
    """The largest step-by-step loss gap of the bare loop against paracl (random batches),
    per precision; raises when it exceeds LOSS_TOLERANCE or the step counts differ."""
    out = {}
    for name, bare in runs.items():
        base, _, prec = name.partition("@")
        other = "paracl" + (f"@{prec}" if prec else "")
        if base != "bare" or other not in runs:
            continue
        out[f"max_loss_gap_{name}_vs_{other}"] = loss_gap(
            name, bare[0].losses, other, runs[other][0].losses
        )
    return out


def loss_gap(name: str, a: list[float], other: str, b: list[float]) -> float:
    """The largest step-by-step gap between two runs' losses; raises when it exceeds
    LOSS_TOLERANCE or the step counts differ (bench_finetune checks its runners by it too)."""
    if len(a) != len(b):
        raise AssertionError(f"{name}: {len(a)} steps, {other}: {len(b)}")
    gap = max(abs(x - y) for x, y in zip(a, b, strict=True))
    if gap > LOSS_TOLERANCE:
        raise AssertionError(f"{name} vs {other}: losses differ by {gap:.3g} > {LOSS_TOLERANCE}")
    return gap


if __name__ == "__main__":
    main()
