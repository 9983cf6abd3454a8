"""Stage evaluate_finetune: fine-tune one encoder on one task and score it, over seeds.

    python stages/evaluate_finetune.py <run> <task> <encoder dir> <training metrics> <out.json>

dvc.yaml runs it as a matrix over evaluate.finetune_runs (the runs of
evaluate.finetune_methods) × evaluate.finetune_tasks: a task head on the encoder's
transformer, trained on a seeded sample of the task's train split (the papers' kind of
score: PPDB paper Table 3, EBSIM). Mixed precision follows the top-level `precision`.
"""

from paracl.core.stage import run
from paracl.stages.evaluate_finetune import Params, main

if __name__ == "__main__":
    run(main, Params)
