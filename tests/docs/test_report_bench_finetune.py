"""The `@bench-finetune` report block: bench/bench_finetune.py --tiny's JSON as a table."""

from __future__ import annotations

from paracl import report
from paracl.core.io import write_json


def test_the_block_renders_the_runners_ratios_and_caption(tmp_path):
    directory = tmp_path / report.BENCH_FINETUNE
    result = {
        "model": "tiny random BERT", "task": "stsb", "max_train": 4000,
        "batch_size": 32, "threads": 1, "repeats": 5, "paracl_pairs_per_s": 2345.6,
        "paracl_step_s": 0.0136, "bare_pairs_per_s": 2400.0, "bare_step_s": 0.0133,
        "trainer_pairs_per_s": 1500.0, "trainer_step_s": 0.02, "paracl_vs_bare": 0.977,
        "paracl_vs_trainer": 1.564, "max_loss_gap_bare_vs_paracl": 0.0,
        "paracl_vs_bare_cpu": 1.001, "paracl_vs_trainer_cpu": 1.7,
    }  # fmt: skip
    write_json(result, directory / "tiny.json")
    write_json({"date": "2026-12-05", "machine": "a CPU", "command": "python x"},
               directory / "measured.json")  # fmt: skip
    text = report.render_block(tmp_path, tmp_path / "docs" / "b.md", "@bench-finetune", "all")
    assert (
        "**0.98×** the bare loop and **1.56×** the `Trainer` (by CPU time 1.00× and 1.70×)" in text
    )
    assert "bit for bit" in text and "stsb (4000 pairs)" in text
    rows = [" ".join(line.split()) for line in text.splitlines() if line.startswith("|")]
    assert "| paracl | 2,346 | 13.6 |" in rows
    assert "| transformers `Trainer` | 1,500 | 20.0 |" in rows
    assert "Measured 2026-12-05 on a CPU by `python x`" in text
    assert "results/bench-finetune/tiny.json" in text
