"""The θ and |D| choice (PPDB paper §4.2, Figure 2): ppdb's dev fine-tuned average against
the paraphrase threshold θ and the training size |D|, the argmax chosen.

A sweep is a set of DVC experiments (presets/effect-en-theta.yaml), one per (θ, |D|):

    dvc exp run -S theta=0.4 -S train_contrastive.methods.ppdb.max_examples=512 summary
    paracl theta-curve     # -> metrics/theta_curve.{csv,png} and metrics/theta_choice.json

This reads `dvc exp show --json` (every experiment's params and metrics). θ is params.yaml's
`theta`; |D| is `size_of` (the paper's "number of sentences for additional training": the
pairs ppdb trains on, its `max_examples`). The score is `<method>.<metric>` of
metrics/scores.json (the `methods` of metrics/summary.json in a sweep saved before
scores.json). The paper chooses θ and |D| "to maximize metrics on the Dev set", so the
choice is the argmax of a dev metric (`dev_avg`: the mean over the fine-tuned tasks of each
task's dev score, over ppdb's seeds), never of a test score: the test metric (`avg`) is
drawn and written beside it and chooses nothing. An experiment whose summary has the
method's row without the dev metric is an error naming it (it ran no fine-tuned task); one
without the row (queued, failed) is a gap. Experiments with the same (θ, |D|) (a rerun, the
baseline commit beside its experiment) are averaged and counted, not plotted twice; a
method with seeds has their sd (`<metric>_std`), drawn as an error bar.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SCORES = "metrics/scores.json"  # the summary's rows, as dvc.yaml declares them as metrics
SUMMARY = "metrics/summary.json"  # declared before scores.json: what older saved sweeps hold
SIZE_PARAM = "train_contrastive.methods.{method}.max_examples"  # |D|, as a sweep sets it
CHOICE = "theta_choice.json"


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


def _name(rec: dict) -> str:
    return rec.get("name") or rec["data"].get("name") or _rev(rec)


def size_of(params: dict, method: str = "ppdb") -> int | None:
    """|D|, the PPDB paper's "number of sentences for additional training" (§4.2; footnote
    25 caps it in pairs): the most pairs the method's runs train on. Its own max_examples,
    else train_contrastive's, and at most rank_fluency.max_sentences (one pair a ranked
    sentence); None: no cap (every pair)."""
    tc = params.get("train_contrastive") or {}
    entry = (tc.get("methods") or {}).get(method) or {}
    own = entry["max_examples"] if "max_examples" in entry else tc.get("max_examples")
    caps = [own, (params.get("rank_fluency") or {}).get("max_sentences")]
    caps = [int(c) for c in caps if c is not None]
    return min(caps) if caps else None


def _beside_sweep(params: dict, method: str) -> dict:
    """params.yaml less the keys a sweep varies: θ and the keys |D| is read from."""
    out = {k: v for k, v in params.items() if k != "theta"}
    tc = dict(out.get("train_contrastive") or {})
    tc.pop("max_examples", None)
    methods = dict(tc.get("methods") or {})
    if isinstance(methods.get(method), dict):
        methods[method] = {k: v for k, v in methods[method].items() if k != "max_examples"}
    out["train_contrastive"] = {**tc, "methods": methods} if methods else tc
    rank = {k: v for k, v in (out.get("rank_fluency") or {}).items() if k != "max_sentences"}
    out["rank_fluency"] = rank
    return out


def _stale_baselines(exp_show: list | dict, method: str = "ppdb") -> set[str]:
    """Committed baselines whose params.yaml differs from their experiments' in more than
    the swept keys (θ, |D|).

    `dvc exp show` gives a baseline the metrics committed with it. A sweep run on top of a
    preset (`paracl preset effect-en-theta`, not committed) sits on a commit whose metrics
    came from other params (the default pipeline's summary also has a `ppdb` row): that
    baseline is no point of the sweep, whatever θ its params.yaml holds.
    """
    stale = set()
    for rec in _records(exp_show):
        own = _beside_sweep(params_of(rec), method)
        experiments = _records(rec.get("experiments") or [])
        if any(_beside_sweep(params_of(e), method) != own for e in experiments):
            stale.add(_rev(rec))
    return stale


def sweep_records(
    exp_show: list | dict, include_workspace: bool = False, method: str = "ppdb"
) -> Iterator[dict]:
    """The experiment records that are points of the sweep, each rev once.

    The workspace is left out by default: after `dvc exp run` it is a copy of the last
    experiment, which would then count twice. So is a stale baseline (_stale_baselines).
    """
    skip, seen = _stale_baselines(exp_show, method), set()
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


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def points(
    exp_show: list | dict,
    method: str = "ppdb",
    metric: str = "dev_avg",
    include_workspace: bool = False,
) -> list[dict[str, Any]]:
    """(rev, name, theta, size, value, std) for each experiment of the sweep that has both
    θ and the metric; std is the seeds' sd of the metric, or None with one seed."""
    out = []
    for rec in sweep_records(exp_show, include_workspace, method):
        params = params_of(rec)
        entry = (summary_of(rec).get("methods") or {}).get(method) or {}
        if params.get("theta") is None or entry.get(metric) is None:
            continue
        out.append({"rev": _rev(rec), "name": _name(rec), "theta": float(params["theta"]),
                    "size": size_of(params, method), "value": float(entry[metric]),
                    "std": _float(entry.get(f"{metric}_std"))})  # fmt: skip
    return out


def _size_key(size: int | None) -> float:
    return math.inf if size is None else float(size)


def _mean(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def curve(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (θ, |D|), θ ascending then |D|: the mean of the metric, the mean of the
    experiments' seed sds (None without seeds), how many experiments, their names."""
    by_point: dict[tuple, list[dict]] = {}
    for p in pts:
        by_point.setdefault((p["theta"], p.get("size")), []).append(p)
    rows = []
    for theta, size in sorted(by_point, key=lambda k: (k[0], _size_key(k[1]))):
        group = sorted(by_point[theta, size], key=lambda p: p["name"])
        rows.append(
            {
                "theta": theta,
                "size": size,
                "value": sum(p["value"] for p in group) / len(group),
                "std": _mean([p.get("std") for p in group]),
                "n_experiments": len(group),
                "experiments": " ".join(p["name"] for p in group),
            }
        )
    return rows


def _check_dev(metric: str) -> None:
    """θ and |D| are chosen on dev (the paper's Figure 2), never on a test score."""
    if not metric.startswith("dev"):
        raise ValueError(
            f"--metric {metric}: θ and |D| are chosen on a dev score (dev_avg, the PPDB "
            "paper's Figure 2), never on test; a test score is drawn with --test-metric"
        )


def measured(
    exp_show: list | dict, method: str = "ppdb", metric: str = "dev_avg", test: str = "avg"
) -> list[dict[str, Any]]:
    """Each measured experiment of the sweep: (rev, name, theta, size, dev, dev_std, test,
    test_std). An experiment whose summary has the method's row without the dev metric
    is a ValueError naming it; one without the row (queued, failed) is left out."""
    _check_dev(metric)
    out = []
    for rec in sweep_records(exp_show, method=method):
        params = params_of(rec)
        entry = (summary_of(rec).get("methods") or {}).get(method)
        if params.get("theta") is None or not entry:
            continue
        size = size_of(params, method)
        if entry.get(metric) is None:
            where = f"θ {params['theta']}, |D| {size or 'all'}"
            raise ValueError(
                f"experiment {_name(rec)} ({where}) has no {method}.{metric} in {SCORES}: "
                "it ran no fine-tuned task (the dev average needs evaluate.finetune_tasks "
                "and finetune_methods; presets/effect-en-theta.yaml sets them)"
            )
        out.append({"rev": _rev(rec), "name": _name(rec), "theta": float(params["theta"]),
                    "size": size, "dev": float(entry[metric]),
                    "dev_std": _float(entry.get(f"{metric}_std")),
                    "test": _float(entry.get(test)),
                    "test_std": _float(entry.get(f"{test}_std"))})  # fmt: skip
    return out


def choice_rows(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (θ, |D|) as `curve` groups them, with the dev and the test score (each
    a mean over the experiments; test None where one lacks it) and `chosen`: True on the
    argmax of dev alone (the first in (θ, |D|) order on a tie)."""
    dev = curve([{**p, "value": p["dev"], "std": p["dev_std"]} for p in pts])
    test = {
        (r["theta"], r["size"]): r
        for r in curve(
            [{**p, "value": p["test"], "std": p["test_std"]} for p in pts if p["test"] is not None]
        )
    }
    rows = []
    for r in dev:
        t = test.get((r["theta"], r["size"]))
        complete = t is not None and t["n_experiments"] == r["n_experiments"]
        rows.append({**r, "dev": r["value"], "dev_std": r["std"],
                     "test": t["value"] if complete else None,
                     "test_std": t["std"] if complete else None, "chosen": False})  # fmt: skip
    if rows:
        max(rows, key=lambda r: r["dev"])["chosen"] = True
    return rows


def _cell(value: float | None) -> Any:
    return "" if value is None else round(value, 6)


def write_csv(rows: list[dict], path: str | Path, metric: str, test: str) -> None:
    """CSV with columns theta, size (|D|, empty: every pair), <metric>, <metric>_std,
    <test>, <test>_std (empty without seeds or score), n_experiments, experiments, chosen
    (1 on the (θ, |D|) chosen on dev), for `dvc plots show`."""
    from paracl.core.io import atomic_path

    head = ["theta", "size", metric, f"{metric}_std", test, f"{test}_std", "n_experiments",
            "experiments", "chosen"]  # fmt: skip
    with atomic_path(Path(path)) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(head)
        for r in rows:
            writer.writerow([r["theta"], "" if r["size"] is None else r["size"], _cell(r["dev"]),
                             _cell(r["dev_std"]), _cell(r["test"]), _cell(r["test_std"]),
                             r["n_experiments"], r["experiments"], int(r["chosen"])])  # fmt: skip


def choice(rows: list[dict], method: str, metric: str, test: str, grid: dict) -> dict:
    """The (θ, |D|) chosen on dev, as theta_choice.json holds it: its scores, the metric it
    was chosen on, the test score beside it (reported, never chosen on), the grid swept and
    the (θ, |D|) of the grid not measured."""
    best = next(r for r in rows if r["chosen"])
    done = {(r["theta"], r["size"]) for r in rows}
    missing = [{"theta": t, "size": s} for t in grid["theta"] for s in grid["size"]
               if (t, s) not in done]  # fmt: skip
    return {
        "method": method,
        "chosen_on": metric,
        "theta": best["theta"],
        "size": best["size"],
        "size_param": SIZE_PARAM.format(method=method),
        metric: best["dev"],
        f"{metric}_std": best["dev_std"],
        "test_metric": test,
        test: best["test"],
        f"{test}_std": best["test_std"],
        "experiments": best["experiments"],
        "grid": grid,
        "not_measured": missing,
    }


def planned(exp_show: list | dict, method: str = "ppdb") -> list[float]:
    """Every θ of the sweep, measured or not: a curve joins two θ only where no planned
    θ lies between them unmeasured."""
    thetas = {params_of(rec).get("theta") for rec in sweep_records(exp_show, method=method)}
    return sorted(float(t) for t in thetas if t is not None)


def planned_sizes(exp_show: list | dict, method: str = "ppdb") -> list[int | None]:
    """Every |D| of the sweep, measured or not (None: every pair)."""
    sizes = {size_of(params_of(rec), method) for rec in sweep_records(exp_show, method=method)
             if params_of(rec).get("theta") is not None}  # fmt: skip
    return sorted(sizes, key=_size_key)


def baseline(exp_show: list | dict, metric: str) -> float | None:
    """`none`'s metric, the mean over the sweep's experiments (θ does not touch it)."""
    values = [((summary_of(rec).get("methods") or {}).get("none") or {}).get(metric)
              for rec in sweep_records(exp_show)]  # fmt: skip
    values = [float(v) for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _draw(ax, rows: list[dict], grid: list[float], method: str, base: float | None) -> None:
    """One panel: a curve per |D| (a marker ± the seeds' sd per measured θ, joined only
    between neighbours of `grid`) and `none` a dashed line."""
    from paracl.core.plots import measured_curve

    sizes = sorted({r.get("size") for r in rows}, key=_size_key)
    for size in sizes:
        mine = [r for r in rows if r.get("size") == size]
        label = method if len(sizes) == 1 else f"{method}, |D| = {size or 'all'}"
        measured_curve(ax, mine, "theta", grid, label=label)
    if base is not None:
        ax.axhline(base, linestyle="--", color="grey", label="none (untrained)")
    ax.set_xticks(sorted({r["theta"] for r in rows}))
    ax.set_xlabel("θ (keep rules with p(d|s) ≥ θ)")
    ax.grid(alpha=0.3)


def plot(
    rows: list[dict],
    path: str | Path,
    method: str,
    metric: str,
    grid: list[float] = (),
    base: float | None = None,
):
    """One metric against θ (a curve per |D|), `none` a dashed line, so the θ effect is
    seen beside the effect of training at all; nothing is marked chosen (a test score
    chooses nothing: plot_choice marks the dev choice). Returns the (closed) Figure."""
    from paracl.core.plots import png_figure

    with png_figure(path, dpi=120, figsize=(5, 3.5)) as (fig, ax):
        _draw(ax, rows, grid, method, base)
        ax.set_ylabel(f"{metric} ({method})")
        seeded = any(r.get("std") for r in rows)
        ax.set_title(f"{metric} vs θ" + (" (± sd over seeds)" if seeded else ""))
        ax.legend(fontsize=8)
    return fig


def plot_choice(
    rows: list[dict], path: str | Path, method: str, metric: str, test: str, grid: list[float],
    bases: tuple[float | None, float | None] = (None, None),
):  # fmt: skip
    """Dev (left: it chooses) and test (right: reported only) against θ, a curve per |D|,
    the chosen (θ, |D|) circled on both, as the paper's Figure 2 marks its best θ.
    Returns the (closed) Figure."""
    from paracl.core.plots import png_figure

    best = next(r for r in rows if r["chosen"])
    panels = ((metric, "dev", "chooses"), (test, "test", "reported, never chosen on"))
    with png_figure(path, dpi=120, figsize=(9, 3.6), ncols=2) as (fig, axes):
        for ax, (name, key, role), base in zip(axes, panels, bases, strict=True):
            mine = [{**r, "value": r[key], "std": r[f"{key}_std"]} for r in rows
                    if r[key] is not None]  # fmt: skip
            _draw(ax, mine, grid, method, base)
            if best[key] is not None:
                ax.scatter([best["theta"]], [best[key]], s=120, facecolors="none",
                           edgecolors="red", zorder=3,
                           label=f"chosen on dev: θ {best['theta']:g}, "
                                 f"|D| {best['size'] or 'all'}")  # fmt: skip
            ax.set_title(f"{key}: {name} ({role})", fontsize=9)
            ax.set_ylabel(f"{name} ({method})")
            if mine:
                ax.legend(fontsize=7)
            else:  # the sweep's summaries hold no such score
                ax.text(0.5, 0.5, f"no {name}", ha="center", transform=ax.transAxes)
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
    test: str = "avg",
) -> tuple[list[dict], dict]:
    """Write out_dir/theta_curve.csv, .png and theta_choice.json from exp-show data;
    return the rows and the choice (the argmax of the dev metric)."""
    from paracl.core.io import write_json

    rows = choice_rows(measured(exp_show, method, metric, test))
    if not rows:
        raise ValueError(
            f"no experiment has both 'theta' and a {method} row in {SCORES} (run the sweep "
            "first: presets/effect-en-theta.yaml, or dvc exp run --queue -S theta=0.1,0.2,0.3 "
            "&& dvc queue start)"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    grid = {"theta": planned(exp_show, method), "size": planned_sizes(exp_show, method)}
    chosen = choice(rows, method, metric, test, grid)
    write_csv(rows, out_dir / "theta_curve.csv", metric, test)
    write_json(chosen, out_dir / CHOICE)
    bases = (baseline(exp_show, metric), baseline(exp_show, test))
    plot_choice(rows, out_dir / "theta_curve.png", method, metric, test, grid["theta"], bases)
    return rows, chosen
