"""Time the README's commands (`make setup`, `make test`, ...) on this machine, for the
README's time table: each command's wall time, the CPU kind and the commit.

Why: the three times a newcomer plans by differ from one CPU kind to another (llama.cpp
compiles for the CPU it runs on; AVX2, AVX-512 and AMX kernels run at other speeds), so
each is measured, per kind, on a fresh clone and idle cores, and rendered with its machine
and date (`paracl report`, block @time-table). Results of several calls on one machine
merge into one file; `dvc repro` is timed by bench/time_repro.py, whose total this script
reads with --repro.

    python bench/time_commands.py --out results/default/timings-<kind>.json "make setup" "make test"
    python bench/time_commands.py --out results/default/timings-<kind>.json --repro stage_times.json
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import time
from pathlib import Path

from paracl.core.device import machine
from paracl.core.io import read_json, write_json


def timed(command: str) -> float:
    """Run `command` in bash here; its wall seconds (an error if it fails). PYTHONPATH is
    not passed on: it is how this script finds paracl before `make setup` has made a
    venv, and a command must import the clone's own code, as a user's would."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    start = time.monotonic()
    if subprocess.run(["bash", "-c", command], env=env).returncode:
        raise SystemExit(f"error: `{command}` failed")
    return round(time.monotonic() - start, 1)


def commit() -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repro", type=Path, help="bench/time_repro.py's JSON: its total")
    parser.add_argument("commands", nargs="*", help="shell commands, timed one after another")
    args = parser.parse_args()
    data = read_json(args.out) if args.out.is_file() else {"commands": {}}
    data["machine"] = machine()
    when = {"date": datetime.date.today().isoformat(), "commit": commit(),
            "how": "bench/time_commands.py on a fresh clone"}  # fmt: skip
    for command in args.commands:
        data["commands"][command] = {"seconds": timed(command), **when}
        print(f"{command}: {data['commands'][command]['seconds']:.0f} s")
    if args.repro:
        data["commands"]["dvc repro"] = {"seconds": read_json(args.repro)["total_s"], **when}
    write_json(data, args.out)


if __name__ == "__main__":
    main()
