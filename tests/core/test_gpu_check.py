"""bench/gpu_check.py cannot rot: its --quick mode (tiny shapes on CPU, seconds) runs every
measurement the GPU run makes (warm-up apart, contrastive steps per shape, batch and
precision, a fine-tuning step, a batched generation), and its peak table names the GPUs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("one_thread")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_mode_measures_every_row(tmp_path):
    out = tmp_path / "check.json"
    report = _load().main(["--quick", "--steps", "1", "--warmup", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report, default=str))
    rows = report["part2"]
    assert set(rows) == {f"{a}/batch4/{p}" for a in ("tiny-bert", "tiny-llama")
                         for p in ("fp32", "bf16")}  # fmt: skip
    for row in rows.values():
        assert row["ok"], row
        assert row["warmup_steps"] == 1 and row["warmup_s"] > 0  # reported apart
        assert row["steps"] == 1 and row["tokens_per_s"] > 0 and row["moved"] > 0
        assert row["share_of_bf16_peak"] is None  # no peak known for a CPU
    for section in ("finetune_step", "generation"):
        assert len(report[section]) == 2
        assert all(r["ok"] and r["warmup_s"] > 0 for r in report[section].values())
    assert all(r["generated_tokens"] > 0 for r in report["generation"].values())


def test_the_peak_table_names_the_lent_gpus():
    peak = _load().peak_flops
    assert peak("NVIDIA H200") == peak("NVIDIA H100 80GB HBM3") == pytest.approx(989.4e12)
    assert peak("NVIDIA H100 PCIe") == pytest.approx(756.5e12)
    assert peak("NVIDIA A100-SXM4-80GB") == pytest.approx(312e12)
    assert peak("cpu") is None
