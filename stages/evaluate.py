"""Stage evaluate: score one encoder on one embedding job (no training).

    python stages/evaluate.py <run> <task> <encoder dir> <training metrics> <out.json>

dvc.yaml runs it as a matrix over train_contrastive.runs × evaluate.tasks: unsupervised
STS, cosine-threshold PI, JCSE's JACSTS and QAbot. Fine-tuning tasks are the stage
evaluate_finetune's, so that no fine-tuning setting reruns these scores. The encoder is
the sentence-transformers folder train_contrastive wrote; its training metrics name the
base model that ran (carried into the result).
"""

from paracl.core.device import select_device
from paracl.core.io import write_json
from paracl.core.stage import args, run
from paracl.parts.evaluation.job_result import check_inputs
from paracl.stages.evaluate import run_job


def main(params: dict) -> None:
    paths = args("run", "task", "encoder", "train_metrics", "out")
    cfg = {**params["evaluate"], "precision": params["precision"]}  # encoding's autocast
    check_inputs("evaluate.tasks", paths.task, paths.encoder, paths.train_metrics, cfg["raw_dir"])
    device = select_device(params["device"])
    result = run_job(
        paths.run, paths.task, paths.encoder, cfg, params["seed"], device, paths.train_metrics
    )
    write_json(result, paths.out)


if __name__ == "__main__":
    run(main)
