"""DVC stage train_contrastive@<run>: train one sentence encoder.

    python stages/train_contrastive.py <run> <encoder dir> <metrics.json> <curves dir>

The run is an entry of train_contrastive.runs (a method and one of its seeds, written by
`paracl expand`); the method is train_contrastive.methods.<method>: its input, its loss,
the loss's own params and the shared keys it sets for itself (paracl.parts.training.methods).
Writes the encoder (a SentenceTransformer folder with its model card), the training
metrics and the training curves (dvclive TSVs + a PNG). `train_contrastive.processes: N`
relaunches it under torchrun on N processes; a killed run resumes from its checkpoint
(paracl.stages.train_contrastive).
"""

from pathlib import Path

from paracl.core.params import ParamsError, RunSettings, expand_runs
from paracl.core.stage import args, run
from paracl.parts.training.methods import method_spec, run_config
from paracl.stages.train_contrastive import run_method


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


if __name__ == "__main__":
    run(main)
