"""The θ curve (PPDB paper, Figure 2): dev average against the paraphrase threshold θ.

A θ sweep is a set of DVC experiments:

    dvc exp run --queue -S theta=0.1,0.2,0.3,0.4,0.5 && dvc queue start
    paracl theta-curve            # -> metrics/theta_curve.csv + metrics/theta_curve.png

This reads `dvc exp show --json` (every experiment's params and metrics), takes θ from
params.yaml and `<method>.<metric>` (default `ppdb` / `dev_avg`: the mean dev score over
the fine-tuned tasks, the quantity the paper selects θ on) from metrics/scores.json (the
`methods` of metrics/summary.json in a sweep saved before scores.json), and writes one row
per θ. Experiments with the same θ (a rerun, the workspace next to its committed baseline)
are averaged and counted, not plotted twice.
Where the method has several seeds (presets/effect-en.yaml), the summary also holds the
seeds' sd of the metric (`<metric>_std`); it is kept and drawn as an error bar. The effect
presets run no fine-tuned task, so their `dev_avg` is null: `--metric avg` (the test
average) is the curve there.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCORES = "metrics/scores.json"  # the summary's rows, as dvc.yaml declares them as metrics
SUMMARY = "metrics/summary.json"  # declared before scores.json: what older saved sweeps hold


def _records(node: Any) -> Iterator[dict]:
    """Every experiment record (a dict with 'rev' and 'data') anywhere in exp-show JSON."""
    if isinstance(node, dict):
        if "rev" in node and isinstance(node.get("data"), dict):
            yield node
        for value in node.values():
            if isinstance(value, (dict, list)):
                yield from _records(value)
    elif isinstance(node, list):
        for value in node:
            yield from _records(value)


def params_of(rec: dict) -> dict:
    """The record's params.yaml ({} where it has none)."""
    return ((rec["data"].get("params") or {}).get("params.yaml") or {}).get("data") or {}


def _rev(rec: dict) -> str:
    return rec["data"].get("rev") or rec["rev"]


def _stale_baselines(exp_show: list | dict) -> set[str]:
    """Committed baselines whose params.yaml differs from their experiments' in more than θ.

    `dvc exp show` gives a baseline the metrics committed with it. A sweep run on top of a
    preset (`paracl preset effect-en-theta`, not committed) sits on a commit whose metrics
    came from other params (the default pipeline's summary also has a `ppdb` row): that
    baseline is no point of the sweep, whatever θ its params.yaml holds.
    """

    def beside_theta(rec: dict) -> dict:
        return {k: v for k, v in params_of(rec).items() if k != "theta"}

    stale = set()
    for rec in _records(exp_show):
        own = beside_theta(rec)
        if any(beside_theta(e) != own for e in _records(rec.get("experiments") or [])):
            stale.add(_rev(rec))
    return stale


def sweep_records(exp_show: list | dict, include_workspace: bool = False) -> Iterator[dict]:
    """The experiment records that are points of the sweep, each rev once.

    The workspace is left out by default: after `dvc exp run` it is a copy of the last
    experiment, which would then count twice. So is a stale baseline (_stale_baselines).
    """
    skip, seen = _stale_baselines(exp_show), set()
    for rec in _records(exp_show):
        rev = _rev(rec)
        if rev in seen or rev in skip or (rev == "workspace" and not include_workspace):
            continue
        seen.add(rev)
        yield rec


def summary_of(rec: dict) -> dict:
    """The record's summary, {"methods": {method: row}}: metrics/scores.json's rows, or
    metrics/summary.json in an exp-show file saved before scores.json was the declared
    metric ({} where it has neither)."""
    metrics = rec["data"].get("metrics") or {}
    rows = (metrics.get(SCORES) or {}).get("data")
    if rows:
        return {"methods": rows}
    return (metrics.get(SUMMARY) or {}).get("data") or {}


def points(
    exp_show: list | dict,
    method: str = "ppdb",
    metric: str = "dev_avg",
    include_workspace: bool = False,
) -> list[dict[str, Any]]:
    """(rev, name, theta, value, std) for each experiment of the sweep that has both θ and
    the metric; std is the seeds' sd of the metric, or None with one seed."""
    out = []
    for rec in sweep_records(exp_show, include_workspace):
        rev, theta = _rev(rec), params_of(rec).get("theta")
        entry = (summary_of(rec).get("methods") or {}).get(method) or {}
        value, std = entry.get(metric), entry.get(f"{metric}_std")
        if theta is None or value is None:
            continue
        name = rec.get("name") or rec["data"].get("name") or rev
        std = None if std is None else float(std)
        out.append(
            {"rev": rev, "name": name, "theta": float(theta), "value": float(value), "std": std}
        )
    return out


