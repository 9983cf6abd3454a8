"""Stage evaluate_finetune: fine-tune one encoder on one task and score it, over seeds.

    python stages/evaluate_finetune.py <run> <task> <encoder dir> <training metrics> <out.json>

dvc.yaml runs it as a matrix over evaluate.finetune_runs (the runs of
evaluate.finetune_methods) × evaluate.finetune_tasks: a task head on the encoder's
transformer, trained on a seeded sample of the task's train split (the papers' kind of
score: PPDB paper Table 3, EBSIM). Mixed precision follows the top-level `precision`.
"""

from paracl.core.device import select_device
from paracl.core.io import write_json
from paracl.core.stage import args, run
from paracl.parts.evaluation.job_result import check_inputs
from paracl.stages.evaluate_finetune import run_finetune_job


def main(params: dict) -> None:
    paths = args("run", "task", "encoder", "train_metrics", "out")
    cfg = {**params["evaluate"], "precision": params["precision"]}  # fine-tuning's autocast
    check_inputs(
        "evaluate.finetune_tasks", paths.task, paths.encoder, paths.train_metrics, cfg["raw_dir"]
    )
    device = select_device(params["device"])
    result = run_finetune_job(
        paths.run, paths.task, paths.encoder, cfg, params["seed"], device, paths.train_metrics
    )
    write_json(result, paths.out)


if __name__ == "__main__":
    run(main)
