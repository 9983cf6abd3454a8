"""A wrong evaluation (or loss) name fails when params load, naming the known names,
read from the code's own registries."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from paracl.core.params import ParamsError
from paracl.parts.evaluation import tasks
from paracl.schema import load_params, validate_all
from paracl.stages.evaluate import job_names
from paracl.stages.train_contrastive import loss_names

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def params() -> dict:
    return load_params(REPO / "params.yaml")


def _with(params: dict, section: str, **values) -> dict:
    out = copy.deepcopy(params)
    out[section].update(values)
    return out


def test_a_misspelt_task_fails_when_params_load(tmp_path):
    text = (REPO / "params.yaml").read_text()
    assert "tasks: [unsup_sts_en, pi_en]" in text
    (tmp_path / "params.yaml").write_text(
        text.replace("[unsup_sts_en, pi_en]", "[unsup_sts_en, stbs]")
    )
    with pytest.raises(ParamsError) as err:
        load_params(tmp_path / "params.yaml")
    msg = str(err.value)
    assert "'evaluate.tasks[1]': unknown name 'stbs'" in msg and "\n" not in msg
    assert "stsb" in msg and "pi_ja" in msg and "jsts" in msg  # the known names


def test_task_names_come_from_the_registry(params, monkeypatch):
    assert job_names() == tasks.JOBS and set(tasks.TASKS) < set(tasks.JOBS)
    validate_all(_with(params, "evaluate", tasks=list(tasks.JOBS)))  # every job passes
    monkeypatch.setattr(tasks, "JOBS", (*tasks.JOBS, "brand_new"))  # a job added there
    validate_all(_with(params, "evaluate", tasks=["brand_new"]))


def test_a_misspelt_loss_fails_when_params_load(params):
    bad = copy.deepcopy(params)
    bad["train_contrastive"]["methods"]["none"]["loss"] = "infonse"
    with pytest.raises(ParamsError, match=r"methods.none.loss': unknown name 'infonse' "
                       r"\(known: none, infonce, jcse, ams, ebsim"):  # fmt: skip
        validate_all(bad)


def test_loss_names_are_the_loss_registry():
    from paracl.parts.losses import LOSSES

    assert loss_names() == ["none", *LOSSES]


def test_missing_splits_is_resplit_or_fail(params):
    assert params["evaluate"]["missing_splits"] == "resplit"
    with pytest.raises(ParamsError, match=r"'evaluate.missing_splits' must be one of"):
        validate_all(_with(params, "evaluate", missing_splits="skip"))


def test_paper_presets_score_whole_sets_on_the_papers_splits():
    import yaml

    for name in ("paper-en", "paper-ja"):
        ev = yaml.safe_load((REPO / "presets" / f"{name}.yaml").read_text())["evaluate"]
        assert ev["max_eval_pairs"] is None and ev["missing_splits"] == "fail", name
