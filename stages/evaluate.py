"""Stage evaluate: score one encoder on one task → metrics/eval/<method>/<task>.json.

    python stages/evaluate.py <method> <task>

dvc.yaml runs it as a matrix over evaluate.methods × evaluate.tasks. The encoder is
models/encoders/<method>/ (a sentence-transformers folder written by train_contrastive).
"""

import sys
from pathlib import Path

from paracl.device import select_device
from paracl.evaluation.jobs import JOBS, run_job
from paracl.io import read_json, write_json
from paracl.models import check_model_dir
from paracl.params import ParamsError
from paracl.stage import InputError, run


def main(params: dict) -> None:
    if len(sys.argv) != 3:
        raise ParamsError("usage: python stages/evaluate.py <method> <task>")
    method, task = sys.argv[1], sys.argv[2]
    if task not in JOBS:
        raise ParamsError(f"evaluate: unknown task {task!r} (known: {', '.join(JOBS)})")
    encoder = Path("models/encoders") / method
    if not encoder.is_dir():
        raise InputError(f"{encoder}: encoder not found (did train_contrastive write it?)")
    check_model_dir(encoder)
    train_metrics = Path("metrics/train") / f"{method}.json"  # names the base model that ran
    read_json(train_metrics)  # a dep like the encoder: present and readable
    cfg = params["evaluate"]
    raw = Path(cfg["raw_dir"])
    if not raw.is_dir():
        raise InputError(f"evaluate.raw_dir: {raw}: not found (did the fetch stage run?)")
    device = select_device(params["device"])
    result = run_job(method, task, encoder, cfg, params["seed"], device, train_metrics)
    write_json(result, Path("metrics/eval") / method / f"{task}.json")


if __name__ == "__main__":
    run(main)
