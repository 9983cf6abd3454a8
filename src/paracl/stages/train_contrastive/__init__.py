"""One method's whole training run, as the train_contrastive stage performs it: on one
process or relaunched under torchrun, resumable from checkpoints, with its curves.

On N processes (one per GPU, or CPU processes with gloo) the outputs are the same:
`train_contrastive.processes: N` makes the stage relaunch itself under torchrun (the DVC
cmd stays the same); rank 0 evaluates and writes (paracl.stages.train_contrastive.training.parallel).

Resumable: training state is saved beside the encoder (`<encoder>.partial-<key>/`) every
`checkpoint_every` steps and on SIGTERM (then the stage exits with status 143); a rerun
with the same params and inputs continues from it (paracl.stages.train_contrastive.training.checkpoint).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from pathlib import Path
from typing import ClassVar, Literal

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import atomic_dir
from paracl.core.key_figures import write_metrics
from paracl.core.models import ModelNotFoundError, resolve_model
from paracl.core.params import (
    RunSettings,
    RunWide,
    Section,
    check_value,
    keys_of,
    param,
)
from paracl.core.plots import png_figure
from paracl.core.stage import args
from paracl.parts.losses import LOSSES
from paracl.parts.runs import EXPAND, expand_runs
from paracl.stages.train_contrastive.training import parallel
from paracl.stages.train_contrastive.training.checkpoint import (
    Checkpoint,
    TrainingInterrupted,
    key_on_main,
    run_key,
)
from paracl.stages.train_contrastive.training.dev import DEV_SETS
from paracl.stages.train_contrastive.training.methods import (
    METHOD_SETTINGS,
    MethodSpec,
    method_spec,
    run_config,
    train_method,
)

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


def loss_names() -> list[str]:
    """`none` and the losses of paracl.parts.losses (a method's `loss`)."""
    return ["none", *LOSSES]


class TrainContrastive(Section):
    class Method(Section):
        """One entry of train_contrastive.methods. Its other keys are shared training keys it
        sets for itself (METHOD_SETTINGS, checked as the shared key is) and the loss's own
        params, checked by paracl.stages.train_contrastive.training.methods, which knows each loss."""

        extra_keys: ClassVar[bool] = True
        input: str = param(help="the artifact it trains on (its DVC dep)")
        loss: str = param(help="none, or a loss of paracl.parts.losses", names=loss_names)
        data: str | None = param(None, help="with data: input is the encoder it continues from")
        seeds: list[int] | None = param(None, min=0, help="one run each; null: shared seeds")
        tags: str | None = param(None, help="generated paraphrases of this tag pair only")
        task: str | None = param(
            None, help="train on this evaluation task's train split (input: its file)"
        )

    class Run(Section):
        """One entry of train_contrastive.runs, which `paracl expand` writes (expand_runs)."""

        method: str = param(help="its entry of train_contrastive.methods")
        seed: int | None = param(min=0, help="null: the top-level seed")
        input: str = param(help="its DVC dep (a continued run: the same seed's encoder)")

    methods: dict[str, Method] = param(help="method name -> its entry; evaluate scores each")
    seeds: list[int] | None = param(min=0, help="seeds of a method without its own")
    runs: dict[str, Run] = param(help="methods x seeds, written by `paracl expand`")
    base_model: str
    pooling: Literal["mean", "weighted_mean", "last", "cls", "cls_mlp", "cls_mlp_always"]
    dropout: float | None = param(
        min=0.0,
        max=0.9,
        help="every dropout rate of the base's config; null = the base's own",
    )
    max_seq_length: int = param(min=4, max=4096)
    batch_size: int = param(min=2, help="pairs per batch = the in-batch negatives pool")
    length_grouping: bool = param(help="batches of similar length (less padding)")
    mini_batch_size: int | None = param(min=1, help="GradCache chunk; null = all")
    processes: int = param(min=1, help="training processes (torchrun)")
    checkpoint_every: int | None = param(min=1, help="steps between resumable checkpoints")
    lr: float = param(min=0.0, max=1.0)
    temperature: float = param(min=1e-4, max=10.0)
    epochs: int = param(min=1)
    patience: int = param(min=1, help="early stop after this many epochs w/o dev gain")
    selection: Literal["sts_dev", "dev_loss", "none"] = param(
        help="the weights kept: best STS dev, best dev loss, or the last"
    )
    sts_dev_every: int | None = param(
        min=1, help="sts_dev: score every N steps (SimCSE: 125); null: each epoch"
    )
    dev_loss_examples: int = param(
        min=2, help="dev_loss: training examples held out and scored (at most a tenth)"
    )
    max_grad_norm: float | None = param(
        min=0.0, help="clip the gradient norm (SimCSE's HF Trainer: 1.0); null: no clip"
    )
    max_examples: int | None = param(min=2)
    freeze_embeddings: bool
    train_layers: int | None = param(
        min=1, help="top layers trained (+ final norm), the rest frozen; null = all"
    )
    dev_max_pairs: int | None = param(min=2, help="seeded STS-dev sample")
    prompt: str | None = param(
        help="text put before every sentence (training, dev, saved encoder); null: none"
    )


class Params(RunWide):
    """What stage train_contrastive reads of params.yaml: the run-wide keys and these."""

    train_contrastive: TrainContrastive

    @classmethod
    def check(cls, values: dict) -> None:
        check_train_contrastive(values)


def method_settings(name: str, entry: dict) -> dict:
    """The shared keys `train_contrastive.methods.<name>` sets for itself, checked with the
    shared key's own type and range (one declaration: TrainContrastive's field, or the
    top-level one for `precision`)."""
    shared = keys_of(TrainContrastive) | {"precision": keys_of(RunWide)["precision"]}
    where = f"train_contrastive.methods.{name}."
    return {
        key: check_value(entry[key], shared[key][:2], where + key)
        for key in METHOD_SETTINGS
        if key in entry
    }


def check_train_contrastive(values: dict) -> None:
    """Every method's own settings and its loss's own keys (method_spec), and
    train_contrastive.runs as expand_runs writes it: a stale one would make DVC run other
    runs than the methods say, so it is refused."""
    tc = values["train_contrastive"]
    for name, entry in tc["methods"].items():
        method_settings(name, entry)
        method_spec(name, entry)
    want, have = expand_runs(tc), tc["runs"]
    if list(want.items()) != list(have.items()):
        differs = [n for n in want if have.get(n) != want[n]]
        extra = [n for n in have if n not in want]
        what = (
            f"{differs[0]} {'differs' if differs[0] in have else 'is missing'}"
            if differs
            else (f"{extra[0]} is no method's run" if extra else "its order differs")
        )
        raise ParamsError(
            f"'train_contrastive.runs' is out of date with train_contrastive.methods and seeds "
            f"({what}): run `{EXPAND}` to rewrite it"
        )


log = logging.getLogger(__name__)
# dvc.yaml's metrics of train_contrastive (paracl.core.key_figures): the best dev score
KEY_FIGURES = ("dev_spearman",)

History = dict[str, list[tuple[int, float]]]


def run_method(
    spec: MethodSpec, section: dict, run: RunSettings, encoder: Path, metrics: Path, curves: Path
) -> None:
    """Train `spec` and write the encoder, its metrics JSON and its curves (dvclive TSVs +
    curves.png), relaunching under torchrun when `train_contrastive.processes` > 1.
    `section`: the train_contrastive section as this run sets it (run_config)."""
    cfg = train_config(section, run.precision)
    processes = parallel.env_world_size() if parallel.under_launcher() else cfg["processes"]
    if processes > 1 and not parallel.under_launcher():
        cmd = parallel.relaunch_command(processes, sys.argv)
        log.info("relaunching on %d processes: %s", processes, " ".join(cmd))
        code = _relaunch(cmd)
        if code:
            sys.exit(code)
        return
    seed = spec.seed if spec.seed is not None else run.seed
    dev = DEV_SETS[run.lang]
    with parallel.process_group(run.device) as device:
        checkpoint = _checkpoint(spec, cfg, run.lang, seed, device, encoder)
        try:
            if parallel.is_main():
                _train_and_write(spec, cfg, seed, device, dev, encoder, metrics, curves, checkpoint)
            else:  # the other ranks train in step with rank 0 and write nothing
                train_method(spec, cfg, seed, device, Path(), dev, checkpoint=checkpoint)
        except TrainingInterrupted as err:
            if parallel.is_main():  # every rank stopped at the same step: one line says it
                print(f"interrupted: {err}", file=sys.stderr)
            sys.exit(128 + signal.SIGTERM)


def train_config(section: dict, precision: str) -> dict:
    """The train_contrastive section with the top-level `precision` (unless the method sets
    its own: run_config put it there), which shapes the weights too: the checkpoint key
    and the model card record it with the rest."""
    return {"precision": precision, **section}


def _relaunch(cmd: list[str]) -> int:
    """Run torchrun and wait; a SIGTERM to this process goes on to torchrun, which passes
    it to every rank (each then checkpoints and stops)."""
    proc = subprocess.Popen(cmd)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signum))
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _checkpoint(
    spec: MethodSpec, cfg: dict, lang: str, seed: int, device, encoder: Path
) -> Checkpoint | None:
    """Where this run's resumable state lives (None for loss `none`, which trains nothing;
    `cfg`: train_config's). Rank 0 computes the key (hashing the inputs and starting
    model) and tells the others, and removes checkpoints left by other params or inputs."""
    if spec.loss == "none":
        return None

    def key() -> str:
        start = spec.start
        if start is None:
            try:
                base = spec.settings.get("base_model", cfg["base_model"])  # its own, if set
                start = str(resolve_model(base).path)
            except ModelNotFoundError:
                start = base  # train_method stops on it with the full message
        return run_key(
            spec.name,
            cfg,
            seed=seed,
            lang=lang,
            device_type=device.type,
            processes=parallel.world_size(),
            inputs=[spec.train_path, DEV_SETS[lang], start],
        )

    checkpoint = Checkpoint.beside(encoder, key_on_main(key), cfg["checkpoint_every"])
    if parallel.is_main():
        checkpoint.discard_stale()
    return checkpoint


