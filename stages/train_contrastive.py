"""DVC stage train_contrastive@<method>: train one sentence encoder.

    python stages/train_contrastive.py <method>

Reads the method's input artifact (params train_contrastive.methods[<method>]) and writes
models/encoders/<method>/ (a SentenceTransformer dir), metrics/train/<method>.json and
training curves under metrics/train/<method>/ (dvclive TSVs + a PNG).

On N processes (one per GPU, or CPU processes with gloo), the same outputs:

    torchrun --nproc_per_node N stages/train_contrastive.py <method>

or `train_contrastive.processes: N` in params.yaml, which makes this script relaunch
itself that way (so the DVC cmd stays the same). Rank 0 evaluates and writes; see
paracl.training.parallel.

Resumable: training state is saved to models/encoders/<method>.partial-<key>/ every
`checkpoint_every` steps and on SIGTERM (then the stage exits with status 143); a rerun
with the same params and inputs continues from it (paracl.training.checkpoint).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from pathlib import Path

from paracl.io import atomic_dir, atomic_path, write_json
from paracl.models import ModelNotFoundError, resolve_model
from paracl.params import ParamsError
from paracl.stage import InputError, run
from paracl.training import parallel
from paracl.training.checkpoint import Checkpoint, TrainingInterrupted, key_on_main, run_key
from paracl.training.methods import METHODS, train_method

log = logging.getLogger("train_contrastive")

DEV = {"en": "data/raw/stsbenchmark/sts-dev.csv", "ja": "data/raw/jglue/jsts-v1.3/valid-v1.3.json"}


def _plot(history: dict[str, list[tuple[int, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, key in zip(axes, ("train/loss", "dev/spearman"), strict=True):
        points = history.get(key, [])
        if points:
            ax.plot(
                [s for s, _ in points],
                [v for _, v in points],
                marker="." if len(points) < 20 else None,
            )
        ax.set_title(key)
        ax.set_xlabel("step")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=80, metadata={"Software": None})
    plt.close(fig)


def main(params: dict) -> None:
    if len(sys.argv) != 2:
        raise ParamsError("usage: python stages/train_contrastive.py <method>")
    name = sys.argv[1]
    cfg = params["train_contrastive"]
    if name not in cfg["methods"]:
        raise ParamsError(
            f"train_contrastive.methods has no {name!r} (has: {', '.join(cfg['methods'])})"
        )
    if name not in METHODS:
        raise ParamsError(
            f"train_contrastive.methods.{name}: unknown method (known: {', '.join(METHODS)})"
        )
    if not isinstance(cfg["methods"][name], str):
        raise ParamsError(f"train_contrastive.methods.{name} must be the input artifact's path")
    processes = parallel.env_world_size() if parallel.under_launcher() else cfg["processes"]
    if processes > 1 and not parallel.under_launcher():
        cmd = parallel.relaunch_command(processes, sys.argv)
        log.info("relaunching on %d processes: %s", processes, " ".join(cmd))
        code = _relaunch(cmd)
        if code:
            sys.exit(code)
        return
    with parallel.process_group(params["device"]) as device:
        checkpoint = _checkpoint(name, cfg, params, device)
        try:
            if parallel.is_main():
                _train(name, cfg, params, device, checkpoint)
            else:  # the other ranks train in step with rank 0 and write nothing
                train_method(
                    name,
                    cfg["methods"][name],
                    cfg,
                    params["seed"],
                    device,
                    Path(),
                    DEV[params["lang"]],
                    checkpoint=checkpoint,
                )
        except TrainingInterrupted as err:
            if parallel.is_main():  # every rank stopped at the same step: one line says it
                print(f"interrupted: {err}", file=sys.stderr)
            sys.exit(128 + signal.SIGTERM)


def _relaunch(cmd: list[str]) -> int:
    """Run torchrun and wait; a SIGTERM to this process goes on to torchrun, which passes
    it to every rank (each then checkpoints and stops)."""
    proc = subprocess.Popen(cmd)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signum))
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _checkpoint(name: str, cfg: dict, params: dict, device) -> Checkpoint | None:
    """Where this run's resumable state lives (None for `none`, which trains nothing).
    Rank 0 computes the key (hashing the inputs and starting model) and tells the others,
    and removes checkpoints left by other params or inputs."""
    if METHODS[name].family == "none":
        return None

    def key() -> str:
        if name == "jcse_two_stage":
            start = cfg["jcse_two_stage"]["init"]
        else:
            try:
                start = str(resolve_model(cfg["base_model"]).path)
            except ModelNotFoundError:
                start = cfg["base_model"]  # train_method stops on it with the full message
        return run_key(
            name,
            cfg,
            seed=params["seed"],
            lang=params["lang"],
            device_type=device.type,
            processes=parallel.world_size(),
            inputs=[cfg["methods"][name], DEV[params["lang"]], start],
        )

    checkpoint = Checkpoint.beside(
        Path("models/encoders") / name, key_on_main(key), cfg["checkpoint_every"]
    )
    if parallel.is_main():
        checkpoint.discard_stale()
    return checkpoint


def open_live(curves: Path):
    """dvclive's logger for the training curves; a clear error in a git repository
    without commits (dvclive 3.49 asks git for HEAD before checking that one exists)."""
    from dvclive import Live
    from scmrepo.exceptions import SCMError

    try:
        return Live(dir=str(curves), save_dvc_exp=False, dvcyaml=None, report=None)
    except SCMError as err:
        raise InputError(
            f"{Path.cwd()}: dvclive needs a git repository with at least one commit ({err}); "
            "commit first, e.g. `git add -A && git commit -m init`"
        ) from None


def _train(name: str, cfg: dict, params: dict, device, checkpoint: Checkpoint | None) -> None:
    out_dir = Path("models/encoders") / name
    curves = Path("metrics/train") / name
    history: dict[str, list[tuple[int, float]]] = {}

    # the curves go to a temporary directory that replaces the old ones only on success:
    # a run that stops on a bad input (or is killed) leaves the previous curves in place
    with atomic_dir(curves) as tmp, open_live(tmp) as live:

        def logger(key: str, value: float, step: int) -> None:
            history.setdefault(key, []).append((step, value))
            live.step = step
            live.log_metric(key, value)

        metrics = train_method(
            name,
            cfg["methods"][name],
            cfg,
            params["seed"],
            device,
            out_dir,
            DEV[params["lang"]],
            logger,
            checkpoint,
        )
        _plot(history, tmp / "curves.png")
    if parallel.world_size() > 1:
        metrics["processes"] = parallel.world_size()
    write_json(metrics, Path("metrics/train") / f"{name}.json")
    if checkpoint is not None:  # every output is written: nothing left to resume
        checkpoint.clear()


if __name__ == "__main__":
    run(main)
