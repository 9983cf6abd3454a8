"""EBSIM's own experiments as its paper lays them out, from the fine-tuning jobs' JSON:
Table 2 (MRPC, QQP and STS-B fine-tuned, each with the paper's two metrics) and Figure 2
(one task fine-tuned at growing train sizes: tasks.FEW_SHOT's jobs beside the task's own),
for the base (`none`), EBSIM with both aspects (`ebsim`, RA + AA) and its -AA ablation
(`ebsim_no_aa`, RA alone; Table 5). The summary stage stores and prints both
(`ebsim_tables`, `ebsim_markdown`); `paracl report` draws Figure 2 (`plot_few_shot`).

Why apart from the summary's main table: that table holds each task's primary metric,
one column a task, and averages them; Table 2 shows two metrics a task, and Figure 2's
sizes are one task several times over, which no average should count more than once.

Seeds, as in the summary's claims: a row of several runs (training seeds) has one value
per run (its mean over its fine-tuning seeds); a row of one run fine-tuned with several
seeds (`none`, evaluate.baseline_seeds) one value per fine-tuning seed. A difference is
tested with Welch's two-sample t-test over those values, like for like.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from paracl.core.tables import markdown_table
from paracl.parts.evaluation.tasks import FEW_SHOT, get_task

ROWS = {"none": "base", "ebsim": "+ EBSIM, RA + AA", "ebsim_no_aa": "−AA, RA alone"}
# Table 2's tasks and the two metrics the paper reports for each, in its column order
TABLE2 = {"mrpc": ("accuracy", "f1"), "qqp": ("accuracy", "f1"), "stsb": ("pearson", "spearman")}
METRIC_TITLES = {"accuracy": "Acc", "f1": "F1", "pearson": "Pearson", "spearman": "Spearman"}
PAPER_TABLE2 = (
    "BERT-base 84.70 / 88.64, 90.86 / 90.71, 85.44 / 84.31; + EBSIM 85.39 / 89.47, "
    "91.42 / 91.38, 87.12 / 86.24 (MRPC, QQP, STS-B); −AA on MRPC 85.10 / 89.07 (Table 5)"
)
ALPHA = 0.05


def seed_values(jobs: list[dict | None], metric: str) -> list[float] | None:
    """A row's values of one test metric: one per run, or, for a row of one run, one per
    fine-tuning seed; None where a job is missing or was skipped."""
    if not jobs or any(j is None or j.get("score") is None for j in jobs):
        return None
    if len(jobs) == 1:
        return [float(r["test"][metric]) for r in jobs[0]["runs"]]
    return [float(np.mean([r["test"][metric] for r in j["runs"]])) for j in jobs]


def stat(values: list[float] | None) -> dict | None:
    """mean, sd (None for one value), n and the values themselves."""
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": float(np.mean(values)), "std": sd, "n": len(values), "values": values}


def welch(a: dict | None, b: dict | None) -> dict | None:
    """a − b with Welch's two-sided t-test over their values (p None with < 2 a side)."""
    if a is None or b is None:
        return None
    out = {"diff": a["mean"] - b["mean"], "n_seeds": [a["n"], b["n"]], "p": None, "holds": False}
    if a["n"] > 1 and b["n"] > 1 and (a["std"] or b["std"]):
        from scipy import stats  # loaded only where a t-test runs (2+ seeds)

        p = stats.ttest_ind(a["values"], b["values"], equal_var=False).pvalue
        out["p"] = float(p)
        out["holds"] = bool(p < ALPHA and out["diff"] > 0)
    return out


def _jobs(results: dict, runs: list[str], task: str) -> list[dict | None]:
    return [results.get(run, {}).get(task) for run in runs]


def table_two(results: dict, groups: dict[str, list[str]]) -> dict | None:
    """Table 2's cells ({row: {task: {metric: stat}}}) for the TABLE2 tasks that the
    `ebsim` row was fine-tuned on; None where it has none (no such job, or no ebsim row)."""
    if "ebsim" not in groups:
        return None
    tasks = [t for t in TABLE2 if any(_jobs(results, groups["ebsim"], t))]
    if not tasks:
        return None
    rows = {
        row: {t: {m: stat(seed_values(_jobs(results, groups[row], t), m)) for m in TABLE2[t]}
              for t in tasks}
        for row in ROWS if row in groups
    }  # fmt: skip
    sizes = {t: _train_size(results, groups["ebsim"], t) for t in tasks}
    chance = {t: constant_answer(_jobs(results, groups["ebsim"], t)) for t in tasks}
    return {"tasks": tasks, "rows": rows, "train_sizes": sizes,
            "chance": {t: c for t, c in chance.items() if c}}  # fmt: skip


