"""The learning curve (issue 33 item 5): a method's test average against its training steps.

presets/learning-curve-en.yaml writes one method entry per length, named
`<family>_<steps>` (`simcse_unsup_8`, `simcse_unsup_64`, and `..._32_all` for every layer
trained), each with its own `max_examples`. After `dvc repro summary`:

    paracl learning-curve         # -> metrics/learning_curve.csv + metrics/learning_curve.png
    paracl learning-curve --merge results/learning-curve-en/learning_curve.csv  # + those lines

Steps come from each run's training metrics (metrics/train/<run>.json), not from the
name; the name only says which line a point belongs to: the `_<steps>` part dropped from
it. The value is the summary's `avg` and its seeds' sd.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from paracl.core.io import atomic_path
from paracl.core.tables import markdown_table


def steps(result: dict, train_dir: Path) -> int:
    """Optimizer steps a method's runs took, from their training metrics (a run stops
    early when its input has fewer examples than max_examples, so params would not say)."""
    counts = set()
    for run in result.get("runs") or {}:
        path = train_dir / f"{run}.json"
        counts.add(int(json.loads(path.read_text(encoding="utf-8"))["steps"]))
    if len(counts) != 1:
        raise ValueError(f"{train_dir}: the runs of one method took {sorted(counts)} steps")
    return counts.pop()


def family(method: str, n_steps: int) -> str:
    """The line a method is drawn on: its name without the `_<steps>` part."""
    parts = method.split("_")
    return "_".join(p for p in parts if p != str(n_steps)) if str(n_steps) in parts else method


def points(summary: dict, train_dir: Path) -> list[dict[str, Any]]:
    """(family, method, steps, value, std) per trained method of the summary, by family
    then steps; `none` (no training) is left out: it is every curve's step 0."""
    rows = []
    for method, result in (summary.get("methods") or {}).items():
        if method == "none" or result.get("avg") is None:
            continue
        n = steps(result, train_dir)
        std = result.get("avg_std")
        rows.append({"family": family(method, n), "method": method, "steps": n,
                     "value": float(result["avg"]), "std": None if std is None else float(std)})  # fmt: skip
    return sorted(rows, key=lambda r: (r["family"], r["steps"]))


def write_csv(rows: list[dict], path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["family", "method", "steps", "avg", "avg_std"])
        for r in rows:
            std = "" if r["std"] is None else round(r["std"], 6)
            writer.writerow([r["family"], r["method"], r["steps"], round(r["value"], 6), std])


def read_csv(path: Path) -> list[dict[str, Any]]:
    """The rows write_csv wrote (a committed results/<name>/learning_curve.csv)."""
    with open(path, newline="", encoding="utf-8") as f:
        return [{"family": r["family"], "method": r["method"], "steps": int(r["steps"]),
                 "value": float(r["avg"]), "std": float(r["avg_std"]) if r["avg_std"] else None}
                for r in csv.DictReader(f)]  # fmt: skip


def table(rows: list[dict], baseline: float | None, decimals: int = 1) -> str:
    """Markdown: one row per step count, one column per family (mean ± sd over seeds)."""
    fams = list(dict.fromkeys(r["family"] for r in rows))
    by = {(r["family"], r["steps"]): r for r in rows}
    fmt = f"{{:.{decimals}f}}"
    table = []
    if baseline is not None:
        table.append(["0 (none)", *[fmt.format(baseline)] * len(fams)])
    for n in sorted({r["steps"] for r in rows}):
        cells = []
        for fam in fams:
            r = by.get((fam, n))
            sd = "" if r is None or r["std"] is None else " ± " + fmt.format(r["std"])
            cells.append("" if r is None else fmt.format(r["value"]) + sd)
        table.append([n, *cells])
    return markdown_table(["steps", *fams], table)


def plot(rows: list[dict], path: Path, baseline: float | None):
    """One marker per measured (family, steps) ± the seeds' sd; a family's markers joined
    only where no step measured by any family lies between them (a step count one family
    skipped is not drawn as if it had been run); the untrained base a dashed line.
    Returns the (closed) Figure."""
    from paracl.core.plots import measured_curve, png_figure

    grid = {r["steps"] for r in rows}
    with png_figure(path, dpi=120, figsize=(5.5, 3.8)) as (fig, ax):
        for fam in dict.fromkeys(r["family"] for r in rows):
            measured_curve(ax, [r for r in rows if r["family"] == fam], "steps", grid, label=fam)
        if baseline is not None:
            ax.axhline(baseline, linestyle="--", color="grey", label="none (0 steps)")
        ax.set_xscale("log", base=2)
        ax.minorticks_off()
        ax.set_xticks(sorted(grid), [str(n) for n in sorted(grid)])
        ax.set_xlabel("training steps (only the marked ones were run)")
        ax.set_ylabel("STS avg (± sd over seeds)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def learning_curve(
    summary_path: str | Path = "metrics/summary.json",
    train_dir: str | Path = "metrics/train",
    out_dir: str | Path = "metrics",
    merge: list[str | Path] = (),
) -> list[dict]:
    """Write out_dir/learning_curve.csv and .png; return the rows. `merge`: committed CSVs
    of other runs (learning-curve-en's top-4 lines beside learning-curve-en-all's), whose
    families this summary does not have, drawn on the same axes."""
    summary = json.loads(Path(summary_path).read_text(encoding="utf-8"))
    rows = points(summary, Path(train_dir))
    if not rows:
        raise ValueError(
            f"{summary_path}: no trained method with an avg: apply "
            "presets/learning-curve-en.yaml and run `dvc repro summary` first"
        )
    for path in merge:
        have = {r["family"] for r in rows}
        rows += [r for r in read_csv(Path(path)) if r["family"] not in have]
    rows.sort(key=lambda r: (r["family"], r["steps"]))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "learning_curve.csv")
    base = (summary["methods"].get("none") or {}).get("avg")
    plot(rows, out / "learning_curve.png", base)
    return rows
