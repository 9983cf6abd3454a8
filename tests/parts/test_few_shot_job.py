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


def test_a_job_left_out_by_finetune_task_methods_records_not_run(tiny_bert, tmp_path, monkeypatch):
    """evaluate.finetune_task_methods (paper-en: QQP for EBSIM's rows): another method's
    job writes "not run" at once, without fine-tuning; a restriction naming a task or a
    method that is not fine-tuned stops the params with the key."""
    import json
    from pathlib import Path

    import pytest
    from stage_helpers import REPO, run_main

    from paracl import presets
    from paracl.core.params import ParamsError
    from paracl.schema import load_params
    from paracl.stages.evaluate_finetune import finetune_runs

    (tmp_path / "models/encoders").mkdir(parents=True)
    (tmp_path / "models/encoders/none").symlink_to(tiny_bert)
    (tmp_path / "metrics/train").mkdir(parents=True)
    (tmp_path / "metrics/train/none.json").write_text('{"model": {"id": "tiny/bert"}}')
    params = load_params(REPO / "params.yaml")
    restricted = {"finetune_tasks": ["stsb", "mrpc"], "finetune_methods": ["none", "ppdb"],
                  "finetune_task_methods": {"mrpc": ["ppdb"]}}  # fmt: skip
    params["evaluate"] |= {"raw_dir": str(make_raw(tmp_path / "raw")), **restricted}
    params["evaluate"]["finetune_runs"] = finetune_runs(params)
    monkeypatch.chdir(tmp_path)
    argv = ("none", "mrpc", "models/encoders/none", "metrics/train/none.json", "out.json")
    run_main("evaluate_finetune", params, *argv)
    out = json.loads(Path("out.json").read_text())
    assert out["not_run"] and out["score"] is None and "mrpc for ppdb" in out["skipped"]
    assert "runs" not in out  # nothing was fine-tuned
    copy = tmp_path / "params.yaml"
    copy.write_text((REPO / "params.yaml").read_text())
    for bad, key in (({"qqp": ["none"]}, "finetune_task_methods.qqp': not a task"),
                     ({"mrpc": ["ebsim"]}, "'ebsim' is not a fine-tuned method")):  # fmt: skip
        with pytest.raises(ParamsError, match=key):
            presets.apply_preset({"evaluate": {**restricted, "finetune_task_methods": bad}}, copy)