def curve(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per θ (ascending): mean of the metric, the mean of the experiments' seed
    sds (None without seeds), how many experiments, their names."""
    by_theta: dict[float, list[dict]] = {}
    for p in pts:
        by_theta.setdefault(p["theta"], []).append(p)
    rows = []
    for theta in sorted(by_theta):
        group = sorted(by_theta[theta], key=lambda p: p["name"])
        stds = [p["std"] for p in group if p.get("std") is not None]
        rows.append(
            {
                "theta": theta,
                "value": sum(p["value"] for p in group) / len(group),
                "std": sum(stds) / len(stds) if stds else None,
                "n_experiments": len(group),
                "experiments": " ".join(p["name"] for p in group),
            }
        )
    return rows


def write_csv(rows: list[dict], path: str | Path, metric: str = "dev_avg") -> None:
    """CSV with columns theta, <metric>, <metric>_std (empty without seeds), n_experiments,
    experiments (for `dvc plots show`)."""
    from paracl.core.io import atomic_path

    with atomic_path(Path(path)) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["theta", metric, f"{metric}_std", "n_experiments", "experiments"])
        for r in rows:
            std = "" if r.get("std") is None else round(r["std"], 6)
            writer.writerow(
                [r["theta"], round(r["value"], 6), std, r["n_experiments"], r["experiments"]]
            )


def planned(exp_show: list | dict) -> list[float]:
    """Every θ of the sweep, measured or not: a curve joins two θ only where no planned
    θ lies between them unmeasured."""
    thetas = {params_of(rec).get("theta") for rec in sweep_records(exp_show)}
    return sorted(float(t) for t in thetas if t is not None)


def baseline(exp_show: list | dict, metric: str) -> float | None:
    """`none`'s metric, the mean over the sweep's experiments (θ does not touch it)."""
    values = [((summary_of(rec).get("methods") or {}).get("none") or {}).get(metric)
              for rec in sweep_records(exp_show)]  # fmt: skip
    values = [float(v) for v in values if v is not None]
    return sum(values) / len(values) if values else None


def plot(
    rows: list[dict],
    path: str | Path,
    method: str,
    metric: str,
    grid: list[float] = (),
    base: float | None = None,
):
    """The metric against θ, a marker ± the seeds' sd per measured θ, joined only between
    neighbours of `grid` (planned), the best θ circled (as the paper's Figure 2) and
    `none` a dashed line, so the θ effect is seen beside the effect of training at all.
    Returns the (closed) Figure."""
    from paracl.core.plots import measured_curve, png_figure

    with png_figure(path, dpi=120, figsize=(5, 3.5)) as (fig, ax):
        measured_curve(ax, rows, "theta", grid, label=method)
        best = max(rows, key=lambda r: r["value"])
        ax.scatter([best["theta"]], [best["value"]], s=120, facecolors="none",
                   edgecolors="red", zorder=3, label=f"best θ ({best['theta']:g})")  # fmt: skip
        if base is not None:
            ax.axhline(base, linestyle="--", color="grey", label="none (untrained)")
        ax.set_xticks([r["theta"] for r in rows])
        ax.set_xlabel("θ (keep rules with p(d|s) ≥ θ)")
        ax.set_ylabel(f"{metric} ({method})")
        seeded = any(r.get("std") for r in rows)
        ax.set_title(f"{metric} vs θ" + (" (± sd over seeds)" if seeded else ""))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def exp_show_json(repo: str | Path = ".") -> list:
    """`dvc exp show --json` of the repo (all experiments of the current commit)."""
    result = subprocess.run(
        [sys.executable, "-m", "dvc", "exp", "show", "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"dvc exp show --json failed: {result.stderr.strip()}")
    return json.loads(result.stdout)


def theta_curve(
    exp_show: list | dict,
    out_dir: str | Path = "metrics",
    method: str = "ppdb",
    metric: str = "dev_avg",
) -> list[dict]:
    """Write out_dir/theta_curve.csv and .png from exp-show data; return the rows."""
    rows = curve(points(exp_show, method, metric))
    if not rows:
        raise ValueError(
            f"no experiment has both 'theta' and methods.{method}.{metric} in {SUMMARY} "
            "(run the sweep first: dvc exp run --queue -S theta=0.1,0.2,0.3 && dvc queue start; "
            "dev_avg is null without a fine-tuned task, as in the effect presets: --metric avg)"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out_dir / "theta_curve.csv", metric)
    grid, base = planned(exp_show), baseline(exp_show, metric)
    plot(rows, out_dir / "theta_curve.png", method, metric, grid, base)
    return rows
