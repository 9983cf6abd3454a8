"""Evaluation fine-tuning's step: paracl against transformers' Trainer and a bare loop, on
4 KiB pages or transparent huge pages.

Each run is a fresh process (glibc reads its tunables at start-up) that fine-tunes the
model on the task's seeded train sample (params.yaml's evaluate.max_train pairs unless
`--max-train`) for `--steps` batches (default: one epoch), as the `evaluate_finetune` stage
does: every layer, transformers' head ([CLS], or a causal LM's closing <eos>), AdamW with
linear warm-up and decay, clipping at 1.0. Runners (`--runners`):
- `paracl`: the stage's own step (paracl.parts.finetune.tuning: `TrainTokens`, `Fit.step`),
  the train split tokenized once before the epoch, losses read back once at its end;
- `trainer`: transformers' `Trainer` on the same model, pairs (paracl's encoding of a pair)
  and batch size, with its own sampler and `DataCollatorWithPadding`: what a user would
  otherwise write;
- `bare`: the floor, a plain PyTorch loop over paracl's batches in paracl's order, each
  tokenized and padded by the tokenizer before the clock starts, then forward, backward,
  clip, the same AdamW and schedule. Its losses must equal paracl's to 1e-6, step by step:
  the bench checks and reports the largest gap.

Every run reports each step's wall time and page faults, and its pairs a second from the
end of step 0 (warm-up) to the end of the last step (a Trainer step's data loading
included). The runs alternate `--repeats` times, each repeat starting with the next one;
medians are kept. `--precision fp32 bf16` runs each runner per precision.

Huge pages: fine-tuning every layer of gemma-3-270m allocates a fresh dense gradient for
its 262k-token embedding (~670 MB) every backward pass, and glibc hands such large blocks
back to the kernel when they are freed, so each step first-touches ~1.4 GB of new 4 KiB
pages (~360k page faults a step). `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc >= 2.35)
asks for transparent huge pages on those blocks instead. It changes no arithmetic: the
bench checks that paracl's losses are the same bits under both (`--pages`).

    python bench/bench_finetune.py --model google/gemma-3-270m --task jsts --steps 8 \\
        --repeats 1 --runners paracl trainer

`--tiny` swaps the model for bench/bench_training.py's tiny random BERT (2 layers, hidden
64) with `--tiny-tokenizer`'s tokenizer (the packaged all-MiniLM-L6-v2's), where a step is
almost all overhead:

    OMP_NUM_THREADS=1 python bench/bench_finetune.py --tiny --task stsb --max-train 4000 \\
        --pages 4k_pages --repeats 5 --out results/bench-finetune/tiny.json

Run it in the repository root after `dvc repro fetch` (or with `--raw-dir` at a copy of
the data): it reads params.yaml's evaluate section and the task's files.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import torch

PAGES = {"4k_pages": None, "huge_pages": "glibc.malloc.hugetlb=1"}
RUNNERS = ("paracl", "bare", "trainer")
LR = 2e-5


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class Steps:
    """Each step's wall time and page faults, and the losses, as a run records them."""

    def __init__(self) -> None:
        self.step_s: list[float] = []
        self.faults: list[int] = []
        self.rows: list[int] = []
        self.t0, self.f0 = time.perf_counter(), faults()
        self.after_warmup = self.t0, time.process_time()  # reset at the end of step 0

    def start(self) -> None:
        self.t0, self.f0 = time.perf_counter(), faults()

    def end(self, rows: int) -> None:
        self.step_s.append(time.perf_counter() - self.t0)
        self.faults.append(faults() - self.f0)
        self.rows.append(rows)
        if len(self.step_s) == 1:
            self.after_warmup = time.perf_counter(), time.process_time()

    def result(self, losses: list[float], tokenize_s: float | None = None) -> dict:
        """Pairs a second of wall time and of this process's CPU time (steadier on a shared
        machine, with one thread) from the end of step 0 to now."""
        pairs, (wall0, cpu0) = sum(self.rows[1:]), self.after_warmup
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return {"step_s": self.step_s, "faults": self.faults, "losses": losses,
                "pairs_per_s": pairs / wall if pairs else None,
                "pairs_per_cpu_s": pairs / cpu if pairs and cpu else None,
                "tokenize_s": tokenize_s}  # fmt: skip


def task_data(args):
    """The task's seeded train sample, as evaluate_finetune draws it: params.yaml's
    evaluate.max_train pairs unless --max-train says otherwise."""
    from paracl.parts.evaluation.tasks import load_task_for
    from paracl.schema import load_params
    from paracl.stages.evaluate_finetune import cap_splits

    cfg = dict(load_params()["evaluate"])
    cfg["raw_dir"] = args.raw_dir or cfg["raw_dir"]
    data = load_task_for(args.task, cfg, args.seed)
    cap_splits(data, {"train": args.max_train or cfg.get("max_train")}, args.seed)
    return data


def config(args, precision: str):
    """params.yaml's evaluate keys, with the bench's epoch, lr, batch and precision, the
    whole batch in one forward (as the other loops)."""
    from paracl.core.configs import from_section
    from paracl.parts.finetune.tuning import FinetuneConfig
    from paracl.schema import load_params

    own = {"epochs": 1, "lr": LR, "batch_size": args.batch_size, "precision": precision}
    section = {**load_params()["evaluate"], **own, "mini_batch_size": None}
    return from_section(FinetuneConfig, section)


def batches(args, n: int) -> list[list[int]]:
    """paracl's random batches of the epoch (seeded as the stage seeds them), `--steps` of them."""
    from paracl.core.batching import batch_order

    order = batch_order(n, args.batch_size, torch.Generator().manual_seed(args.seed))
    return order[: args.steps] if args.steps else order


def run_paracl(args, data, model, tokenizer, precision: str) -> dict:
    """The stage's step: the train split tokenized once, then `Fit.step` per batch."""
    from paracl.core.device import seed_everything
    from paracl.parts.finetune.tuning import TrainTokens, make_fit, task_targets

    cpu, cfg, todo = torch.device("cpu"), config(args, precision), batches(args, len(data.train))
    t0 = time.perf_counter()
    y = task_targets(data.train, data, "train")
    tokens = TrainTokens(tokenizer, data.train, y, cfg.max_seq_length)
    tokenize_s = time.perf_counter() - t0
    fit = make_fit(model, tokens, cfg, cpu, len(todo))
    seed_everything(args.seed)  # the same dropout masks as the bare loop's
    model.train()
    clock, losses = Steps(), []
    for idx in todo:
        clock.start()
        losses.append(fit.step(idx))
        clock.end(len(idx))
    return clock.result([float(x.sum()) for x in losses], tokenize_s)


def run_bare(args, data, model, tokenizer, precision: str) -> dict:
    """The floor: paracl's batches tokenized and padded by the tokenizer before the clock,
    then forward, backward, clip at 1.0, paracl's AdamW and schedule (`make_fit`)."""
    from paracl.core.device import autocast, seed_everything
    from paracl.parts.finetune.tuning import encode_rows, make_fit, task_targets

    cpu, cfg, todo = torch.device("cpu"), config(args, precision), batches(args, len(data.train))
    y = task_targets(data.train, data, "train")
    t0 = time.perf_counter()
    feats = [{**encode_rows(tokenizer, data.train, idx, cfg.max_seq_length), "labels": y[idx]}
             for idx in todo]  # fmt: skip
    tokenize_s = time.perf_counter() - t0
    fit = make_fit(model, None, cfg, cpu, len(todo))  # its optimizer and schedule only
    seed_everything(args.seed)
    model.train()
    clock, losses = Steps(), []
    for idx, batch in zip(todo, feats, strict=True):
        clock.start()
        with autocast(cpu, precision):
            loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(fit.params, 1.0)
        fit.optimizer.step()
        fit.scheduler.step()
        fit.optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        clock.end(len(idx))
    return clock.result([float(x) for x in losses], tokenize_s)


def run_trainer(args, data, model, tokenizer, precision: str) -> dict:
    """transformers' Trainer on the same pairs (paracl's encoding of a pair, unpadded)."""
    from datasets import Dataset
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments

    from paracl.core.device import autocast_dtype
    from paracl.parts.finetune.tuning import TrainTokens, task_targets

    tokens = TrainTokens(tokenizer, data.train, task_targets(data.train, data, "train"), 128)
    columns = {key: [row[k].tolist() for row in tokens.rows] for k, key in enumerate(tokens.keys)}
    train = Dataset.from_dict({**columns, "labels": tokens.targets.tolist()})
    dtype, clock = autocast_dtype(torch.device("cpu"), precision), Steps()
    rows = iter(len(b) for b in batches(args, len(data.train)))  # the same batch sizes

    class Clock(TrainerCallback):
        def on_step_begin(self, *_, **__):
            clock.start()

        def on_step_end(self, *_, **__):
            clock.end(next(rows, args.batch_size))

    with tempfile.TemporaryDirectory() as tmp:
        targs = TrainingArguments(
            output_dir=tmp, per_device_train_batch_size=args.batch_size,
            max_steps=args.steps or -1, num_train_epochs=1, learning_rate=LR,
            weight_decay=0.01, warmup_steps=0.1, max_grad_norm=1.0, seed=args.seed,
            report_to=[], save_strategy="no", logging_strategy="no", disable_tqdm=True,
            use_cpu=True, bf16=dtype == torch.bfloat16,
        )  # fmt: skip
        Trainer(model=model, args=targs, train_dataset=train, callbacks=[Clock()],
                data_collator=DataCollatorWithPadding(tokenizer)).train()  # fmt: skip
    return clock.result([])


def child(args) -> None:
    """One runner in this process; prints its JSON."""
    from transformers import AutoTokenizer

    from paracl.core.models import resolve_model
    from paracl.parts.finetune.tuning import task_model, trainable

    path = args.model_dir or resolve_model(args.model).path
    data = task_data(args)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model, _ = task_model(path, tokenizer, data.task, "last_token")
    trainable(model, None)
    run = {"paracl": run_paracl, "bare": run_bare, "trainer": run_trainer}[args.child]
    print(json.dumps(run(args, data, model, tokenizer, args.child_precision)))


