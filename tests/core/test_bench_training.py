"""bench/bench_training.py's bare loop is the floor paracl's trainer is timed against: on the
same batches it must compute the same losses (the bench checks it on every run; this keeps
the check, and the trainer's token cache behind it, from rotting)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.usefixtures("one_thread")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_training.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_training", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_bare_loop_and_paracl_compute_the_same_losses(tiny_bert, precision):
    bench = _bench()
    args = SimpleNamespace(seq_len=16, dropout=None, batch_size=8)
    pairs = bench.make_pairs(40)
    runs = {
        "paracl": [bench.run_paracl(str(tiny_bert), pairs, args, precision)],
        "bare": [bench.run_bare(str(tiny_bert), pairs, args, precision)],
    }
    assert len(runs["bare"][0].losses) == 5
    assert runs["bare"][0].losses == runs["paracl"][0].losses  # bit for bit
    assert bench.loss_check(runs) == {"max_loss_gap_bare_vs_paracl": 0.0}
    runs["bare"][0].losses[2] += 1e-3
    with pytest.raises(AssertionError, match="losses differ"):
        bench.loss_check(runs)
