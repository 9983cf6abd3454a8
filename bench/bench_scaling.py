"""How the corpus stage scales: workers (local pool vs Ray tasks) and input size (not a test).

The input is the mirrored wiki-en sample (first `--lines` lines) repeated 1×, 4×, 16×;
every copy after the first gets a prefix ("Copy 3: …") so that dedup does not collapse
the copies: the work and the candidate list really grow with the input. Each run is a
fresh subprocess, so its peak RSS is its own: `driver MB` is the stage process (it should
stay flat as the input grows: dedup spills hashes to disk, langdetect reads one window
of texts), `pool MB` the largest local worker (Ray workers run under
the raylet and are not counted; a Ray worker holds one task's shard, like a pool
worker). `cpu s` = CPU time of the driver and its local workers during the stage (not
imports); on a shared machine it is the figure that does not depend on the neighbours.
Ray's CPU (its workers, raylet, GCS) is not in it, so `in/s (cpu)` is not comparable
for Ray rows; wall time includes Ray's start-up (~10 s here).

    python bench/bench_scaling.py                       # 2,000 lines × 1/4/16, cap 200
    python bench/bench_scaling.py --lines 11914 --scales 1 4 --workers 1 2 4

`--stage ppdb_substitute` (CPU stage: processes / Ray tasks) and `--stage rank_fluency`
(model stage: one in-process model locally, `workers` Ray actors with Ray) run the real
stage scripts (`stages/<stage>.py` main) in a scratch directory on the first
`--sentences` sentences of `--corpus` repeated 1×, 4×, 16× (new ids per copy, so the
work grows with the input). ppdb_substitute uses the mirror's PPDB sample; rank_fluency
gets the candidates that dictionary makes for those sentences, scored with `--model`
(default: params.yaml's LM) and no `max_sentences` cap. `in` counts corpus sentences
(ppdb_substitute) or candidates (rank_fluency); `driver MB` is the stage process's peak
RSS (it should stay flat as the input grows: the stages stream).

    python bench/bench_scaling.py --stage ppdb_substitute --sentences 2000
    python bench/bench_scaling.py --stage rank_fluency --sentences 50 --scales 1 4 16
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
    from paracl.parts.corpus.pipeline import CorpusConfig, prepare_corpus

    cfg = CorpusConfig(source, "text", "en", 5, 50, 0.99, cap, 42)
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        metrics = prepare_corpus(
            cfg, Path(tmp) / "sentences.parquet", workers, shard_size, executor
        )
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
        "kept": metrics["kept"],
    }


def _stage(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"stage_{name}", REPO / "stages" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stage_params(stage: str, executor: str, workers: int, args: argparse.Namespace) -> dict:
    """params.yaml with the engine, shard size (and model) of this run."""
    from paracl.schema import load_params

    params = load_params(REPO / "params.yaml")
    params.update(executor=executor, workers=workers, model_workers=workers, device="cpu")
    if stage == "ppdb_substitute":
        cfg = params["ppdb_substitute"]
        cfg["dictionary"]["en"] = {"format": "ppdb-sample", "path": str(args.dictionary)}
    else:
        cfg = params["rank_fluency"]
        cfg["max_sentences"] = None
        if args.model:
            cfg["model"]["en"] = args.model
    params["lang"] = "en"
    cfg["shard_size"] = args.shard_size
    return params


def stage_argv(stage: str) -> list[str]:
    """`stages/<stage>.py args…` as dvc.yaml's cmd runs it (these stages have no ${})."""
    import yaml

    cmd = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"][stage]["cmd"].split()
    return cmd[1:]


def one_stage_run(stage: str, workdir: str, executor: str, workers: int, args) -> dict:
    """Run stages/<stage>.py main in `workdir` (inputs already there), with dvc.yaml's
    paths; figures as one_run."""
    import json as _json

    params = stage_params(stage, executor, workers, args)
    module = _stage(stage)
    sys.argv = stage_argv(stage)
    metrics_path = next(a for a in reversed(sys.argv) if a.endswith(".json"))
    os.chdir(workdir)
    cpu0 = cpu_seconds()
    start = time.perf_counter()
    module.main(params)
    wall = time.perf_counter() - start
    cpu = cpu_seconds() - cpu0
    metrics = _json.loads(Path(metrics_path).read_text())
    n_in = metrics["sentences"] if stage == "ppdb_substitute" else metrics["candidates_scored"]
    return {
        "wall": wall,
        "cpu": cpu,
        "driver_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "pool_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "sentences_in": n_in,
    }


