"""What both evaluate stages write for one (run, task) job: the job's kind, language,
metric and title, the encoder that ran, then the job's scores (or why it was skipped).

One frame for both, so that the embedding jobs (`jobs`, stage `evaluate`) and the
fine-tuning job (`finetune_job`, stage `evaluate_finetune`) write the same JSON without
importing each other: each stage then reruns for its own code only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_json
from paracl.core.models import check_model_dir
from paracl.parts.encoder.embed import describe_encoder
from paracl.parts.evaluation.tasks import EMBEDDING_JOBS, FINETUNE_JOBS, TaskUnavailable, job_info

log = logging.getLogger(__name__)


LISTS = {"evaluate.tasks": EMBEDDING_JOBS, "evaluate.finetune_tasks": FINETUNE_JOBS}


def check_inputs(
    listed_in: str,
    task: str,
    encoder_dir: str | Path,
    train_metrics: str | Path,
    raw_dir: str | Path,
) -> None:
    """A stage's inputs, checked before any model loads: the task is one of its list's
    kind (`listed_in`, a key of LISTS), then the encoder, training metrics and raw data
    exist; one line naming the bad one."""
    if task not in LISTS[listed_in]:
        home = [key for key, jobs in LISTS.items() if task in jobs]
        where = f"it belongs in {home[0]}" if home else f"known: {', '.join(LISTS[listed_in])}"
        raise ParamsError(f"{listed_in}: {task!r} is not one of this stage's jobs ({where})")
    encoder = Path(encoder_dir)
    if not encoder.is_dir():
        raise InputError(f"{encoder}: encoder not found (did train_contrastive write it?)")
    check_model_dir(encoder)
    read_json(train_metrics)  # a dep like the encoder: present and readable
    if not Path(raw_dir).is_dir():
        raise InputError(f"evaluate.raw_dir: {raw_dir}: not found (did the fetch stage run?)")


def job_result(
    method: str,
    task: str,
    encoder_dir: str | Path,
    train_metrics: str | Path | None,
    score: Callable[[], dict],
) -> dict:
    """The job's frame, updated with `score()`; a task whose data is absent offline is a
    result too (`skipped`, score None), so the summary shows why its cell is empty."""
    info = job_info(task)
    result = {"method": method, "task": task, **info,
              "encoder": describe_encoder(encoder_dir, train_metrics)}  # fmt: skip
    try:
        result.update(score())
    except TaskUnavailable as err:
        log.warning("skipped: %s", err)
        result.update(skipped=str(err), score=None, score_std=None, official_split=None)
    return finite(result)


def finite(obj):
    """NaN/inf → None, so the JSON stays valid (a correlation of constant predictions
    is undefined, not a number DVC can diff)."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj
