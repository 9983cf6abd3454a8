"""Fine-tuning step time on CPU: glibc's malloc on 4 KiB pages vs transparent huge pages.

Fine-tuning every layer of gemma-3-270m allocates a fresh dense gradient for its 262k-token
embedding (~670 MB) every backward pass, and glibc hands such large blocks back to the kernel
when they are freed, so each step first-touches ~1.4 GB of new 4 KiB pages (~360k
page faults a step). `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc >= 2.35) asks for
transparent huge pages on those blocks instead. It changes no arithmetic: the bench checks
that paracl's losses are the same bits under both.

Each runner is a fresh process (glibc reads its tunables at start-up) that fine-tunes the
model on the task's seeded 1,000-pair train sample for `--steps` batches, as the
`evaluate_finetune` stage does (every layer, the head on the closing <eos>, fp32), and
reports each step's wall time and page faults. paracl runs beside transformers' `Trainer`
(what a user would otherwise write) on the same model, pairs and batch size. Step 0
(warm-up) is left out; the runs alternate `--repeats` times and the median step is kept.

    python bench/bench_finetune.py --model google/gemma-3-270m --task jsts --steps 6

Run it in the repository root after `dvc repro fetch`: it reads params.yaml's evaluate
section and the task's files under its raw_dir.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

HUGE = "glibc.malloc.hugetlb=1"
ENVS = {"4k_pages": None, "huge_pages": HUGE}


def faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def task_data(args):
    """The task's seeded train sample, as evaluate_finetune draws it: params.yaml's
    evaluate.max_train pairs unless --max-train says otherwise."""
    from paracl.core.params import load_params
    from paracl.parts.evaluation.tasks import load_task_for
    from paracl.stages.evaluate_finetune import _cap

    cfg = load_params()["evaluate"]
    data = load_task_for(args.task, cfg, args.seed)
    _cap(data, {"train": args.max_train or cfg.get("max_train")}, args.seed)
    return data


def run_paracl(args, data, model, tokenizer) -> dict:
    """paracl's fine-tuning step (paracl.parts.finetune.tuning), `--steps` batches."""
    from paracl.core.batching import batch_order
    from paracl.core.device import adamw, grad_scaler, optimizer_step
    from paracl.parts.finetune.tuning import FinetuneConfig, _targets, chunks, train_step

    cpu = torch.device("cpu")
    cfg = FinetuneConfig(epochs=1, lr=2e-5, batch_size=args.batch_size, precision="fp32")
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer, scaler = adamw(params, lr=cfg.lr), grad_scaler(cpu, precision="fp32")
    targets = _targets(data.train, data, "train")
    gen = torch.Generator().manual_seed(args.seed)
    times, page_faults, losses = [], [], []
    for idx in batch_order(len(data.train), cfg.batch_size, gen, None)[: args.steps]:
        f0, t0 = faults(), time.perf_counter()
        losses.append(train_step(model, tokenizer, data, chunks(idx, None, None), targets,
                                 cfg, cpu, scaler))  # fmt: skip
        optimizer_step(optimizer, scaler, params, max_norm=1.0)
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
        page_faults.append(faults() - f0)
    return {"step_s": times, "faults": page_faults, "losses": losses}


def run_trainer(args, data, model, tokenizer) -> dict:
    """transformers' Trainer on the same pairs (paracl's `s1 <eos> s2 <eos>` encoding)."""
    import tempfile

    from datasets import Dataset
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments

    from paracl.parts.finetune.tuning import _encode, _targets

    enc = _encode(tokenizer, data.train, list(range(len(data.train))), 128)
    rows = [
        ids[m.bool()].tolist()
        for ids, m in zip(enc["input_ids"], enc["attention_mask"], strict=True)
    ]
    labels = _targets(data.train, data, "train").tolist()
    train = Dataset.from_dict({"input_ids": rows, "labels": labels})
    times, page_faults = [], []

    class Clock(TrainerCallback):
        def on_step_begin(self, *_, **__):
            self.t0, self.f0 = time.perf_counter(), faults()

        def on_step_end(self, *_, **__):
            times.append(time.perf_counter() - self.t0)
            page_faults.append(faults() - self.f0)

    with tempfile.TemporaryDirectory() as tmp:
        targs = TrainingArguments(
            output_dir=tmp, per_device_train_batch_size=args.batch_size, max_steps=args.steps,
            learning_rate=2e-5, max_grad_norm=1.0, seed=args.seed, report_to=[],
            save_strategy="no", logging_strategy="no", disable_tqdm=True, use_cpu=True,
        )  # fmt: skip
        Trainer(model=model, args=targs, train_dataset=train, callbacks=[Clock()],
                data_collator=DataCollatorWithPadding(tokenizer)).train()  # fmt: skip
    return {"step_s": times, "faults": page_faults, "losses": []}


def child(args) -> None:
    """One runner in this process; prints its JSON."""
    from transformers import AutoTokenizer

    from paracl.core.models import resolve_model
    from paracl.parts.finetune.tuning import task_model, trainable

    path = resolve_model(args.model).path
    data = task_data(args)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model, _ = task_model(path, tokenizer, data.task, "last_token")
    trainable(model, None)
    run = run_paracl if args.child == "paracl" else run_trainer
    print(json.dumps(run(args, data, model, tokenizer)))


def spawn(args, runner: str, tunable: str | None) -> dict:
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if tunable:
        env["GLIBC_TUNABLES"] = tunable
    cmd = [sys.executable, __file__, "--child", runner, *sys.argv[1:]]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="google/gemma-3-270m")
    parser.add_argument("--task", default="jsts")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-train", type=int, help="default: params.yaml evaluate.max_train")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", choices=("paracl", "trainer"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    names = [(r, e) for r in ("paracl", "trainer") for e in ENVS]
    runs: dict[tuple, list[dict]] = {n: [] for n in names}
    for rep in range(args.repeats):  # alternating; each repeat starts with the next runner
        k = rep % len(names)
        for runner, env in names[k:] + names[:k]:
            runs[(runner, env)].append(spawn(args, runner, ENVS[env]))
            print(f"repeat {rep} {runner} {env} done", file=sys.stderr, flush=True)
    result = {"model": args.model, "task": args.task, "steps": args.steps,
              "batch_size": args.batch_size, "threads": torch.get_num_threads()}  # fmt: skip
    for (runner, env), reps in runs.items():
        steps = [s for r in reps for s in r["step_s"][1:]]  # step 0 warms up
        result[f"{runner}_{env}_step_s"] = round(statistics.median(steps), 2)
        result[f"{runner}_{env}_faults_per_step"] = int(
            statistics.median(f for r in reps for f in r["faults"][1:])
        )
    for runner in ("paracl", "trainer"):
        result[f"{runner}_speedup_huge_pages"] = round(
            result[f"{runner}_4k_pages_step_s"] / result[f"{runner}_huge_pages_step_s"], 3
        )
    same = [
        a["losses"] == b["losses"]
        for a, b in zip(*(runs[("paracl", e)] for e in ENVS), strict=True)
    ]
    result["paracl_losses_identical"] = all(same)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
