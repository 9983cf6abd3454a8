"""Compare two runs of the default pipeline: which outputs are the same bytes, and how far
the summary's scores moved.

Why: the same params and seed give the same bytes on one kind of machine, but not across
CPU kinds (torch and llama.cpp pick other float kernels on AVX-512 than on AVX2). This
measures by how much, from the two runs' dvc.lock files (each output's md5) and their
metrics/summary.json, and writes the JSON that docs/reliability.md renders:

    python bench/compare_runs.py --a-lock A/dvc.lock --a-summary A/metrics/summary.json \\
        --a-machine "AMD EPYC, 2 cores" --b-lock B/dvc.lock --b-summary B/metrics/summary.json \\
        --b-machine "Intel Xeon (AVX-512, AMX), 2 cores" --out results/cross-cpu/comparison.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from paracl.core.io import write_json


def output_hashes(lock: Path) -> dict[str, tuple[str, str]]:
    """{output path: (stage, md5)} in dvc.lock's stage order."""
    stages = yaml.safe_load(lock.read_text(encoding="utf-8"))["stages"]
    return {o["path"]: (stage, o.get("md5", "")) for stage, v in stages.items()
            for o in v.get("outs", [])}  # fmt: skip


def compare_outputs(a: Path, b: Path) -> dict:
    """Counts of outputs both runs wrote, the same and different, and the first stage (in
    dvc.lock's order) one of whose outputs differs."""
    ha, hb = output_hashes(a), output_hashes(b)
    both = [p for p in hb if p in ha]
    differ = [p for p in both if ha[p][1] != hb[p][1]]
    return {
        "outputs_compared": len(both),
        "outputs_same": len(both) - len(differ),
        "outputs_different": len(differ),
        "first_stage_different": hb[differ[0]][0] if differ else None,
        "stages_different": sorted({hb[p][0].split("@")[0] for p in differ}),
    }


def compare_scores(a: dict, b: dict) -> list[dict]:
    """Each method's average and task scores (×100) in both runs."""
    rows = []
    for method, row in b["methods"].items():
        old = a["methods"].get(method)
        if old is None:
            continue
        tasks = {t: [old["tasks"][t]["score"], cell["score"]] for t, cell in row["tasks"].items()
                 if t in old["tasks"]}  # fmt: skip
        rows.append({"method": method, "avg": [old["avg"], row["avg"]], "tasks": tasks})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for side in ("a", "b"):
        ap.add_argument(f"--{side}-lock", type=Path, required=True, help="the run's dvc.lock")
        ap.add_argument(f"--{side}-summary", type=Path, required=True, help="its summary.json")
        ap.add_argument(f"--{side}-machine", required=True, help="the CPU that ran it")
    ap.add_argument("--out", type=Path, required=True, help="the comparison JSON")
    args = ap.parse_args()
    summaries = [
        json.loads(p.read_text(encoding="utf-8")) for p in (args.a_summary, args.b_summary)
    ]
    result = {
        "machines": [args.a_machine, args.b_machine],
        **compare_outputs(args.a_lock, args.b_lock),
        "scores": compare_scores(*summaries),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(result, args.out)
    print(f"wrote {args.out}: {result['outputs_different']} of {result['outputs_compared']} "
          f"outputs differ, from {result['first_stage_different']}")  # fmt: skip


if __name__ == "__main__":
    main()
