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
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from paracl.io import atomic_path, write_json
from paracl.params import ParamsError
from paracl.stage import InputError, run
from paracl.training import parallel
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
        code = subprocess.run(cmd, check=False).returncode
        if code:
            sys.exit(code)
        return
    with parallel.process_group(params["device"]) as device:
        if parallel.is_main():
            _train(name, cfg, params, device)
        else:  # the other ranks train in step with rank 0 and write nothing
            train_method(
                name, cfg["methods"][name], cfg, params["seed"], device, Path(), DEV[params["lang"]]
            )


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


def _train(name: str, cfg: dict, params: dict, device) -> None:
    out_dir = Path("models/encoders") / name
    curves = Path("metrics/train") / name
    history: dict[str, list[tuple[int, float]]] = {}

    with open_live(curves) as live:

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
        )
        _plot(history, curves / "curves.png")
    if parallel.world_size() > 1:
        metrics["processes"] = parallel.world_size()
    write_json(metrics, Path("metrics/train") / f"{name}.json")


if __name__ == "__main__":
    run(main)
