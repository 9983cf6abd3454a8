"""The intermediate classifier's head, kept beside its encoder, and the classifier scored.

Why: STILTs carries the encoder into each target task and drops the classifier (Phang et
al.'s `from_state_dict`), but where the intermediate task is itself a target task (MNLI
in the round-trip paper's §6), the paper does not fine-tune it again: it scores the
intermediate classifier ("transfer fine-tuning 後のモデルを評価する", §6.1).
train_intermediate then writes the head's weights (every weight outside the transformer:
transformers' `classifier`, or a causal LM's `score`) and its class order next to the
saved encoder; evaluate_finetune puts them back on the encoder and scores the result.
Classes are matched by name, so the head's order (the intermediate data's task) need not
be the scored task's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer

from paracl.core.errors import InputError
from paracl.core.io import atomic_path, read_json, write_json
from paracl.parts.encoder.embed import transformer_dir
from paracl.parts.evaluation.metrics import METRICS
from paracl.parts.evaluation.tasks import TaskData
from paracl.parts.finetune import tuning

HEAD_WEIGHTS = "intermediate_head.safetensors"  # in the encoder's folder
HEAD_INFO = "intermediate_head.json"  # its class order and what the head reads


def head_state(model) -> dict[str, torch.Tensor]:
    """The weights of a transformers sequence classifier outside its transformer (the
    classifier; the pooler is the transformer's and is saved with the encoder)."""
    base = next((n for n, m in model.named_children() if m is model.base_model), None)
    if base is None:
        raise InputError("the intermediate head is saved for a transformers classifier only")
    return {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()
            if not k.startswith(base + ".")}  # fmt: skip


def save_head(model, encoder_dir: str | Path, labels: tuple[str, ...], reads: str) -> dict:
    """Write the classifier's head and its class order into `encoder_dir` (train_intermediate:
    the encoder folder's temporary copy, published with it by save_encoder's `also`);
    returns what the metrics record."""
    encoder_dir = Path(encoder_dir)
    state = head_state(model)
    with atomic_path(encoder_dir / HEAD_WEIGHTS) as tmp:
        save_file(state, str(tmp))
    info = {"labels": list(labels), "head": reads, "weights": sorted(state)}
    write_json(info, encoder_dir / HEAD_INFO)
    return {"file": HEAD_WEIGHTS, **info}


def load_with_head(encoder_dir: str | Path, task) -> tuple:
    """The encoder at `encoder_dir` with its saved head, as `task`'s classifier: (model,
    tokenizer, the head's info, each head class's index among `task.labels`)."""
    encoder_dir = Path(encoder_dir)
    if not (encoder_dir / HEAD_INFO).is_file():
        raise InputError(
            f"{encoder_dir / HEAD_INFO}: no intermediate head (train_intermediate saves "
            "it where train_intermediate.same_task names the task: rerun the arm)"
        )
    info = read_json(encoder_dir / HEAD_INFO)
    if sorted(info["labels"]) != sorted(task.labels or ()):
        raise InputError(
            f"{encoder_dir / HEAD_INFO}: the head's classes {info['labels']} are not "
            f"task {task.name}'s {list(task.labels or ())}"
        )
    tokenizer = AutoTokenizer.from_pretrained(transformer_dir(encoder_dir))
    model, _ = tuning.task_model(encoder_dir, tokenizer, task, "last_token")
    state = load_file(str(encoder_dir / HEAD_WEIGHTS))
    if sorted(state) != sorted(head_state(model)):
        raise InputError(
            f"{encoder_dir / HEAD_WEIGHTS}: weights {sorted(state)} do not fit the "
            f"classifier's head {sorted(head_state(model))}"
        )
    model.load_state_dict(state, strict=False)
    to_task = np.array([task.labels.index(label) for label in info["labels"]])
    return model, tokenizer, info, to_task


def score_with_head(encoder_dir: str | Path, data: TaskData, cfg, device) -> dict:
    """The saved classifier's scores on `data`'s test split and further sets (the task's
    metrics, `tuning.report_metrics`), with no training: {"test", "eval_sets", "head"}."""
    model, tokenizer, info, to_task = load_with_head(encoder_dir, data.task)
    model.to(device)
    metrics = tuning.report_metrics(data)

    def scores(df: pd.DataFrame) -> dict[str, float]:
        pred = to_task[tuning.predict(model, tokenizer, df, cfg, device, regression=False)]
        gold = tuning.task_targets(df, data, "eval").numpy()
        return {m: float(METRICS[m](pred, gold)) for m in metrics}

    sets = {name: scores(df) for name, df in data.eval_sets.items()}
    return {"test": scores(data.test), "eval_sets": sets, "head": info["head"]}
