"""Does bf16 change what a run concludes? One preset's evaluations in two precisions.

Why: `precision: auto` trains and encodes in bf16 on CPUs with native bf16 (AMX,
AVX512_BF16), about twice as fast as fp32. That is worth it only if a method's score moves
by less than its spread over training seeds. This reads the evaluation JSONs of two runs of
the same preset and seeds, one per precision (`metrics/eval/<run>/<task>.json`, runs
`<method>_s<seed>`), and writes each method's mean ± sd per precision, the difference and
Welch's p between precisions, and each method's Δ vs `none` in both:

    python bench/compare_precision.py --task unsup_sts_en --methods none simcse_unsup \\
        --a fp32=../run-fp32/metrics/eval --b bf16=../run-bf16/metrics/eval \\
        --out results/precision-en/comparison.json

docs/reliability.md renders the JSON (`@precision`, paracl report).
"""

from __future__ import annotations

import argparse
import re
import statistics
from pathlib import Path

from scipy import stats

from paracl.core.io import read_json, write_json

SEEDED = re.compile(r"^(.+)_s\d+$")


def scores(
    eval_dir: Path, task: str, methods: list[str] | None = None
) -> tuple[dict[str, list[float]], dict]:
    """{method: [score of each seed]} of one run's evaluations (of `methods` only, where
    given: a work tree also holds the committed default run's), and the precision record.
    A method's seeds are its `<method>_s<k>` runs; a bare `<method>` counts only where it
    has none (`none`): in a preset's work tree it is the committed default run's."""
    runs = {path.parent.name: path for path in sorted(eval_dir.glob(f"*/{task}.json"))}
    seeded = {SEEDED.sub(r"\1", run) for run in runs if SEEDED.match(run)}
    by_method: dict[str, list[float]] = {}
    ran_in: dict = {}
    for run, path in runs.items():
        method = SEEDED.sub(r"\1", run)
        if (methods and method not in methods) or (run == method and method in seeded):
            continue
        record = read_json(path)
        by_method.setdefault(method, []).append(record["score"])
        ran_in = record.get("ran_in") or ran_in
    if not by_method:
        raise SystemExit(f"error: {eval_dir}: no */{task}.json")
    return by_method, ran_in


def summarise(values: list[float]) -> dict:
    sd = statistics.stdev(values) if len(values) > 1 else None
    return {"mean": statistics.fmean(values), "sd": sd, "n": len(values), "scores": values}


def compare(a: dict[str, list[float]], b: dict[str, list[float]]) -> list[dict]:
    """One row per method both runs scored: each side's summary, b − a, and Welch's p."""
    rows = []
    for method in [m for m in a if m in b]:
        row = {"method": method, "a": summarise(a[method]), "b": summarise(b[method])}
        row["diff"] = row["b"]["mean"] - row["a"]["mean"]
        both_seeded = min(len(a[method]), len(b[method])) > 1
        row["p"] = (float(stats.ttest_ind(b[method], a[method], equal_var=False).pvalue)
                    if both_seeded else None)  # fmt: skip
        for side, runs in (("a", a), ("b", b)):
            if "none" in runs and method != "none":
                row[side]["vs_none"] = row[side]["mean"] - statistics.fmean(runs["none"])
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--a", required=True, help="NAME=EVAL_DIR, e.g. fp32=run/metrics/eval")
    parser.add_argument("--b", required=True, help="NAME=EVAL_DIR, e.g. bf16=run/metrics/eval")
    parser.add_argument("--methods", nargs="*", help="the methods to compare (default: all)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    (name_a, dir_a), (name_b, dir_b) = (s.split("=", 1) for s in (args.a, args.b))
    a, ran_a = scores(Path(dir_a), args.task, args.methods)
    b, ran_b = scores(Path(dir_b), args.task, args.methods)
    out = {"task": args.task, "names": [name_a, name_b], "ran_in": [ran_a, ran_b],
           "rows": compare(a, b)}  # fmt: skip
    write_json(out, args.out)
    print(f"{len(out['rows'])} methods compared -> {args.out}")


if __name__ == "__main__":
    main()