def _train_and_write(
    spec: MethodSpec,
    cfg: dict,
    seed: int,
    device,
    dev: str,
    encoder: Path,
    metrics_path: Path,
    curves: Path,
    checkpoint: Checkpoint | None,
) -> None:
    history: History = {}
    # the curves go to a temporary directory that replaces the old ones only on success:
    # a run that stops on a bad input (or is killed) leaves the previous curves in place
    with atomic_dir(curves) as tmp, open_live(tmp) as live:

        def logger(key: str, value: float, step: int) -> None:
            history.setdefault(key, []).append((step, value))
            live.step = step
            live.log_metric(key, value)

        metrics = train_method(spec, cfg, seed, device, encoder, dev, logger, checkpoint)
        plot_curves(history, tmp / "curves.png")
    if parallel.world_size() > 1:
        metrics["processes"] = parallel.world_size()
    write_metrics(metrics, metrics_path, KEY_FIGURES)
    if checkpoint is not None:  # every output is written: nothing left to resume
        checkpoint.clear()


def plot_curves(history: History, path: Path) -> None:
    """Training loss and dev Spearman against the step, side by side."""
    with png_figure(path, dpi=80, figsize=(9, 3.2), ncols=2) as (fig, axes):
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


def main(params: dict) -> None:
    paths = args("run", "encoder", "metrics", "curves")
    cfg = params["train_contrastive"]
    runs = expand_runs(cfg)  # what params.yaml's runs hold (load_params refuses a stale list)
    if paths.run not in runs:
        known = ", ".join(runs)
        raise ParamsError(f"train_contrastive.runs has no {paths.run!r} (has: {known})")
    this = runs[paths.run]
    spec = method_spec(this["method"], cfg["methods"][this["method"]], this)
    section, settings = run_config(spec, cfg), RunSettings.of(params)
    run_method(
        spec, section, settings, Path(paths.encoder), Path(paths.metrics), Path(paths.curves)
    )