def spawn(args, name: str, runner: str, pages: str, precision: str, model_dir) -> dict:
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if PAGES[pages]:
        env["GLIBC_TUNABLES"] = PAGES[pages]
    extra = ["--model-dir", str(model_dir)] if model_dir else []
    cmd = [sys.executable, __file__, *sys.argv[1:], "--child", runner,
           "--child-precision", precision, *extra]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan(args) -> dict[str, tuple[str, str, str]]:
    """Run name -> (runner, pages, precision): `paracl`, `paracl_huge_pages@bf16`, ..."""
    out = {}
    for prec in args.precision:
        for pages in args.pages:
            for runner in args.runners:
                name = runner + (f"_{pages}" if len(args.pages) > 1 else "")
                out[name + (f"@{prec}" if len(args.precision) > 1 else "")] = (runner, pages, prec)
    return out


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="google/gemma-3-270m")
    parser.add_argument("--tiny", action="store_true", help="a tiny random BERT instead")
    parser.add_argument("--tiny-tokenizer", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--task", default="jsts")
    parser.add_argument("--raw-dir", help="default: params.yaml evaluate.raw_dir")
    parser.add_argument("--steps", type=int, help="batches a run (default: one epoch)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-train", type=int, help="default: params.yaml evaluate.max_train")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--runners", nargs="+", choices=RUNNERS, default=list(RUNNERS))
    parser.add_argument("--pages", nargs="+", choices=list(PAGES), default=list(PAGES))
    parser.add_argument("--precision", nargs="+", choices=("fp32", "bf16", "auto"),
                        default=["fp32"], help="one run of each runner per precision")  # fmt: skip
    parser.add_argument("--out", type=Path, help="also write the JSON here (atomically)")
    parser.add_argument("--child", choices=RUNNERS, help=argparse.SUPPRESS)
    parser.add_argument("--child-precision", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main() -> None:
    args = parse()
    if args.child:
        return child(args)
    started = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = tiny_model(args, Path(tmp)) if args.tiny else None
        names = plan(args)
        runs: dict[str, list[dict]] = {n: [] for n in names}
        order = list(names)
        for rep in range(args.repeats):  # alternating; each repeat starts with the next run
            k = rep % len(order)
            for name in order[k:] + order[:k]:
                runs[name].append(spawn(args, name, *names[name], model_dir))
                print(f"repeat {rep} {name} done", file=sys.stderr, flush=True)
    result = report(args, runs, (started, os.getloadavg()[0]))
    print(json.dumps(result, indent=2))
    if args.out:
        write_out(result, args.out)


def write_out(result: dict, out: Path) -> None:
    """The JSON at `out`, and beside it the measured.json that `paracl report` captions a
    table with (date, machine, command)."""
    from paracl.core.io import write_json

    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(result, out)
    low, high = result["load_average"]
    machine = (f"{result['cpu']}, {result['threads']} torch thread(s), "
               f"load average {low:.1f}–{high:.1f}")  # fmt: skip
    measured = {"date": result["date"], "machine": machine, "command": result["command"]}
    write_json(measured, out.parent / "measured.json")


def tiny_model(args, out: Path) -> str:
    """bench_training's tiny model (one place): a random BERT of 2 layers, hidden 64, with
    `--tiny-tokenizer`'s tokenizer, so that pairs are as many tokens as a real model sees."""
    from paracl.core.models import resolve_model

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_training import tiny_bert

    return tiny_bert(str(resolve_model(args.tiny_tokenizer).path), out / "tiny")


def report(args, runs: dict[str, list[dict]], load: tuple[float, float]) -> dict:
    """The medians, the speed-ups and the loss checks."""
    from paracl.core.device import cpu_model, precision_record

    cpu = torch.device("cpu")
    result = {
        "date": date.today().isoformat(), "cpu": cpu_model(),
        "load_average": [round(x, 2) for x in load],
        "command": "python bench/bench_finetune.py " + " ".join(sys.argv[1:]),
        "model": f"tiny random BERT (2 layers, hidden 64; {args.tiny_tokenizer}'s tokenizer)"
        if args.tiny else args.model,
        "task": args.task, "steps": args.steps, "batch_size": args.batch_size,
        "max_train": args.max_train, "repeats": args.repeats,
        "threads": torch.get_num_threads(),
        "precision": {p: precision_record(cpu, p) for p in args.precision},
    }  # fmt: skip
    for name, reps in runs.items():
        result[f"{name}_step_s"] = round(
            statistics.median(s for r in reps for s in r["step_s"][1:]), 4
        )
        result[f"{name}_faults_per_step"] = int(
            statistics.median(f for r in reps for f in r["faults"][1:])
        )
        for key in ("pairs_per_s", "pairs_per_cpu_s"):
            rates = [r[key] for r in reps if r.get(key)]
            result[f"{name}_{key}"] = round(statistics.median(rates), 1) if rates else None
    return result | speedups(result, list(runs)) | loss_check(runs)


def speedups(result: dict, names: list[str]) -> dict[str, float]:
    """paracl over the bare loop and over the Trainer (pairs a second of wall time, and as
    `..._cpu` of CPU time); each runner on huge pages over 4 KiB pages and in each precision
    over fp32 (seconds a step)."""
    out = {}
    for name in names:
        base, _, prec = name.partition("@")
        tag = f"@{prec}" if prec else ""
        for ref in ("bare", "trainer") if base.startswith("paracl") else ():
            other = base.replace("paracl", ref, 1) + tag
            for key, suffix in (("pairs_per_s", ""), ("pairs_per_cpu_s", "_cpu")):
                if other in names and result.get(f"{other}_{key}"):
                    out[f"{base}_vs_{ref}{tag}{suffix}"] = round(
                        result[f"{name}_{key}"] / result[f"{other}_{key}"], 3
                    )
        if base.endswith("_huge_pages"):
            small = base.replace("_huge_pages", "_4k_pages") + tag
            runner = base.removesuffix("_huge_pages")
            out[f"{runner}_speedup_huge_pages{tag}"] = round(
                result[f"{small}_step_s"] / result[f"{name}_step_s"], 3
            )
        if prec and prec != "fp32" and f"{base}@fp32" in names:
            out[f"{base}_{prec}_vs_fp32"] = round(
                result[f"{base}@fp32_step_s"] / result[f"{name}_step_s"], 3
            )
    return out


def loss_check(runs: dict[str, list[dict]]) -> dict:
    """The largest step-by-step loss gap of the bare loop against paracl, per pages and
    precision (bench_training.loss_gap: raises above its tolerance), and whether
    paracl's losses are the same bits on 4 KiB and huge pages."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_training import loss_gap

    out = {}
    for name, bare in runs.items():
        other = name.replace("bare", "paracl", 1)
        if not name.startswith("bare") or other not in runs:
            continue
        out[f"max_loss_gap_{name}_vs_{other}"] = loss_gap(
            name, bare[0]["losses"], other, runs[other][0]["losses"]
        )
    for name, reps in runs.items():
        if name.startswith("paracl_huge_pages"):
            small = runs[name.replace("_huge_pages", "_4k_pages")]
            same = all(a["losses"] == b["losses"] for a, b in zip(small, reps, strict=True))
            out["paracl_losses_identical" + "".join(name.partition("@")[1:])] = same
    return out


if __name__ == "__main__":
    main()
