"""The model card (README.md) of an encoder folder: what it is and how to load it.

Short and ours rather than sentence-transformers' generated card, which wants hub and
`datasets` metadata. Written by the training stage, which runs before evaluation, so it
holds the training dev score and points to metrics/eval/<method>/ for the rest. No
timestamps or versions: a DVC rerun with the same inputs writes the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

# The base models the papers train (train_contrastive.base_model of the paper presets).
PAPER_BASES = {"bert-base-uncased": "English", "rinna/japanese-roberta-base": "Japanese"}
POOLING_WORDS = {
    "mean": "mean of the token states (padding masked)",
    "weightedmean": "position-weighted mean of the token states (token i weighs i; SGPT)",
    "lasttoken": "the last token's state",
    "cls": "the first ([CLS]) token's state",
}


def model_card(
    *,
    method: str,
    description: str,
    citation: str,
    load_path: str,
    base: dict[str, Any],
    model: SentenceTransformer,
    dev: dict[str, Any],
    train_max_seq_length: int | None = None,
    data: str | None = None,
    examples: int | None = None,
    params: dict[str, Any] | None = None,
    training: dict[str, Any] | None = None,
) -> str:
    """Markdown for `model` (the inference model as saved, at its saved max_seq_length).

    `params`/`training`/`data` None: nothing was trained (method `none`). `params` is the
    record the card prints (methods.card_params: the train config, the run's seed), not
    the whole params. `dev`: score, file and pairs of the training stage's dev score."""
    length = f"{model.max_seq_length} tokens (saved; what SentenceTransformer truncates at)"
    if train_max_seq_length is not None and training is not None:
        length += f"; training truncated at {train_max_seq_length}"
    rows = _summary(method, description, citation, base, model, length, dev, data, examples, params)
    if training:
        rows.append(("training", ", ".join(f"{k} {v}" for k, v in training.items())))
    lines = [
        f"# paracl encoder `{method}`",
        "",
        "A sentence encoder written by paracl's `train_contrastive` stage. Loaded as shown",
        "below it gives exactly the embeddings that the `evaluate` stage scored.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in rows),
        "",
    ]
    if params:
        lines += _params_section(params)
    lines += _evaluation_and_loading(method, model, load_path)
    return "\n".join(lines)


def _summary(
    method: str,
    description: str,
    citation: str,
    base: dict[str, Any],
    model: SentenceTransformer,
    length: str,
    dev: dict[str, Any],
    data: str | None,
    examples: int | None,
    params: dict[str, Any] | None,
) -> list[tuple[str, str]]:
    """The card's table but its training row: the method, its paper, base model, data,
    module stack, pooling, `length` (max_seq_length) and dev score."""
    base_id = base.get("id", "unknown")
    source = "; ".join(str(base[k]) for k in ("source", "note") if base.get(k))
    paper_base = (
        f"yes ({PAPER_BASES[base_id]})"
        if base_id in PAPER_BASES
        else "no: the papers use " + " / ".join(f"{k} ({v})" for k, v in PAPER_BASES.items())
    )
    return [
        ("method", f"`{method}`: {description}"),
        ("paper", citation or 'none: the papers\' "w/o additional training" row'),
        ("base model", f"`{base_id}`" + (f" ({source})" if source else "")),
        ("the paper's base model", paper_base),
        ("training data", f"`{data}`, {examples} examples" if data else "none (not trained)"),
        ("modules", " → ".join(type(m).__name__ for m in model)),
        ("pooling", _pooling(model) + _mlp_note(params)),
        ("max_seq_length", length),
        ("dev score", f"{dev['score']} ({_dev_words(dev)})"),
    ]


def _params_section(params: dict[str, Any]) -> list[str]:
    """The params that shaped the encoder, as YAML."""
    return [
        "## Training parameters",
        "",
        "params.yaml `train_contrastive` (and the top-level `seed`) as this encoder used them:",
        "",
        "```yaml",
        *(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in params.items()),
        "```",
        "",
    ]


def _evaluation_and_loading(method: str, model: SentenceTransformer, load_path: str) -> list[str]:
    """Where the scores are, and how to load the encoder."""
    return [
        "## Evaluation",
        "",
        f"Scores are in `metrics/eval/{method}/` (one JSON per task) and `metrics/summary.md`.",
        "The `evaluate` stage runs after this training stage, so this card cannot hold them.",
        "",
        "## How to load",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "",
        f'model = SentenceTransformer("{load_path}")',
        'embeddings = model.encode(["A man is playing a guitar.", "Someone plays music."])',
        "```",
        "",
        *_automodel(model, load_path),
    ]


def _pooling(model: SentenceTransformer) -> str:
    pools = [m for m in model if isinstance(m, Pooling)]
    words = ", ".join(POOLING_WORDS.get(str(p.pooling_mode), str(p.pooling_mode)) for p in pools)
    if any(isinstance(m, Normalize) for m in model):
        words += ", then L2-normalised"
    return words or "none"


def _mlp_note(params: dict[str, Any] | None) -> str:
    if params and params.get("pooling") == "cls_mlp_always":
        return " (SimCSE's MLP on [CLS], in training and in the embedding)"
    if params and params.get("pooling") == "cls_mlp":
        return (
            " (trained with SimCSE's MLP on [CLS]: not part of the embedding, saved as"
            " the transformer's pooler where it has one, as SimCSE converts its checkpoints;"
            " an MLP no step trained is not saved)"
        )
    return ""


def _dev_words(dev: dict[str, Any]) -> str:
    return (f"Spearman ×100 of cosine on `{dev['file']}`, {dev['pairs']} pairs; scored on "
            "this saved model")  # fmt: skip


def _automodel(model: SentenceTransformer, load_path: str) -> list[str]:
    """The transformers-only recipe, when the stack is one that it reproduces exactly."""
    mods = list(model)
    plain = (
        len(mods) in (2, 3)
        and isinstance(mods[0], Transformer)
        and isinstance(mods[1], Pooling)
        and mods[1].pooling_mode in ("mean", "cls")
        and all(isinstance(m, Normalize) for m in mods[2:])
    )
    if not plain:
        return [
            "With transformers alone: `AutoModel.from_pretrained(path)` gives the token states",
            "only; this module stack needs `SentenceTransformer(path)` for the same embeddings.",
            "",
        ]
    if mods[1].pooling_mode == "mean":
        pool = [
            'mask = batch["attention_mask"].unsqueeze(-1).float()',
            "embeddings = (states * mask).sum(1) / mask.sum(1)  # mean pooling",
        ]
    else:
        pool = ["embeddings = states[:, 0]  # [CLS] pooling"]
    if len(mods) == 3:
        pool.append("embeddings = torch.nn.functional.normalize(embeddings, dim=-1)  # Normalize")
    return [
        "With transformers alone (the same embeddings):",
        "",
        "```python",
        "import torch",
        "from transformers import AutoModel, AutoTokenizer",
        "",
        f'tokenizer = AutoTokenizer.from_pretrained("{load_path}")',
        f'encoder = AutoModel.from_pretrained("{load_path}").eval()',
        'sentences = ["A man is playing a guitar.", "Someone plays music."]',
        "batch = tokenizer(sentences, padding=True, truncation=True,",
        f'                  max_length={model.max_seq_length}, return_tensors="pt")',
        "with torch.no_grad():",
        "    states = encoder(**batch).last_hidden_state",
        *pool,
        "```",
        "",
    ]
