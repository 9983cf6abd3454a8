"""bench/bench_finetune.py's bare loop is the floor evaluation fine-tuning's step is timed
against: on the same batches it must compute the same losses as paracl's step (the bench
checks it on every run; this keeps the check, and the step's token cache, from rotting),
and its report names the runs, the speed-ups and the CPU."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from test_eval_e2e import make_raw
from transformers import AutoTokenizer

from paracl.core.device import cpu_model
from paracl.parts.evaluation.tasks import load_task
from paracl.parts.finetune.tuning import task_model, trainable

pytestmark = pytest.mark.usefixtures("one_thread")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_finetune.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_finetune", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return load_task("stsb", make_raw(tmp_path_factory.mktemp("raw")), seed=0)


def _run(bench, runner: str, path, data, precision: str) -> dict:
    args = SimpleNamespace(batch_size=4, seed=42, steps=None)
    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model, _ = task_model(path, tokenizer, data.task, "last_token")
    trainable(model, None)
    return getattr(bench, f"run_{runner}")(args, data, model, tokenizer, precision)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_bare_loop_and_paracl_compute_the_same_losses(tiny_bert, data, precision):
    bench = _bench()
    runs = {name: [_run(bench, name, tiny_bert, data, precision)] for name in ("paracl", "bare")}
    assert len(runs["bare"][0]["losses"]) == -(-len(data.train) // 4) > 2
    assert runs["bare"][0]["losses"] == runs["paracl"][0]["losses"]  # bit for bit
    assert runs["paracl"][0]["pairs_per_s"] > 0 and runs["paracl"][0]["tokenize_s"] > 0
    assert bench.loss_check(runs) == {"max_loss_gap_bare_vs_paracl": 0.0}
    runs["bare"][0]["losses"][2] += 1e-3
    with pytest.raises(AssertionError, match="losses differ"):
        bench.loss_check(runs)


def test_the_trainer_runner_times_its_steps(tiny_bert, data):
    bench = _bench()
    run = _run(bench, "trainer", tiny_bert, data, "fp32")
    assert len(run["step_s"]) == -(-len(data.train) // 4) and run["pairs_per_s"] > 0


def test_the_report_names_runs_speedups_and_the_cpu():
    bench = _bench()
    args = bench.parse(["--tiny", "--pages", "4k_pages", "huge_pages", "--runners", "paracl",
                        "bare", "--precision", "fp32", "bf16"])  # fmt: skip
    names = bench.plan(args)
    assert names["paracl_huge_pages@bf16"] == ("paracl", "huge_pages", "bf16")
    assert len(names) == 8

    def run(rate: float) -> dict:
        return {"step_s": [9.0, 1 / rate], "faults": [5, 3], "losses": [0.5],
                "pairs_per_s": rate, "tokenize_s": 0.1}  # fmt: skip

    rates = {"paracl": 90.0, "bare": 100.0}
    runs = {n: [run(rates[r] * (2 if pages == "huge_pages" else 1) * (2 if p == "bf16" else 1))]
            for n, (r, pages, p) in names.items()}  # fmt: skip
    result = bench.report(args, runs, (1.0, 1.5))
    assert result["paracl_4k_pages_vs_bare@fp32"] == 0.9
    assert result["paracl_speedup_huge_pages@bf16"] == 2.0
    assert result["bare_4k_pages_bf16_vs_fp32"] == 2.0
    assert result["paracl_losses_identical@fp32"] is True
    assert result["cpu"] == cpu_model() and result["load_average"] == [1.0, 1.5]
    assert result["paracl_4k_pages@fp32_pairs_per_s"] == 90.0
