"""DVC stage train_contrastive@<method>: train one sentence encoder.

    python stages/train_contrastive.py <method>

Reads the method's input artifact (params train_contrastive.methods[<method>]) and writes
models/encoders/<method>/ (a SentenceTransformer dir), metrics/train/<method>.json and
training curves under metrics/train/<method>/ (dvclive TSVs + a PNG).
"""

from __future__ import annotations

import sys
from pathlib import Path

from paracl.device import select_device
from paracl.io import atomic_path, write_json
from paracl.params import ParamsError
from paracl.stage import run
from paracl.training.methods import METHODS, train_method

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
    out_dir = Path("models/encoders") / name
    curves = Path("metrics/train") / name
    history: dict[str, list[tuple[int, float]]] = {}

    from dvclive import Live

    with Live(dir=str(curves), save_dvc_exp=False, dvcyaml=None, report=None) as live:

        def logger(key: str, value: float, step: int) -> None:
            history.setdefault(key, []).append((step, value))
            live.step = step
            live.log_metric(key, value)

        metrics = train_method(
            name,
            cfg["methods"][name],
            cfg,
            params["seed"],
            select_device(params["device"]),
            out_dir,
            DEV[params["lang"]],
            logger,
        )
        _plot(history, curves / "curves.png")
    write_json(metrics, Path("metrics/train") / f"{name}.json")


if __name__ == "__main__":
    run(main)
