"""A few-shot job (tasks.FEW_SHOT, EBSIM's Figure 2): the task on a seeded train sample of
the variant's own size, whatever evaluate.max_train says, scored on the task's own dev and
test pairs."""

from __future__ import annotations

from test_eval_e2e import CFG, RUN, make_raw

from paracl.parts.evaluation import tasks
from paracl.stages import evaluate_finetune
from paracl.stages.evaluate_finetune import run_finetune_job


def test_a_few_shot_job_samples_its_own_train_size(tiny_bert, tmp_path, monkeypatch):
    raw = make_raw(tmp_path / "raw")
    small = tasks.few_shot(tasks.get_task("stsb"), 8)  # the registered sizes exceed the toy's
    monkeypatch.setitem(tasks.FEW_SHOT, small.name, small)
    monkeypatch.setattr(evaluate_finetune, "FINETUNE_JOBS", (*tasks.FINETUNE_JOBS, small.name))
    cfg = {**CFG, "raw_dir": raw, "seeds": [1], "epochs": 1, "max_train": 16, "max_test": 10}
    few = run_finetune_job("none", "stsb_n8", tiny_bert, cfg, RUN)
    full = run_finetune_job("none", "stsb", tiny_bert, cfg, RUN)
    assert (few["task"], few["sizes"]["train"], full["sizes"]["train"]) == ("stsb_n8", 8, 16)
    assert "capped to a seeded sample of 8" in few["provenance"]["train"]
    for split in ("dev", "test"):  # the same held-out pairs as the task's own job
        assert few["samples"].get(split) == full["samples"].get(split)
    assert few["title"] == "STS-B (8 train)"
