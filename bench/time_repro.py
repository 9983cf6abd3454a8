"""Time `dvc repro` stage by stage: what the default run costs, and where.

Why: DVC records no stage times, and a stage's own log lines come late (roundtrip logs
once, at its end), so the times are taken here, as `dvc repro`'s output arrives: a stage
starts at its "Running stage" line and ends where the next one starts (or the run ends).
Each stage's closing summary line (`<stage>: ...`) rides along. Run it in a fresh work
tree without a DVC cache, on idle cores, in the README's order (`make setup` first):

    python bench/time_repro.py --out results/default/stage_times.json

docs/getting-started.md renders the JSON (`@stage-times`, paracl report).
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
import time
from pathlib import Path

from paracl.core.device import machine
from paracl.core.io import write_json

STAGE = re.compile(r"Running stage '([^']+)':")
SUMMARY = re.compile(r"^\d\d:\d\d:\d\d ([\w@.-]+): (.+)$")


def timed_repro(args: list[str]) -> tuple[list[dict], float]:
    """Run `dvc repro ARGS`, echo its output, and return each stage's wall time."""
    stages: list[dict] = []
    start = time.monotonic()
    proc = subprocess.Popen(["dvc", "repro", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")  # fmt: skip
    for line in proc.stdout:
        sys.stdout.write(line)
        now = time.monotonic() - start
        if match := STAGE.search(line):
            stages.append({"stage": match.group(1), "start_s": round(now, 1), "summary": ""})
        elif stages and (match := SUMMARY.match(line.strip())):
            if match.group(1) == stages[-1]["stage"].split("@")[0]:
                stages[-1]["summary"] = match.group(2)
    if proc.wait():
        raise SystemExit(f"error: dvc repro failed (exit {proc.returncode})")
    total = time.monotonic() - start
    for stage, after in zip(stages, [*stages[1:], {"start_s": total}], strict=True):
        stage["seconds"] = round(after["start_s"] - stage["start_s"], 1)
    return stages, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/default/stage_times.json"))
    parser.add_argument("targets", nargs="*", help="dvc repro's arguments (default: all)")
    args = parser.parse_args()
    stages, total = timed_repro(args.targets)
    write_json({
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "command": " ".join(["dvc repro", *args.targets]),
        "total_s": round(total, 1),
        "stages": stages,
    }, args.out)  # fmt: skip
    print(f"{len(stages)} stages in {total / 60:.1f} min -> {args.out}")


if __name__ == "__main__":
    main()
