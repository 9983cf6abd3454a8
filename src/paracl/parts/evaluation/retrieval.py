"""QAbot question retrieval (JCSE §4.5, Table 6), as the authors' QAbot_task_eva scores it.

Two-tower dense retrieval: the query and every past question of its pool are embedded
(the `answer` column is never used) and the pool is ranked by cosine similarity to the
query. The paper describes two independent towers; the authors' `main.py` embeds both
sides with the one model, which is what runs here. Their encoder truncates every text to
64 tokens (`input_length=64`), so the encoder does here too (`MAX_LENGTH`). Per pool
(one query each): MRR, MAP, P@1 and P@5 (paracl.parts.evaluation.metrics, ×100, where the
authors print fractions); each then averaged over the 20 pools with equal weight. Ties
in the score keep the pool's row order (the authors' `np.argsort` leaves them
arbitrary). All pools are the same 1142 Q/A pairs, so each question is embedded once.

`max_questions` (a 2-core CPU: ~4 s per encoder per 20 questions of 64 tokens with
gemma-3-270m) keeps every question relevant to some query and a seeded sample of the
others (paracl.parts.evaluation.sample), and removes the rest from every pool: the same
smaller pool for every method, so methods compare, but fewer distractors than the
paper's, so the absolute scores run higher than on the whole pool. null: the whole pool.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paracl.parts.encoder.embed import EmbeddingCache
from paracl.parts.evaluation.jcse_readers import QAbotPool
from paracl.parts.evaluation.metrics import retrieval_metrics
from paracl.parts.evaluation.sample import sample_rows

MAX_LENGTH = 64  # tokens per text, as QAbot_task_eva/main.py
METRICS = ("mrr", "map", "p@1", "p@5")
TITLES = {"mrr": "MRR", "map": "MAP", "p@1": "P@1", "p@5": "P@5"}


def evaluate_qabot(
    cache: EmbeddingCache, pools: list[QAbotPool], max_questions: int | None = None, seed: int = 0
) -> dict:
    """Per-pool retrieval metrics ×100 and their means over the pools."""
    pools, sample = shared_pool_sample(pools, max_questions, seed)
    questions = sorted({q for p in pools for q in p.pool["question"]})
    cache.embed(questions + [p.query for p in pools])  # one batched pass
    per_pool = {}
    for p in pools:
        query = cache.embed([p.query])
        cands = cache.embed(p.pool["question"].tolist())
        scores = _cosine(query, cands)
        labels = p.pool["label"].to_numpy()[None, :]
        per_pool[p.name] = {
            **retrieval_metrics(scores[None, :], labels),
            "pool_size": len(p.pool),
            "relevant": int(labels.sum()),
        }
    means = {m: float(np.mean([r[m] for r in per_pool.values()])) for m in METRICS}
    return {
        "metrics": means,
        "pools": per_pool,
        "queries": len(pools),
        "unique_questions": len(questions),
        "sample": sample,
        "max_length": MAX_LENGTH,
    }


def shared_pool_sample(
    pools: list[QAbotPool], cap: int | None, seed: int
) -> tuple[list[QAbotPool], dict]:
    """The pools cut to every relevant question plus a seeded sample of the others, at
    most `cap` questions in all (never fewer than the relevant ones); the record."""
    questions = sorted({q for p in pools for q in p.pool["question"]})
    relevant = {q for p in pools for q in p.pool.loc[p.pool["label"] == 1, "question"]}
    others = pd.DataFrame({"question": [q for q in questions if q not in relevant]})
    n_others = None if cap is None else max(cap - len(relevant), 0)
    kept, record = sample_rows(others, n_others, seed)
    keep = relevant | set(kept["question"])
    cut = [QAbotPool(p.name, p.query, p.pool[p.pool["question"].isin(keep)].reset_index(drop=True))
           for p in pools]  # fmt: skip
    return cut, {"cap": cap, "seed": seed, "questions": len(keep), "of": len(questions),
                 "relevant_kept": len(relevant), "others": record}  # fmt: skip


def _cosine(query: np.ndarray, cands: np.ndarray) -> np.ndarray:
    q = query[0] / max(np.linalg.norm(query[0]), 1e-12)
    c = cands / np.linalg.norm(cands, axis=1, keepdims=True).clip(min=1e-12)
    return c @ q