def make_stage_input(stage: str, args, scale: int, workdir: Path) -> None:
    """The stage's input artifact in `workdir`: the corpus head, or its candidates,
    repeated `scale` times with new ids."""
    import pandas as pd

    from paracl.core import schemas
    from paracl.core.io import iter_batches, write_parquet

    frames, held = [], 0
    for batch in iter_batches(args.corpus, batch_size=4096, schema=schemas.CORPUS):
        frames.append(batch)
        held += len(batch)
        if held >= args.sentences:
            break
    head = pd.concat(frames, ignore_index=True).iloc[: args.sentences]
    if stage == "rank_fluency":
        from paracl.stages.ppdb_substitute import RuleIndex, candidate_rows
        from paracl.stages.ppdb_substitute.ppdb_rules import read_dictionary

        rules = read_dictionary(args.dictionary, "ppdb-sample").rules
        index = RuleIndex(rules[rules["prob"] >= 0.3].reset_index(drop=True), "en", 6)
        head = pd.DataFrame(list(candidate_rows(head, index, 10)))
        schema, out = schemas.PPDB_CANDIDATES, "data/ppdb/candidates.parquet"
    else:
        schema, out = schemas.CORPUS, "data/corpus/sentences.parquet"
    copies = [head.assign(id=head["id"] + f"-c{copy}") for copy in range(scale)]
    write_parquet(pd.concat(copies, ignore_index=True), workdir / out, schema)


def stage_bench(args: argparse.Namespace) -> None:
    """--stage ppdb_substitute | rank_fluency: the table of main(), for a real stage."""
    print(f"cores: {os.cpu_count()}; load average at start: {os.getloadavg()}")
    print(f"stage: {args.stage}; shard_size {args.shard_size}; {args.sentences} sentences × scale")
    unit = "sentences in" if args.stage == "ppdb_substitute" else "candidates in"
    print(f"| input | executor | workers | {unit} | wall s | cpu s | in/s (wall) |", end="")
    print(" in/s (cpu) | driver MB | pool MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales:
            workdir = Path(tmp) / f"x{scale}"
            make_stage_input(args.stage, args, scale, workdir)
            for executor in args.executors:
                for workers in args.workers:
                    if args.stage == "rank_fluency" and executor == "local" and workers > 1:
                        continue  # a model stage runs one in-process model locally
                    cmd = [sys.executable, __file__, "--stage", args.stage]
                    cmd += ["--one-stage", str(workdir), executor, str(workers)]
                    cmd += ["--shard-size", str(args.shard_size)]
                    cmd += ["--dictionary", str(args.dictionary)]
                    cmd += ["--model", args.model] if args.model else []
                    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                    _print_row(done, scale, executor, workers)
    print(f"load average at end: {os.getloadavg()}")


def _print_row(done: subprocess.CompletedProcess, scale: int, executor: str, workers: int):
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if done.returncode or not line:
        print(f"| {scale}x | {executor} | {workers} | failed: {done.stderr[-300:]}")
        return
    r = json.loads(line[0][7:])
    print(
        f"| {scale}x | {executor} | {workers} | {r['sentences_in']} | "
        f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['sentences_in'] / r['wall']:.0f} | "
        f"{r['sentences_in'] / r['cpu']:.0f} | {r['driver_mb']:.0f} | "
        f"{r['pool_mb']:.0f} |",
        flush=True,
    )


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
    ap.add_argument(
        "--stage",
        default="prepare_corpus",
        choices=("prepare_corpus", "ppdb_substitute", "rank_fluency"),
    )
    ap.add_argument("--corpus", type=Path, default=REPO / "data/corpus/sentences.parquet")
    ap.add_argument("--sentences", type=int, default=2000, help="corpus sentences per copy")
    ap.add_argument("--dictionary", type=Path, default=None, help="PPDB sample (mirror)")
    ap.add_argument("--model", default=None, help="rank_fluency LM (default: params.yaml)")
    ap.add_argument("--one-stage", nargs=3, metavar=("DIR", "EXECUTOR", "WORKERS"))
    args = ap.parse_args()
    if args.stage != "prepare_corpus":
        if args.dictionary is None:
            mirror = Path(args.mirror) if args.mirror else REPO.parent / "shared" / "data"
            args.dictionary = mirror / "ppdb" / "ppdb-sample.tsv"
        if args.one_stage:
            workdir, executor, workers = args.one_stage
            res = one_stage_run(args.stage, workdir, executor, int(workers), args)
            print("RESULT " + json.dumps(res))
            return
        stage_bench(args)
        return
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
                    _print_row(done, scale, executor, workers)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
