"""EBSIM's own tables (paracl.parts.evaluation.ebsim_tables) in the summary: Table 2's
layout and claims, Figure 2's table and plot, on a small in-test set of job results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from paracl.parts.evaluation import ebsim_tables as et
from paracl.parts.evaluation.tasks import FEW_SHOT, FINETUNE_JOBS, get_task
from paracl.stages.summary import build_summary, to_markdown

METRICS = {"mrpc": ("f1", "accuracy"), "stsb": ("spearman", "pearson")}
GROUPS = {
    "none": ["none"],
    "ebsim": ["ebsim_s1", "ebsim_s2", "ebsim_s3"],
    "ebsim_no_aa": ["ebsim_no_aa_s1", "ebsim_no_aa_s2", "ebsim_no_aa_s3"],
}
LIFT = {"none": 0.0, "ebsim": 6.0, "ebsim_no_aa": 2.0}  # each row's offset over the base


def job(task: str, method: str, size: int, values: list[float], positives: int = 150) -> dict:
    """A fine-tuning job's JSON as evaluate_finetune writes it (the keys the summary reads):
    one run per fine-tuning seed, the second metric 1 point below the first; MRPC's test
    sample of 500 pairs holds `positives` paraphrases."""
    base = task.split("_n")[0]
    first, second = METRICS[base]
    runs = [{"seed": i + 1, "test": {first: v, second: v - 1}} for i, v in enumerate(values)]
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return {
        "kind": "finetune", "task": task, "method": method, "metric": first,
        "score": float(np.mean(values)), "score_std": sd, "dev_score": 50.0,
        "test": {"mean": float(np.mean(values)), "std": sd, "n": len(values)},
        "runs": runs, "sizes": {"train": size, "dev": 250, "test": 500},
        "official_split": True, "encoder": {"base_model": {"id": "tiny"}},
        "samples": {"test": {"strata": {"0": {"pairs": 500 - positives}, "1": {"pairs": positives}}}
                    if base == "mrpc" else {"strata": {"main-news": {"pairs": 500}}}},
    }  # fmt: skip


def results(tasks: dict[str, int]) -> dict:
    """{run: {task: job}}: the base fine-tuned with 3 seeds, each method's 3 runs one seed
    each; scores grow with the train size, each row LIFT above the base."""
    out: dict = {}
    for row, runs in GROUPS.items():
        for i, run in enumerate(runs):
            for task, size in tasks.items():
                level = 40 + 10 * np.log2(size / 250) + LIFT[row]
                values = [level + d for d in (-1, 0, 1)] if row == "none" else [level + i - 1]
                out.setdefault(run, {})[task] = job(task, row, size, values)
    return out


TABLE2_TASKS = {"mrpc": 1000, "stsb": 1000}
CURVE_TASKS = {"stsb_n250": 250, "stsb_n500": 500, "stsb_n2000": 2000}


@pytest.fixture
def summary() -> dict:
    tasks = {**TABLE2_TASKS, **CURVE_TASKS}
    return build_summary(results(tasks), list(tasks), "finetune", GROUPS)


def test_few_shot_jobs_are_registered_variants_with_their_own_train_size():
    assert {"stsb_n250", "stsb_n500", "stsb_n2000", "mrpc_n250"} <= set(FINETUNE_JOBS)
    variant = get_task("stsb_n500")
    assert (variant.train_cap, variant.variant_of, variant.metric) == (500, "stsb", "spearman")
    assert variant.splits == get_task("stsb").splits  # the same files, dev and test
    assert all(v.variant_of in ("stsb", "mrpc") for v in FEW_SHOT.values())


def test_table_two_layout_two_metrics_a_task_and_rows_in_the_papers_order(summary):
    # the main table's columns are Table 2's tasks; Figure 2's sizes are no columns
    assert [c["task"] for c in summary["columns"]] == ["stsb", "mrpc"]
    table = summary["ebsim_table2"]
    assert table["tasks"] == ["mrpc", "stsb"] and table["train_sizes"] == {
        "mrpc": 1000,
        "stsb": 1000,
    }
    none = table["rows"]["none"]["stsb"]["spearman"]
    assert none["n"] == 3 and none["values"] == pytest.approx([59.0, 60.0, 61.0])
    assert table["rows"]["ebsim"]["mrpc"]["accuracy"]["mean"] == pytest.approx(65.0)
    text = to_markdown(json.loads(json.dumps(summary, sort_keys=True)))  # as committed
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Table 2 (EBSIM"))
    assert "| Model " in lines[head + 2] and "MRPC Acc" in lines[head + 2]
    assert lines[head + 2].index("MRPC F1") < lines[head + 2].index("STS-B Pearson")
    rows = [line.split("|")[1].strip() for line in lines[head + 4 : head + 7]]
    assert rows == ["none (base)", "ebsim (+ EBSIM, RA + AA)", "ebsim_no_aa (−AA, RA alone)"]
    assert "65.0 ± 1.0" in lines[head + 5]  # ebsim's MRPC accuracy over its 3 training seeds


def test_ebsim_claims_on_table_two_with_welch_tests(summary):
    claims = {c["claim"]: c for c in summary["claims"] if c["claim"].startswith("EBSIM")}
    assert set(claims) == {"EBSIM Table 2: RA + AA above the base",
                           "EBSIM Table 5: both aspects (RA + AA) above RA alone"}  # fmt: skip
    base, ablation = claims.values()
    assert base["measure"] == ablation["measure"] == "ebsim_table2"
    assert base["diff"] == pytest.approx(6.0) and ablation["diff"] == pytest.approx(4.0)
    assert base["n_seeds"] == [3, 3] and base["holds"] and base["base"] == "tiny"
    assert "Table 2 avg (MRPC/QQP F1, STS-B Spearman)" in to_markdown(summary)


def test_a_base_no_better_than_ebsim_leaves_the_claim_unheld():
    data = results(TABLE2_TASKS)
    for run in GROUPS["ebsim"]:  # ebsim scores exactly the base's values
        for task in TABLE2_TASKS:
            data[run][task] = job(task, "ebsim", 1000, [data[run][task]["score"] - 6.0])
    found = build_summary(data, list(TABLE2_TASKS), "finetune", GROUPS)["claims"]
    base = next(c for c in found if c["claim"] == "EBSIM Table 2: RA + AA above the base")
    assert base["diff"] == pytest.approx(0.0) and not base["holds"]


def test_without_table_two_tasks_the_fine_tuned_claim_stays():
    data = {run: {"sicke": {**job("stsb", "x", 1000, [50.0 + i]), "task": "sicke"}}
            for i, run in enumerate(r for runs in GROUPS.values() for r in runs)}  # fmt: skip
    summary = build_summary(data, ["sicke"], "finetune", GROUPS)
    assert "ebsim_table2" not in summary and "ebsim_few_shot" not in summary
    [claim] = [c for c in summary["claims"] if c["claim"].startswith("EBSIM")]
    assert claim["measure"] == "finetune"


def test_figure_two_table_per_size_with_the_difference_to_the_base(summary):
    curve = summary["ebsim_few_shot"]
    assert (curve["task"], curve["metric"], curve["sizes"]) == ("stsb", "spearman",
                                                                 [250, 500, 1000, 2000])  # fmt: skip
    assert curve["rows"]["ebsim"]["250"]["mean"] == pytest.approx(46.0)
    assert curve["vs_none"]["ebsim_no_aa"]["2000"]["diff"] == pytest.approx(2.0)
    lines = et.few_shot_markdown(json.loads(json.dumps(curve, sort_keys=True)), "{:.1f}")
    table = lines[3].splitlines()
    assert [c.strip() for c in table[0].split("|")[1:-1]] == [
        "Train pairs", "none", "ebsim", "ebsim_no_aa", "ebsim − none (p)", "ebsim_no_aa − none (p)"]  # fmt: skip
    assert [row.split("|")[1].strip() for row in table[2:]] == ["250", "500", "1000", "2000"]
    assert "**+6.0 (" in table[2]  # ebsim above the base at 250 pairs, p < 0.05


def test_figure_two_plot_one_line_per_row(summary, tmp_path):
    out = tmp_path / "fewshot.png"
    fig = et.plot_few_shot(json.loads(json.dumps(summary["ebsim_few_shot"])), out)
    assert out.read_bytes().startswith(b"\x89PNG")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["none (base)", "ebsim (+ EBSIM, RA + AA)", "ebsim_no_aa (−AA, RA alone)"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["250", "500", "1000", "2000"]


def test_a_claim_against_a_base_at_the_constant_answer_is_not_testable():
    """MRPC at 2/3 paraphrases: calling every pair one scores F1 80; a base at 60 is no
    reference (issue 71 item 2), whatever the Welch test says."""
    data = results(TABLE2_TASKS)
    for per_task in data.values():
        per_task["mrpc"]["samples"]["test"]["strata"] = {"0": {"pairs": 167}, "1": {"pairs": 333}}
    summary = build_summary(data, list(TABLE2_TASKS), "finetune", GROUPS)
    assert summary["ebsim_table2"]["chance"]["mrpc"]["f1"] == pytest.approx(79.9, abs=0.1)
    base = next(c for c in summary["claims"] if c["claim"].startswith("EBSIM Table 2"))
    assert base["not_testable"].startswith("none at chance on MRPC (f1 60.0")
    text = to_markdown(summary)
    assert "not testable: none at chance on MRPC" in text
    assert "The constant answer on these test pairs: MRPC Acc 66.6, F1 80.0." in text


def test_report_renders_the_ebsim_part_and_draws_figure_two(summary, tmp_path):
    """`paracl report`: a result's `ebsim` part is Table 2 and Figure 2 with its plot
    (docs/img/<name>-fewshot.png), drawn from the committed summary.json."""
    from paracl import report
    from paracl.core.io import write_json

    write_json(summary, tmp_path / "results" / "ebsim-x" / "summary.json")
    (tmp_path / "docs").mkdir()
    written = report.draw_plots(tmp_path)
    assert tmp_path / "docs" / "img" / "ebsim-x-fewshot.png" in written
    page = tmp_path / "docs" / "results" / "ebsim.md"  # a results page, one folder down
    text = report.render_block(tmp_path, page, "ebsim-x", "ebsim")
    assert text.startswith("Table 2 (EBSIM's layout)")
    assert "Figure 2 (EBSIM's few-shot curve)" in text and "The papers' claims" not in text
    assert "![ebsim-x-fewshot](../img/ebsim-x-fewshot.png)" in text


def test_a_task_run_for_some_methods_only_is_a_column_in_no_average():
    """paper-en: MRPC and QQP for EBSIM's rows only (evaluate.finetune_task_methods); the
    PPDB row keeps its average over its own tasks, EBSIM's Table 2 has the column."""
    from paracl.stages.summary import NOT_RUN, finetune_only

    groups = {**GROUPS, "ppdb": ["ppdb_s1", "ppdb_s2", "ppdb_s3"]}
    data = results(TABLE2_TASKS)
    for i, run in enumerate(groups["ppdb"]):
        data[run] = {"stsb": job("stsb", "ppdb", 1000, [70.0 + i]),
                     "mrpc": {"skipped": NOT_RUN, "score": None, "not_run": True}}  # fmt: skip
    ev = {"finetune_tasks": ["stsb", "mrpc"], "finetune_runs": [r for g in groups.values() for r in g],
          "finetune_task_methods": {"mrpc": list(GROUPS)}}  # fmt: skip
    runs = {r: {"method": m} for m, rs in groups.items() for r in rs}
    only = finetune_only(ev, runs)
    assert only["mrpc"] == {r for g in GROUPS.values() for r in g} and "ppdb_s1" in only["stsb"]
    summary = build_summary(data, ["stsb", "mrpc"], "finetune", groups, apart=("mrpc",))
    assert [c["task"] for c in summary["columns"]] == ["stsb", "mrpc"]
    ppdb, ebsim = summary["methods"]["ppdb"], summary["methods"]["ebsim"]
    assert ppdb["avg"] == pytest.approx(71.0) and ppdb["tasks"]["mrpc"].get("not_run")
    assert ebsim["avg"] == pytest.approx(66.0)  # STS-B alone: MRPC counts in no average
    assert ebsim["tasks"]["mrpc"]["score"] == pytest.approx(66.0)
    assert summary["ebsim_table2"]["tasks"] == ["mrpc", "stsb"]
    ppdb_line = next(x for x in to_markdown(summary).splitlines() if x.startswith("| ppdb"))
    assert ppdb_line.rstrip(" |").split("|")[3].strip() == "—"
