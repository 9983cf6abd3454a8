"""The round-trip paper's §6 (transfer fine-tuning, STILTs) as it lays it out, from the
fine-tuning jobs' JSON: Table 5 (fine-tuning, STILTs, + round trip, + paraphraser at each
task's best tag) and Figure 4 (each tag cell minus STILTs, one panel per task), and the
section's claims. The summary stage stores and prints them (`stilts_sections`,
`stilts_markdown`); `paracl report` draws Figure 4 (`plot_figure4`).

Which row is which comes from the jobs themselves: a STILTs arm's fine-tuning job carries
its training record (`intermediate`, written by train_intermediate and copied by
evaluate_finetune): the run it started from (the fine-tuning row), and what paraphrased
its pairs (none: STILTs; roundtrip_greedy; a `<SIMxx><BLEUyy>` cell).

Columns are tasks: a STILTS variant's job (tasks.STILTS, `mrpc_stilts`: MRPC on §6's own
recipe, which paper-en's STILTs rows run where EBSIM's rows run `mrpc`) fills its task's.

Scores as the paper's: each cell is the test score of the fine-tuning seed whose dev score
is the median (evaluate_finetune's `test_at_median_dev`; a row of several runs: their
mean), on the paper's measure (STS-B: Pearson, which the jobs record beside Spearman). Table 5's
"+ paraphraser" row shows, per task, the cell with the best such score, as the paper picks
it (on test). The claims do not pick on test: the paraphraser's cell for a task is the one
with the best mean dev score, and each claim is Welch's two-sided t-test over the
fine-tuning seeds' test scores of the task's measure, as the rest of the summary's claims.
An arm's MNLI job that scored its intermediate classifier (train_intermediate.same_task)
is one run with no dev score: its cell is that run's test score, no tag cell is chosen on
dev for MNLI, and its claims are listed as not testable (one seed).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from paracl.core.tables import markdown_table
from paracl.parts.evaluation.ebsim_tables import seed_values, stat, welch
from paracl.parts.evaluation.tasks import STILTS, get_task

# Table 5's columns in the paper's order (those a run fine-tuned are shown)
TASK_ORDER = ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "mnli_mm", "qnli", "rte")
ROUNDTRIP = "roundtrip_greedy"  # paraphrase_pairs' mark of the greedy round trip
ROW_TITLES = {"finetune": "fine-tuning", "stilts": "STILTs", "roundtrip": "STILTs + round trip",
              "paraphraser": "STILTs + paraphraser"}  # fmt: skip
_CELL = re.compile(r"<SIM(\d+)><BLEU(\d+(?:_\d+)?)>")
PAPER_METRIC = {"stsb": "pearson"}  # Table 5's measure where the registry's primary differs
IMPROVES = ("sst2", "mrpc", "mnli_mm", "rte")  # where the paper's paraphraser beats STILTs
NO_DEV = (  # a claim on the intermediate classifier scored as MNLI (one unselected run)
    "not testable: one seed, and no dev score to choose the paraphraser's tag cell by"
)
PAPER_TABLE5 = (
    "BERT-large, GLUE test server: fine-tuning 58.5 / 94.3 / 88.3 / 72.4 / 86.8 / 86.5 / "
    "85.6 / 92.7 / 69.0; STILTs 57.0 / 94.2 / 89.0 / 71.7 / 88.9 / 86.5 / 85.6 / 92.5 / "
    "79.4 (CoLA, SST-2, MRPC, QQP, STS-B, MNLI-m, MNLI-mm, QNLI, RTE)"
)


def arm_roles(results: dict, groups: dict[str, list[str]]) -> dict | None:
    """{"finetune": row, "stilts": row, "roundtrip": row, "cells": {(sim, bleu): row}}
    from the rows whose jobs carry `intermediate`; None where no row does."""
    roles: dict = {"cells": {}}
    for row, runs in groups.items():
        info = next((j["intermediate"] for r in runs for j in results.get(r, {}).values()
                     if j and j.get("intermediate")), None)  # fmt: skip
        if info is None:
            continue
        start = info.get("start_run")
        roles["finetune"] = next((g for g, rs in groups.items() if start in rs), None)
        by = info.get("augmented_by")
        cell = _CELL.fullmatch(by) if isinstance(by, str) else None
        if by is None:
            roles["stilts"] = row
        elif by == ROUNDTRIP:
            roles["roundtrip"] = row
        elif cell:
            roles["cells"][(f"SIM{cell[1]}", f"BLEU{cell[2]}")] = row
    return roles if len(roles) > 1 or roles["cells"] else None


def median_dev_test(job: dict, metric: str) -> float:
    """The test `metric` of the job's fine-tuning seed whose dev score is the median (ties
    by seed), as evaluate_finetune's `test_at_median_dev` picks it for the primary metric."""
    runs = sorted(job["runs"], key=lambda r: (r["dev"], r["seed"]))
    return float(runs[(len(runs) - 1) // 2]["test"][metric])


def cell_score(jobs: list[dict | None], metric: str) -> dict | None:
    """One row's score on one task's `metric`: the test score at the median-dev seed (the
    mean over runs of several), the seeds' test values and the mean dev score."""
    if not jobs or any(j is None or j.get("score") is None for j in jobs):
        return None
    values = seed_values(jobs, metric)
    devs = [j.get("dev_score") for j in jobs]  # None: the intermediate classifier, unselected
    dev = float(np.mean(devs)) if None not in devs else None
    return {"median_dev": float(np.mean([median_dev_test(j, metric) for j in jobs])),
            "dev": dev, **stat(values)}  # fmt: skip


def mismatched(job: dict | None) -> dict | None:
    """The `mnli` job read as MNLI-mm (Table 5's column): each seed's score on its further
    set `mismatched` (the same fine-tuned model), at the seed with the median dev score."""
    if not job or job.get("score") is None or "mismatched" not in (job.get("eval_sets") or {}):
        return None
    runs = [{**r, "test": r["eval_sets"]["mismatched"]} for r in job["runs"]]
    return {
        **job,
        "runs": runs,
        "test_at_median_dev": median_dev_test({"runs": runs}, job["metric"]),
    }


def with_mismatched(results: dict) -> dict:
    """`results` with each run's `mnli` job also read as task `mnli_mm` (`mismatched`)."""
    out = {}
    for run, jobs in results.items():
        mm = mismatched(jobs.get("mnli"))
        out[run] = {**jobs, "mnli_mm": mm} if mm else jobs
    return out


def by_column(results: dict) -> dict:
    """`results` keyed by Table 5's columns: a run's STILTS variant job (`mrpc_stilts`: the
    task on §6's recipe, which the STILTs rows run) read as its task's (`mrpc`) where the
    run fine-tuned it; a run that did not keeps the task's own job."""
    out = {}
    for run, jobs in results.items():
        cols = {t: j for t, j in jobs.items() if t not in STILTS}
        for t, j in jobs.items():
            if t in STILTS and not (j or {}).get("not_run"):
                cols[STILTS[t].variant_of] = j
        out[run] = cols
    return out


def _tasks(results: dict, groups: dict, row: str) -> list[str]:
    found = {t for r in groups[row] for t, j in results.get(r, {}).items()
             if j and j.get("kind") == "finetune" and not j.get("not_run")}  # fmt: skip
    return [t for t in TASK_ORDER if t in found] + sorted(found - set(TASK_ORDER))


def stilts_tables(results: dict, groups: dict[str, list[str]]) -> dict | None:
    """Table 5's and Figure 4's data: every role's cell per task, each task's best cell
    (test, as the paper) and dev-chosen cell (the claims'), and cell − STILTs per task."""
    roles = arm_roles(results, groups)
    if roles is None or "stilts" not in roles:
        return None
    results = with_mismatched(by_column(results))
    tasks = _tasks(results, groups, roles["stilts"])

    def score(row: str | None, task: str) -> dict | None:
        jobs = [results.get(r, {}).get(task) for r in groups.get(row, [])] if row else []
        return cell_score(jobs, metric(task))

    rows = {role: {t: score(roles.get(role), t) for t in tasks}
            for role in ("finetune", "stilts", "roundtrip") if roles.get(role)}  # fmt: skip
    cells = {
        f"{s}_{b}": {t: score(row, t) for t in tasks} for (s, b), row in roles["cells"].items()
    }
    best = {t: _best(cells, t, "median_dev") for t in tasks}
    by_dev = {t: _best(cells, t, "dev") for t in tasks}
    base = rows["stilts"]
    diff = {t: {c: (v[t]["median_dev"] - base[t]["median_dev"]
                    if v[t] and base[t] else None) for c, v in cells.items()} for t in tasks}  # fmt: skip
    return {"tasks": tasks, "roles": {k: v for k, v in roles.items() if k != "cells"},
            "cell_rows": {f"{s}_{b}": row for (s, b), row in roles["cells"].items()},
            "rows": rows, "cells": cells, "best": best, "best_by_dev": by_dev,
            "sims": sorted({s for s, _ in roles["cells"]}, key=_num, reverse=True),
            "bleus": sorted({b for _, b in roles["cells"]}, key=_num),
            "figure4": diff}  # fmt: skip


def _num(tag: str) -> float:
    """SIM95 → 95, BLEU0_5 → 0.5: a tag's place on its axis."""
    return float(re.sub(r"^\D+", "", tag).replace("_", "."))


def _best(cells: dict, task: str, key: str) -> str | None:
    """The cell with the highest `key` on `task` (ties: the first in name order); None
    where no cell has one (no dev score: MNLI's intermediate classifier)."""
    scored = [(v[task][key], c) for c, v in sorted(cells.items())
              if v[task] and v[task][key] is not None]  # fmt: skip
    return max(scored, key=lambda x: x[0])[1] if scored else None


def title(task: str) -> str:
    """A Table 5 column's title (MNLI-mm: the `mnli` job's mismatched set)."""
    return "MNLI-mm" if task == "mnli_mm" else get_task(task).title


def metric(task: str) -> str:
    """Table 5's measure of a task: the paper's (STS-B: Pearson), else the registry's."""
    return PAPER_METRIC.get(task) or get_task("mnli" if task == "mnli_mm" else task).metric


def measure_titles(tasks: list[str] | None = None) -> dict[str, str]:
    """The claims' measures (`stilts_<task>`), as the summary's claims table names them."""
    return {f"stilts_{t}": f"{title(t)} {metric(t)} (test)" for t in tasks or TASK_ORDER}


def stilts_claims(table: dict) -> list[dict]:
    """§6's claims on each task's measure: the paraphraser (its dev-chosen cell) above
    STILTs where the paper says so, above the round trip on every task, and on CoLA the
    fine-tuning row above every STILTs row (no method helps CoLA)."""
    rows, cells, tasks = table["rows"], table["cells"], table["tasks"]
    cell_row, roles, out = table["cell_rows"], table["roles"], []

    def claim(text: str, a: tuple, b: tuple, task: str) -> None:
        head = {"claim": f"Round trip §6: {text}", "method": a[0], "other": b[0],
                "measure": f"stilts_{task}"}  # fmt: skip
        if a[0] is None:  # no dev score chose the paraphraser's cell
            out.append({**head, "method": "+ paraphraser", "untested": NO_DEV})
            return
        result = welch(a[1], b[1])
        if result and min(result["n_seeds"]) < 2:  # MNLI's intermediate classifier: one run
            result["not_testable"] = "one seed"
        out.append(
            {**head, **result} if result else {**head, "untested": "not every seed scored yet"}
        )

    for t in tasks:
        pick = table["best_by_dev"][t]
        para = (cell_row[pick], cells[pick][t]) if pick else None
        if pick is None and any(v[t] for v in cells.values()):  # scored, no dev score
            para = (None, None)
        name = title(t)
        if para and t in IMPROVES:
            stilts = (roles["stilts"], rows["stilts"][t])
            claim(f"+ paraphraser above STILTs on {name}", para, stilts, t)
        if para and "roundtrip" in rows:
            claim(f"+ paraphraser above + round trip on {name}", para,
                  (roles["roundtrip"], rows["roundtrip"][t]), t)  # fmt: skip
    if "cola" in tasks and "finetune" in rows:
        ft = (roles["finetune"], rows["finetune"]["cola"])
        others = [("STILTs", (roles["stilts"], rows["stilts"]["cola"]))]
        if "roundtrip" in rows:
            others.append(("+ round trip", (roles["roundtrip"], rows["roundtrip"]["cola"])))
        if table["best_by_dev"]["cola"]:
            pick = table["best_by_dev"]["cola"]
            others.append(("+ paraphraser", (cell_row[pick], cells[pick]["cola"])))
        for name, other in others:
            claim(f"fine-tuning above {name} on CoLA (no method helps CoLA)", ft, other, "cola")
    return out


def stilts_sections(results: dict, groups: dict[str, list[str]], found: list[dict]) -> dict:
    """The summary's §6 entries where the run has STILTs arms: `stilts` (Table 5 and
    Figure 4) and its claims appended to `found` (`claims`)."""
    table = stilts_tables(results, groups)
    if table is None:
        return {}
    return {"stilts": table, "claims": found + stilts_claims(table)}


def _cell(value: dict | None, fmt: str, with_sd: bool = False) -> str:
    if value is None:
        return "n/a"
    text = fmt.format(value["median_dev"])
    return text + (f" ({fmt.format(value['mean'])} ± {fmt.format(value['std'])})"
                   if with_sd and value.get("std") is not None else "")  # fmt: skip


def _signed(value: float, fmt: str) -> str:
    return ("+" if value >= 0 else "−") + fmt.format(abs(value))


def _tag(cell: str | None) -> str:
    return "n/a" if cell is None else "".join(f"<{part}>" for part in cell.split("_", 1))


def table5_markdown(table: dict, fmt: str) -> list[str]:
    """Table 5's layout: rows fine-tuning, STILTs, + round trip, + paraphraser (each task's
    best cell) and its tag; columns the tasks with their measures."""
    tasks = table["tasks"]
    head = ["", *(f"{title(t)} ({metric(t)})" for t in tasks)]
    body = [[f"{ROW_TITLES[role]} ({table['roles'][role]})",
             *(_cell(table["rows"][role][t], fmt) for t in tasks)]
            for role in ("finetune", "stilts", "roundtrip") if role in table["rows"]]  # fmt: skip
    best = table["best"]
    body.append(
        [
            ROW_TITLES["paraphraser"],
            *(_cell(table["cells"][best[t]][t], fmt) if best[t] else "n/a" for t in tasks),
        ]
    )
    body.append(["best tag (test)", *(_tag(best[t]) for t in tasks)])
    body.append(["tag chosen on dev (claims)", *(_tag(table["best_by_dev"][t]) for t in tasks)])
    return ["", "Table 5 (round-trip paper's layout), transfer fine-tuning, test ×100:", "",
            markdown_table(head, body), "",
            "Each cell: the test score of the fine-tuning seed with the median dev score (the "
            "paper's rule). + paraphraser: per task the tag cell with the best such score, as "
            "the paper picks it; the claims use the cell with the best dev score instead. "
            f"The paper's: {PAPER_TABLE5}."]  # fmt: skip


def figure4_markdown(table: dict, fmt: str) -> list[str]:
    """Figure 4 as a table: one row per tag cell, one column per task: cell − STILTs."""
    tasks, cells = table["tasks"], [f"{s}_{b}" for s in table["sims"] for b in table["bleus"]]
    body = []
    for c in cells:
        values = [table["figure4"][t].get(c) for t in tasks]
        body.append([_tag(c), *("n/a" if v is None else _signed(v, fmt) for v in values)])
    return ["", "Figure 4 (round-trip paper), each tag cell minus STILTs, test ×100:", "",
            markdown_table(["Tag cell", *(title(t) for t in tasks)], body), "",
            "Positive: the paraphraser's arm above STILTs (the paper's blue cells); each "
            "value the difference of the two rows' median-dev-seed test scores."]  # fmt: skip


def stilts_markdown(summary: dict, fmt: str) -> list[str]:
    """The summary's §6 tables, where it has them."""
    table = summary.get("stilts")
    if not table:
        return []
    return table5_markdown(table, fmt) + (figure4_markdown(table, fmt) if table["cells"] else [])


def plot_figure4(table: dict, path: str | Path):
    """Figure 4: one heatmap panel per task, SIM rows × BLEU columns, cell − STILTs on a
    diverging scale centred at 0 (blue above STILTs, red below, as the paper's)."""
    from paracl.core.plots import png_figure

    tasks, sims, bleus = table["tasks"], table["sims"], table["bleus"]
    grids = [np.array([[table["figure4"][t].get(f"{s}_{b}") for b in bleus] for s in sims],
                      dtype=float) for t in tasks]  # fmt: skip
    finite = [abs(v) for g in grids for v in g.ravel() if np.isfinite(v)]
    top = max(finite) if finite else 1.0
    size = (min(6.4, 1.3 * len(tasks) + 1.0), 2.6)
    with png_figure(path, dpi=100, tight=False, figsize=size, ncols=len(tasks)) as (fig, axes):
        for ax, task, grid in zip(np.atleast_1d(axes), tasks, grids, strict=True):
            image = ax.imshow(grid, cmap="RdBu", vmin=-top, vmax=top)
            ax.set_title(title(task), fontsize=9)
            ax.set_xticks(range(len(bleus)), [b.removeprefix("BLEU") for b in bleus], fontsize=7)
            ax.set_yticks(range(len(sims)), [s.removeprefix("SIM") for s in sims], fontsize=7)
            for (i, j), v in np.ndenumerate(grid):
                if np.isfinite(v):
                    ax.text(j, i, f"{v:+.1f}", ha="center", va="center", fontsize=6)
        fig.colorbar(image, ax=list(np.atleast_1d(axes)), shrink=0.8, label="− STILTs")
        fig.supxlabel("BLEU tag", fontsize=8)
        fig.supylabel("SIM tag", fontsize=8)
    return fig
