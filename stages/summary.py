"""Stage summary: the Table-3-style summary of every evaluation job.

    python stages/summary.py <metrics/eval dir> <summary.json> <summary.md> <scores.json>

Rows: the methods of train_contrastive.methods, each over its runs (one per training
seed, train_contrastive.runs); columns: evaluate.tasks and evaluate.finetune_tasks (only
the runs of evaluate.finetune_runs have those), then the averages and the difference to
`none`. scores.json holds each row's scores alone: what dvc.yaml declares as metrics
(paracl.stages.summary.scores).
"""

from paracl.core.stage import run
from paracl.stages.summary import Params, main

if __name__ == "__main__":
    run(main, Params)
