"""DVC stage train_contrastive@<method>: train one sentence encoder.

    python stages/train_contrastive.py <method> <encoder dir> <metrics.json> <curves dir>

The method is the entry train_contrastive.methods.<method> of params.yaml: its input,
its loss and the loss's own params (paracl.training.methods). Writes the encoder (a
SentenceTransformer folder with its model card), the training metrics and the training
curves (dvclive TSVs + a PNG). `train_contrastive.processes: N` relaunches it under
torchrun on N processes; a killed run resumes from its checkpoint (paracl.training.run).
"""

from pathlib import Path

from paracl.params import ParamsError
from paracl.stage import args, run
from paracl.training.methods import method_spec
from paracl.training.run import run_method


def main(params: dict) -> None:
    paths = args("method", "encoder", "metrics", "curves")
    methods = params["train_contrastive"]["methods"]
    if paths.method not in methods:
        known = ", ".join(methods)
        raise ParamsError(f"train_contrastive.methods has no {paths.method!r} (has: {known})")
    spec = method_spec(paths.method, methods[paths.method])
    run_method(spec, params, Path(paths.encoder), Path(paths.metrics), Path(paths.curves))


if __name__ == "__main__":
    run(main)