def constant_answer(jobs: list[dict | None]) -> dict | None:
    """What the better constant answer scores on a binary task's test pairs (Acc: the
    larger label share; F1: every pair called a paraphrase), from the job's record of
    its test sample; None for a task without labels 0/1 (STS-B)."""
    found = next((j for j in jobs if j and j.get("samples")), None)
    strata = ((found or {}).get("samples", {}).get("test") or {}).get("strata") or {}
    if set(strata) != {"0", "1"}:
        return None
    pos = strata["1"]["pairs"] / (strata["0"]["pairs"] + strata["1"]["pairs"])
    return {"accuracy": 100 * max(pos, 1 - pos), "f1": 100 * 2 * pos / (1 + pos)}


def at_chance(table: dict, row: str) -> str | None:
    """Why a claim against `row` is not testable: on a task of Table 2 with a constant
    answer, its primary metric is not above that answer's by more than its seed sd (a
    fine-tuned head that calls every pair a paraphrase ranks nothing; issue 71 item 2)."""
    for task, levels in (table.get("chance") or {}).items():
        metric = get_task(task).metric
        cell = table["rows"][row][task].get(metric)
        if cell is not None and cell["mean"] - levels[metric] <= (cell["std"] or 0.0):
            return (f"{row} at chance on {get_task(task).title} ({metric} {cell['mean']:.1f}; "
                    f"constant answer {levels[metric]:.1f})")  # fmt: skip
    return None


def _train_size(results: dict, runs: list[str], task: str) -> int | None:
    found = [j for j in _jobs(results, runs, task) if j and j.get("sizes")]
    return found[0]["sizes"]["train"] if found else None


def table_two_claims(table: dict) -> list[dict]:
    """EBSIM's claims on Table 2's tasks: each row's values of the mean over the tasks'
    primary metrics (MRPC and QQP F1, STS-B Spearman), seed by seed; RA + AA against the
    base (Table 2) and against RA alone (Table 5), with Welch's test."""
    primary = {t: get_task(t).metric for t in table["tasks"]}

    def measure(row: str) -> dict | None:
        cells = [table["rows"][row][t][m] for t, m in primary.items()]
        if any(c is None for c in cells) or len({c["n"] for c in cells}) != 1:
            return None
        return stat([float(np.mean(v)) for v in zip(*(c["values"] for c in cells), strict=True)])

    out = []
    for other, claim in (
        ("none", "EBSIM Table 2: RA + AA above the base"),
        ("ebsim_no_aa", "EBSIM Table 5: both aspects (RA + AA) above RA alone"),
    ):
        if other not in table["rows"]:
            continue
        head = {"claim": claim, "method": "ebsim", "other": other, "measure": "ebsim_table2"}
        result = welch(measure("ebsim"), measure(other))
        if result is None:
            out.append({**head, "untested": "not every seed scored yet"})
            continue
        why = at_chance(table, other)
        out.append({**head, **result, **({"not_testable": why} if why else {})})
    return out  # fmt: skip


def few_shot(results: dict, groups: dict[str, list[str]]) -> dict | None:
    """Figure 2's points: for the task whose FEW_SHOT jobs the `ebsim` row has, each
    row's stat of the task's primary metric at each train size (the variants' and the
    task's own job), and ebsim's and ebsim_no_aa's difference to the base per size."""
    if "ebsim" not in groups:
        return None
    found = sorted({v.variant_of for name, v in FEW_SHOT.items()
                    if any(_jobs(results, groups["ebsim"], name))})  # fmt: skip
    if not found:
        return None
    task = found[0]
    names = [task, *(n for n, v in FEW_SHOT.items() if v.variant_of == task)]
    metric = get_task(task).metric
    rows: dict[str, dict[str, dict]] = {}
    for row in (r for r in ROWS if r in groups):
        for name in names:
            jobs = _jobs(results, groups[row], name)
            size = _train_size(results, groups[row], name)
            value = stat(seed_values(jobs, metric))
            if size is not None and value is not None:  # str keys: as JSON reads them back
                rows.setdefault(row, {})[str(size)] = value
    sizes = sorted({int(s) for r in rows.values() for s in r})
    vs_none = {row: {str(s): welch(rows[row].get(str(s)), rows.get("none", {}).get(str(s)))
                     for s in sizes} for row in rows if row != "none"}  # fmt: skip
    return {"task": task, "title": get_task(task).title, "metric": metric, "sizes": sizes,
            "rows": rows, "vs_none": vs_none}  # fmt: skip


def _ordered(rows: dict) -> list[str]:
    """The rows present, in ROWS' order (a summary.json read back has its keys sorted)."""
    return [r for r in ROWS if r in rows]


def _p(p: float) -> str:
    """A p-value to three places; below 0.001 as "<0.001" (as the summary's format_p)."""
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def _cell(value: dict | None, fmt: str) -> str:
    if value is None:
        return "n/a"
    sd = "" if value["std"] is None else f" ± {fmt.format(value['std'])}"
    return fmt.format(value["mean"]) + sd


