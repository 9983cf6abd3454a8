"""Stage summary: the Table-3-style summary of every evaluation job.

    python stages/summary.py <metrics/eval dir> <summary.json> <summary.md> <scores.json>

Rows: the methods of train_contrastive.methods, each over its runs (one per training
seed, train_contrastive.runs); columns: evaluate.tasks and evaluate.finetune_tasks (only
the runs of evaluate.finetune_runs have those), then the averages and the difference to
`none`. scores.json holds each row's scores alone: what dvc.yaml declares as metrics
(paracl.stages.summary.scores).
"""

from pathlib import Path

from paracl.core.io import ArtifactError, atomic_path, write_json
from paracl.core.params import expand_runs
from paracl.core.stage import args, run
from paracl.stages.summary import build_summary, load_results, run_groups, scores, to_markdown


def main(params: dict) -> None:
    paths = args("eval_dir", "json", "markdown", "scores")
    runs = expand_runs(params["train_contrastive"])  # = params.yaml's (load_params checks)
    ev, cfg = params["evaluate"], params["summary"]
    tasks = ev["tasks"] + ev["finetune_tasks"]
    if not Path(paths.eval_dir).is_dir():  # one missing job is an n/a cell; none is an error
        raise ArtifactError(f"{paths.eval_dir}: not found (did the evaluate stage run?)")
    only = {t: set(ev["finetune_runs"]) for t in ev["finetune_tasks"]}
    results = load_results(Path(paths.eval_dir), list(runs), tasks, only)
    summary = build_summary(results, tasks, cfg["avg_over"], run_groups(runs))
    write_json(summary, paths.json)
    write_json(scores(summary), paths.scores)
    with atomic_path(paths.markdown) as tmp:
        tmp.write_text(to_markdown(summary, cfg["decimals"]), encoding="utf-8")


if __name__ == "__main__":
    run(main)
