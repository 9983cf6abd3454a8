"""presets/ebsim-en.yaml (EBSIM's Table 2 and Figure 2 offline): it expands on top of
effect-en into the jobs its header names, each job in exactly one of its parts, on the
titled English corpus; and the paper presets give EBSIM's rows Table 2's task set."""

from __future__ import annotations

import fnmatch
import re
import shutil
from pathlib import Path

import yaml
from stage_helpers import expand_stages

from paracl import presets
from paracl.parts.evaluation.tasks import FEW_SHOT, get_task
from paracl.schema import load_params

REPO = Path(__file__).resolve().parents[2]
RUNS = ["none", *(f"{m}_s{s}" for m in ("ebsim", "ebsim_no_aa") for s in (1, 2, 3))]
TASKS = ["mrpc", "stsb", "stsb_n125", "stsb_n250", "stsb_n500"]


def _stages(tmp_path: Path, *names: str) -> tuple[dict, dict]:
    """(params, the concrete dvc stages) after applying `names` to a copy of params.yaml."""
    params = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", params)
    for name in names:
        presets.apply_preset(presets.load_preset(name, REPO / "presets"), params)
    loaded = load_params(params)
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    return loaded, expand_stages(pipeline, loaded)


def _parts() -> list[list[str]]:
    """The `dvc repro --glob` patterns of each part the preset's header names."""
    header = (REPO / "presets" / "ebsim-en.yaml").read_text().split("\n# ")
    lines = [line for line in header if line.lstrip("# ").startswith("dvc repro --glob")]
    return [re.findall(r"'([^']+)'", line) for line in lines]


def test_ebsim_en_expands_into_table_two_and_figure_two_jobs(tmp_path):
    params, stages = _stages(tmp_path, "effect-en", "ebsim-en")
    assert params["prepare_corpus"]["input"]["en"]["format"] == "wiki_lines"
    assert "ebsim_retrieve@sentences" in stages
    tuned = {n.split("@")[1] for n in stages if n.startswith("evaluate_finetune@")}
    assert tuned == {f"{r}-{t}" for r in RUNS for t in TASKS}
    assert not [n for n in stages if n.startswith("evaluate@")]  # no unsupervised column
    sizes = {get_task(t).train_cap for t in TASKS if t in FEW_SHOT} | {
        params["evaluate"]["max_train"]
    }
    assert len(sizes) >= 4 and params["evaluate"]["baseline_seeds"] == [1, 2, 3]
    assert params["train_contrastive"]["seeds"] == [1, 2, 3]
    ebsim = params["train_contrastive"]["methods"]
    assert (ebsim["ebsim"]["aspects"], ebsim["ebsim_no_aa"]["aspects"]) == (["ra", "aa"], ["ra"])


def test_each_job_is_in_exactly_one_part_of_the_header(tmp_path):
    _, stages = _stages(tmp_path, "effect-en", "ebsim-en")
    jobs = [n for n in stages if n.startswith("evaluate_finetune@")]
    parts = _parts()
    assert len(parts) == 4
    for job in jobs:
        found = [i for i, globs in enumerate(parts) if any(fnmatch.fnmatch(job, g) for g in globs)]
        assert len(found) == 1, (job, found)


def test_the_header_says_purpose_time_and_that_it_is_an_estimate():
    purpose, time = presets.describe(REPO / "presets" / "ebsim-en.yaml")
    assert "Table 2" in purpose and "Figure 2" in purpose
    assert "estimated" in time and "not yet measured" in time
    header = (REPO / "presets" / "ebsim-en.yaml").read_text()
    assert "results/ebsim-en/eval/" in header and "stages/summary.py" in header


def test_paper_en_gives_ebsim_rows_table_two_and_qqp_is_registered_with_its_checksum(tmp_path):
    params, stages = _stages(tmp_path, "paper-en")
    ev = params["evaluate"]
    assert {"mrpc", "qqp", "stsb"} <= set(ev["finetune_tasks"])
    rows = ["none", "ebsim", "ebsim_no_aa"]  # the round-trip paper's STILTs rows: §6's recipe
    only = ev["finetune_task_methods"]
    assert only["mrpc"] == only["qqp"] == rows
    glue = ("cola", "sst2", "mrpc_stilts", "qqp_stilts", "stsb_stilts", "mnli", "qnli", "rte")
    assert {t: m for t, m in only.items() if t not in ("mrpc", "qqp")} == {
        t: ["bert_large_none"] for t in glue}  # fmt: skip
    assert "evaluate_finetune@ebsim_s5-qqp" in stages and "qqp" in params["fetch"]["sources"]
    sources = (REPO / "src/paracl/stages/fetch/sources/sources.tsv").read_text().splitlines()
    [qqp] = [line.split("\t") for line in sources if line.startswith("qqp\t")]
    assert qqp[2].startswith("https://") and re.fullmatch(r"[0-9a-f]{64}", qqp[3])
