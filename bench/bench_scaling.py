"""How the corpus stage scales: workers (local pool vs Ray tasks) and input size (not a test).

The input is the mirrored wiki-en sample (first `--lines` lines) repeated 1×, 4×, 16×;
every copy after the first gets a prefix ("Copy 3: …") so that dedup does not collapse
the copies: the work and the candidate list really grow with the input. Each run is a
fresh subprocess, so its peak RSS is its own: `driver MB` is the stage process (it holds
the deduplicated candidates), `pool MB` the largest local worker (Ray workers run under
the raylet and are not counted; a Ray worker holds one task's shard, like a pool
worker). `cpu s` = CPU time of the driver and its local workers during the stage (not
imports); on a shared machine it is the figure that does not depend on the neighbours.
Ray's CPU (its workers, raylet, GCS) is not in it, so `in/s (cpu)` is not comparable
for Ray rows; wall time includes Ray's start-up (~10 s here).

    python bench/bench_scaling.py                       # 2,000 lines × 1/4/16, cap 200
    python bench/bench_scaling.py --lines 11914 --scales 1 4 --workers 1 2 4
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_seconds() -> float:
    """User+system CPU of this process and its reaped children (local pool workers)."""
    return sum(
        ru.ru_utime + ru.ru_stime
        for ru in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def one_run(source: str, executor: str, workers: int, cap: int, shard_size: int) -> dict:
    """Run the stage once in this process; return wall, CPU and memory figures."""
    from paracl.corpus.pipeline import CorpusConfig, prepare_corpus

    cfg = CorpusConfig(source, "text", "en", 5, 50, 0.99, cap, 42)
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    frame, metrics = prepare_corpus(cfg, workers=workers, shard_size=shard_size, executor=executor)
    wall = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    self_ru = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall": wall,
        "cpu": cpu,
        "driver_mb": self_ru.ru_maxrss / 1024,
        "pool_mb": kids.ru_maxrss / 1024,
        "sentences_in": metrics["sentences_in"],
        "candidates": metrics["langdetect_checked"] + metrics["dropped"]["over_max_sentences"],
        "kept": len(frame),
    }


def make_input(sample: Path, lines: int, scale: int, out: Path) -> Path:
    base = sample.read_bytes().decode("utf-8", "replace").splitlines()[:lines]
    with open(out, "w", encoding="utf-8") as f:
        for copy in range(scale):
            prefix = f"Copy {copy}: " if copy else ""
            f.writelines(f"{prefix}{line}\n" for line in base)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=os.environ.get("PARACL_DATA_MIRROR"))
    ap.add_argument("--lines", type=int, default=2000, help="lines of the sample per copy")
    ap.add_argument("--scales", nargs="+", type=int, default=[1, 4, 16])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--executors", nargs="+", default=["local", "ray"])
    ap.add_argument("--max-sentences", type=int, default=200)
    ap.add_argument("--shard-size", type=int, default=500)
    ap.add_argument("--one", nargs=3, metavar=("SOURCE", "EXECUTOR", "WORKERS"), help="internal")
    args = ap.parse_args()
    if args.one:
        source, executor, workers = args.one
        res = one_run(source, executor, int(workers), args.max_sentences, args.shard_size)
        print("RESULT " + json.dumps(res))
        return
    mirror = Path(args.mirror) if args.mirror else REPO.parent / "shared" / "data"
    sample = mirror / "wiki-en" / "wiki1m_for_simcse.txt"
    print(f"cores: {os.cpu_count()}; load average at start: {os.getloadavg()}")
    print("| input | executor | workers | sentences in | wall s | cpu s | in/s (wall) |", end="")
    print(" in/s (cpu) | driver MB | pool MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales:
            src = make_input(sample, args.lines, scale, Path(tmp) / f"x{scale}.txt")
            for executor in args.executors:
                for workers in args.workers:
                    cmd = [sys.executable, __file__, "--one", str(src), executor, str(workers)]
                    cmd += ["--max-sentences", str(args.max_sentences)]
                    cmd += ["--shard-size", str(args.shard_size)]
                    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
                    if done.returncode or not line:
                        print(f"| {scale}x | {executor} | {workers} | failed: {done.stderr[-300:]}")
                        continue
                    r = json.loads(line[0][7:])
                    print(
                        f"| {scale}x | {executor} | {workers} | {r['sentences_in']} | "
                        f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['sentences_in'] / r['wall']:.0f} | "
                        f"{r['sentences_in'] / r['cpu']:.0f} | {r['driver_mb']:.0f} | "
                        f"{r['pool_mb']:.0f} |",
                        flush=True,
                    )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
