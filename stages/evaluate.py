"""Stage evaluate: score one encoder on one task.

    python stages/evaluate.py <method> <task> <encoder dir> <training metrics> <out.json>

dvc.yaml runs it as a matrix over the methods of train_contrastive.methods × evaluate.tasks.
The encoder is the sentence-transformers folder train_contrastive wrote; its training
metrics name the base model that ran (carried into the result).
"""

from pathlib import Path

from paracl.device import select_device
from paracl.errors import InputError
from paracl.evaluation.jobs import JOBS, run_job
from paracl.io import read_json, write_json
from paracl.models import check_model_dir
from paracl.params import ParamsError
from paracl.stage import args, run


def main(params: dict) -> None:
    paths = args("method", "task", "encoder", "train_metrics", "out")
    if paths.task not in JOBS:
        raise ParamsError(f"evaluate: unknown task {paths.task!r} (known: {', '.join(JOBS)})")
    encoder = Path(paths.encoder)
    if not encoder.is_dir():
        raise InputError(f"{encoder}: encoder not found (did train_contrastive write it?)")
    check_model_dir(encoder)
    read_json(paths.train_metrics)  # a dep like the encoder: present and readable
    cfg = {**params["evaluate"], "precision": params["precision"]}  # fine-tuning's autocast
    raw = Path(cfg["raw_dir"])
    if not raw.is_dir():
        raise InputError(f"evaluate.raw_dir: {raw}: not found (did the fetch stage run?)")
    device = select_device(params["device"])
    result = run_job(
        paths.method, paths.task, encoder, cfg, params["seed"], device, Path(paths.train_metrics)
    )
    write_json(result, paths.out)


if __name__ == "__main__":
    run(main)