def table_two_markdown(table: dict, fmt: str) -> list[str]:
    """Table 2's layout: one row per model, two metric columns per task."""
    head = ["Model"] + [f"{get_task(t).title} {METRIC_TITLES[m]}" for t in table["tasks"]
                        for m in TABLE2[t]]  # fmt: skip
    body = [[f"{row} ({ROWS[row]})", *(_cell(cells[t][m], fmt) for t in table["tasks"]
                                       for m in TABLE2[t])]
            for row, cells in ((r, table["rows"][r]) for r in _ordered(table["rows"]))]  # fmt: skip
    sizes = ", ".join(f"{get_task(t).title} {n}" for t, n in table["train_sizes"].items() if n)
    chance = "; ".join(f"{get_task(t).title} Acc {c['accuracy']:.1f}, F1 {c['f1']:.1f}"
                       for t, c in (table.get("chance") or {}).items())  # fmt: skip
    chance = f" The constant answer on these test pairs: {chance}." if chance else ""
    return ["", "Table 2 (EBSIM's layout), fine-tuned, test ×100:", "", markdown_table(head, body),
            "", f"Mean ± sd over seeds (training seeds; the base: fine-tuning seeds). Train "
            f"pairs: {sizes or 'n/a'}.{chance} The paper's (whole train sets): "
            f"{PAPER_TABLE2}."]  # fmt: skip


def few_shot_markdown(curve: dict, fmt: str) -> list[str]:
    """Figure 2 as a table: one row per train size, each model's score and, beside
    EBSIM's rows, the difference to the base and Welch's p."""
    names = _ordered(curve["rows"])
    others = [r for r in names if r != "none"]
    head = ["Train pairs", *names] + [f"{r} − none (p)" for r in others]
    body = []
    for size in curve["sizes"]:
        cells = [_cell(curve["rows"][r].get(str(size)), fmt) for r in names]
        for r in others:
            d = curve["vs_none"][r].get(str(size))
            p = "" if d is None or d["p"] is None else f" ({_p(d['p'])})"
            diff = "n/a" if d is None else f"{d['diff']:+.1f}{p}"
            cells.append(f"**{diff}**" if d and d["holds"] else diff)
        body.append([size, *cells])
    title = f"{curve['title']} {curve['metric']}"
    return ["", f"Figure 2 (EBSIM's few-shot curve), {title} ×100 by train size:", "",
            markdown_table(head, body), "",
            "Mean ± sd over seeds; p: Welch's two-sided t-test against the base at that size; "
            f"**bold** where p < {ALPHA} and the difference is positive. The paper's Figure 2 is "
            "QQP F1 at 20–100 % of its 390k train pairs (not offline)."]  # fmt: skip


def ebsim_markdown(summary: dict, fmt: str) -> list[str]:
    """The summary's EBSIM sections, where it has them."""
    lines = []
    if summary.get("ebsim_table2"):
        lines += table_two_markdown(summary["ebsim_table2"], fmt)
    if summary.get("ebsim_few_shot"):
        lines += few_shot_markdown(summary["ebsim_few_shot"], fmt)
    return lines


def plot_few_shot(curve: dict, path: str | Path):
    """Figure 2: each row's score against the train size (log scale), ± sd over seeds.
    Returns the (closed) Figure."""
    from paracl.core.plots import measured_curve, png_figure

    with png_figure(path, dpi=100, figsize=(5.5, 3.8)) as (fig, ax):
        for row in _ordered(curve["rows"]):
            points = curve["rows"][row].items()
            pts = [{"size": int(s), "value": v["mean"], "std": v["std"]} for s, v in points]
            measured_curve(ax, pts, "size", curve["sizes"], label=f"{row} ({ROWS[row]})")
        ax.set_xscale("log", base=2)
        ax.minorticks_off()
        ax.set_xticks(curve["sizes"], [str(s) for s in curve["sizes"]])
        ax.set_xlabel("train pairs (seeded sample)")
        ax.set_ylabel(f"{curve['title']} {curve['metric']} ×100 (± sd)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


# the measure of EBSIM's claims where the run has Table 2's tasks (summary.measure_title)
EBSIM_MEASURES = {"ebsim_table2": "Table 2 avg (MRPC/QQP F1, STS-B Spearman)"}


def table_tasks(tasks: list[str]) -> list[str]:
    """The summary's main-table columns: `tasks` less the FEW_SHOT jobs, which are
    Figure 2's points (few_shot), not tasks of their own to average."""
    return [t for t in tasks if t not in FEW_SHOT]


def ebsim_sections(results: dict, groups: dict[str, list[str]], found: list[dict]) -> dict:
    """The summary's EBSIM entries where the run has them: Table 2 (`ebsim_table2`), and
    then EBSIM's claims on Table 2's tasks in place of those on the fine-tuned average
    (`claims`: `found` updated); Figure 2 (`ebsim_few_shot`)."""
    out: dict = {}
    table = table_two(results, groups)
    if table:
        out["ebsim_table2"] = table
        kept = [c for c in found if not c["claim"].startswith("EBSIM")]
        out["claims"] = kept + table_two_claims(table)
    curve = few_shot(results, groups)
    if curve:
        out["ebsim_few_shot"] = curve
    return out
