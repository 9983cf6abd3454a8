"""The train_sts_scorer stage: STS-B (en) / JSTS (ja) → the SIM scorer, best of n seeds on dev.

`train_sts_scorer.kind` picks a bi-encoder (offline default) or the paper's
cross-encoder; the kind is saved with the model, so tag and generate_paraphrases load
either. `epochs: null` takes the kind's default, declared once below (EPOCHS). The model,
training and metrics are shared parts (paracl.parts.sts_scorer).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Literal

from paracl.core.device import select_device
from paracl.core.io import atomic_dir
from paracl.core.key_figures import write_metrics
from paracl.core.languages import profile
from paracl.core.models import resolve_model
from paracl.core.params import ParamsError, RunSettings, RunWide, Section, param
from paracl.core.stage import args

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --

# `epochs: null` per kind: the cross-encoder's is sentence-transformers' STS-B recipe; the
# bi-encoder's (that recipe also trains 4) is the CPU default measured in
# docs/stages/roundtrip.md
EPOCHS = {"bi_encoder": 1, "cross_encoder": 4}
_EPOCHS_HELP = ", ".join(f"{kind} {n}" for kind, n in EPOCHS.items())


class TrainStsScorer(Section):
    kind: Literal["bi_encoder", "cross_encoder"] = param(help="scorer kind; paper: cross_encoder")
    base_model: str
    n_seeds: int = param(min=1, max=100)
    epochs: float | None = param(
        min=0.0, help=f"null: the kind's ({_EPOCHS_HELP}); 0: bi_encoder as it is (zero-shot)"
    )
    batch_size: int = param(min=1)
    lr: float = param(min=0.0, max=1.0)
    max_length: int = param(min=8)
    max_train_pairs: int | None = param(min=1)


class Params(RunWide):
    """What stage train_sts_scorer reads of params.yaml: the run-wide keys and these."""

    train_sts_scorer: TrainStsScorer


log = logging.getLogger("train_sts_scorer")


def epochs_of(cfg: dict) -> float:
    """The section's epochs, or its kind's default (EPOCHS) where it is null."""
    return EPOCHS[cfg["kind"]] if cfg["epochs"] is None else cfg["epochs"]


def train_scorer(cfg: dict, run: RunSettings, data: str, out: str) -> dict:
    """Train the scorer (`cfg`: the train_sts_scorer section) on the `lang` set under
    `data` (STS-B for en, JSTS for ja), save the best seed's to `out` (atomically); return
    the metrics."""
    from paracl.parts import sts_scorer  # torch: loaded when the stage trains

    lang, seed = run.lang, run.seed
    cfg = {**cfg, "epochs": epochs_of(cfg)}
    if cfg["kind"] == "cross_encoder" and cfg["epochs"] == 0:
        raise ParamsError("'train_sts_scorer.epochs' must be > 0 for kind cross_encoder")
    splits = sts_scorer.read_splits(data, lang)
    train = sts_scorer.sample_pairs(splits["train"], cfg["max_train_pairs"], seed)
    base = resolve_model(cfg["base_model"])
    device = str(select_device(run.device))
    started = time.perf_counter()
    best = sts_scorer.train_best_of_seeds(
        cfg["kind"], base, train, splits["dev"], cfg, seed, device, run.precision
    )
    test = sts_scorer.correlations(
        sts_scorer.predict(best.model, splits["test"].pairs()), splits["test"].score
    )
    with atomic_dir(out) as tmp:
        info = {"base_model": base.model_id, "seed": best.seed}
        sts_scorer.save_scorer(best.model, cfg["kind"], tmp, info)
    log.info(
        "best seed %d: dev spearman %.2f, test spearman %.2f (%.0f s)",
        best.seed,
        best.dev["spearman"],
        test["spearman"],
        time.perf_counter() - started,
    )
    return sts_scorer.run_metrics(cfg, lang, base, splits, train, best, test)


# dvc.yaml's metrics (paracl.core.key_figures): the best seed's dev score
KEY_FIGURES = ("dev.spearman",)


def main(params: dict) -> None:
    paths = args("stsb", "jsts", "scorer", "metrics")
    # dvc.yaml passes every language's set (a dep each): this language's is the folder that
    # holds its STS dev set (STS-B for English, JGLUE for Japanese)
    dev = Path(profile(params["lang"]).sts_dev)
    data = next((d for d in (paths.stsb, paths.jsts) if dev.is_relative_to(d)), None)
    if data is None:
        raise ParamsError(f"lang {params['lang']!r}: its STS dev set {dev} is in neither of "
                          f"the stage's inputs ({paths.stsb}, {paths.jsts}; dvc.yaml)")  # fmt: skip
    metrics = train_scorer(params["train_sts_scorer"], RunSettings.of(params), data, paths.scorer)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
