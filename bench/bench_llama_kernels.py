"""The round trip on two llama.cpp builds, alternating (not a test; run by hand).

    python bench/bench_llama_kernels.py --n 24 --threads 2 --rounds 2 \\
        --build avx2=<site-packages of one build> --build dispatch=<site-packages of another>

Each `--build NAME=DIR` names a folder that holds a `llama_cpp` package (a virtualenv's
site-packages); everything else comes from this interpreter. Each run is a child process
(a process holds one libllama) that runs the roundtrip stage's work as
bench/bench_roundtrip.py does (gemma-3-270m, en → de → en, paracl's batched decoding, the
default grid) on the same sentences; the builds take turns, `--rounds` times each. Prints
JSON: each build's CPU backend module and features, seconds per run, and how many of the
candidates differ from the first build's (other kernels may round differently).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def child(args: argparse.Namespace) -> None:
    """One timed round trip on the llama_cpp found first on sys.path; JSON to stdout."""
    import llama_cpp
    import torch
    from bench_roundtrip import sentences

    from paracl.parts.llama_batch import load_cpu_backend
    from paracl.parts.translate import Sampling, load_translator, round_trip

    torch.set_num_threads(args.threads)
    module = load_cpu_backend()
    texts = sentences(args.n)
    loaded: dict = {}
    cpu = torch.device("cpu")
    fwd = load_translator("google/gemma-3-270m", 0, cpu, "en", "de", loaded=loaded)
    bwd = load_translator("google/gemma-3-270m", 1, cpu, "de", "en", loaded=loaded)
    settings = [Sampling(20, 0.7), Sampling(30, 0.5)]
    ids = [str(i) for i in range(len(texts))]
    start = time.perf_counter()
    out = round_trip(
        fwd, bwd, ids, texts, settings, seed=0, batch_size=32, max_new_tokens=64, length_ratio=1.5
    )
    seconds = time.perf_counter() - start
    report = {
        "llama_cpp": str(Path(llama_cpp.__file__).parent),
        "module": module,
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "seconds": round(seconds, 2),
        "paraphrases": out["paraphrase"].tolist(),
    }
    print(json.dumps(report))


def run_build(site: str, args: argparse.Namespace) -> dict:
    """The child on the llama_cpp under `site` (put first on sys.path)."""
    code = (
        f"import sys; sys.path[:0] = [{site!r}, {str(Path(__file__).parent)!r}]; "
        "import bench_llama_kernels as b; b.child(b.parse())"
    )
    argv = [sys.executable, "-c", code, "--n", str(args.n), "--threads", str(args.threads)]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"build at {site} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=24, help="sentences")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp and torch threads")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each build, in turn")
    parser.add_argument("--build", action="append", default=[], help="NAME=SITE_PACKAGES")
    return parser.parse_args(argv)


def main() -> None:
    args = parse()
    builds = dict(b.split("=", 1) for b in args.build)
    if len(builds) < 2:
        raise SystemExit("--build NAME=DIR: give two builds (or more) to compare")
    runs: dict[str, list[dict]] = {name: [] for name in builds}
    for _ in range(args.rounds):
        for name, site in builds.items():
            runs[name].append(run_build(site, args))
    first = runs[next(iter(builds))][0]["paraphrases"]
    report: dict = {"n_sentences": args.n, "threads": args.threads, "builds": {}}
    for name, done in runs.items():
        seconds = [r["seconds"] for r in done]
        texts = done[0]["paraphrases"]
        report["builds"][name] = {
            "module": done[0]["module"],
            "system_info": done[0]["system_info"],
            "seconds": seconds,
            "median_s": statistics.median(seconds),
            "candidates": len(texts),
            "differ_from_first_build": sum(a != b for a, b in zip(texts, first, strict=True)),
            "same_across_rounds": all(r["paraphrases"] == texts for r in done),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
