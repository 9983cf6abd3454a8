"""The summary table: methods × tasks with an Avg. column, laid out like Table 3 of the
PPDB paper (rows = methods, columns = tasks grouped as Retrieval / Similarity / RTE /
Paraphrase), as JSON for `dvc metrics` and as Markdown for people.

Every cell names what it rests on: the mean over seeds with the seeds' standard
deviation beside it, a dagger where the split is not the official one (a seeded
re-split of what exists offline), and one line per method naming the base model that
ran. Missing or skipped jobs show as "n/a" with the reason in a note.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paracl.evaluation.jobs import job_info
from paracl.io import read_json

GROUP_ORDER = ("Retrieval", "Similarity", "RTE", "Paraphrase", "GLUE", "Unsupervised")


def load_results(metrics_dir: str | Path, methods: list[str], tasks: list[str]) -> dict:
    """{method: {task: result dict or None}} from metrics/eval/<method>/<task>.json."""
    out: dict = {}
    for m in methods:
        out[m] = {}
        for t in tasks:
            path = Path(metrics_dir) / m / f"{t}.json"
            out[m][t] = read_json(path) if path.exists() else None
    return out


def ordered_tasks(tasks: list[str]) -> list[str]:
    """Tasks in Table 3's group order (stable within a group)."""
    rank = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(tasks, key=lambda t: rank.get(job_info(t)["group"], len(rank)))


def build_summary(results: dict, tasks: list[str], avg_over: str = "finetune") -> dict:
    """The summary as JSON-able data: per method, per task score/std/official, Avg."""
    tasks = ordered_tasks(tasks)
    rows = {}
    for method, per_task in results.items():
        cells, models = {}, set()
        for t in tasks:
            r = per_task.get(t)
            if r is None:
                cells[t] = {"score": None, "note": "not run (no metrics file)"}
                continue
            base = (r.get("encoder") or {}).get("base_model") or {}
            models.add(base.get("id", "unknown"))
            cells[t] = {
                "score": r.get("score"),
                "std": r.get("score_std"),
                "dev": r.get("dev_score"),
                "n_seeds": (r.get("test") or {}).get("n") if r.get("kind") == "finetune" else None,
                "official_split": r.get("official_split"),
            }
            if r.get("skipped"):  # the reason a cell is empty; split notes stay per task
                cells[t]["note"] = r["skipped"]
        use = [t for t in tasks if avg_over == "all" or job_info(t)["kind"] == "finetune"]
        scores = [cells[t]["score"] for t in use]
        devs = [cells[t].get("dev") for t in use if job_info(t)["kind"] == "finetune"]
        complete = bool(use) and all(s is not None for s in scores)
        rows[method] = {
            "tasks": cells,
            "avg": float(np.mean(scores)) if complete else None,
            "dev_avg": float(np.mean(devs)) if devs and all(d is not None for d in devs) else None,
            "base_models": sorted(models),
        }
    return {
        "columns": [{"task": t, **job_info(t)} for t in tasks],
        "avg_over": avg_over,
        "methods": rows,
    }


def to_markdown(summary: dict, decimals: int = 1) -> str:
    """Table-3-style Markdown: a group header row, a task row, one row per method."""
    cols = summary["columns"]
    fmt = f"{{:.{decimals}f}}"
    groups = [c["group"] for c in cols]
    head1 = ["", *groups, ""]
    # Blank out a group name repeated in adjacent columns, as Table 3 does.
    for i in range(len(groups) - 1, 0, -1):
        if groups[i] == groups[i - 1]:
            head1[i + 1] = ""
    head2 = ["Method", *(f"{c['title']} ({c['metric']})" for c in cols), "Avg."]
    lines = ["| " + " | ".join(head1) + " |", "| " + " | ".join(head2) + " |",
             "|" + "---|" * len(head2)]  # fmt: skip
    notes, daggers = [], False
    for method, row in summary["methods"].items():
        cells = [method]
        for c in cols:
            cell = row["tasks"][c["task"]]
            if cell["score"] is None:
                cells.append("n/a")
                notes.append(f"- {method} / {c['task']}: {cell['note']}")
                continue
            text = fmt.format(cell["score"])
            if cell.get("n_seeds") and cell["n_seeds"] > 1:
                text += " ± " + fmt.format(cell["std"])
            if cell["official_split"] is False:
                text += " †"
                daggers = True
            cells.append(text)
        cells.append(fmt.format(row["avg"]) if row["avg"] is not None else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    over = "fine-tuned tasks" if summary["avg_over"] == "finetune" else "all columns"
    lines.append(f"Scores ×100; mean over seeds ± standard deviation where n > 1. "
                 f"Avg. over {over}.")  # fmt: skip
    if daggers:
        lines.append("† not the official split: a seeded re-split of what exists offline "
                     "(see split_note in metrics/eval/<method>/<task>.json).")  # fmt: skip
    lines.append("")
    lines.append("Base model that ran, per method:")
    for method, row in summary["methods"].items():
        lines.append(f"- {method}: {', '.join(row['base_models']) or 'unknown'}")
    if notes:
        lines += ["", "Missing cells:", *notes]
    return "\n".join(lines) + "\n"
