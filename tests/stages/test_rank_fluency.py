"""Perplexity scoring (batched, padded, bucketed) and the rank_fluency stage."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from stage_helpers import run_stage

from paracl.core import schemas
from paracl.core.io import read_metadata, read_parquet, write_parquet
from paracl.schema import load_params
from paracl.stages.rank_fluency import PerplexityScorer, length_batches

REPO = Path(__file__).resolve().parents[2]
SENTENCES = [
    "the cat sat on the mat .",
    "a man is playing a guitar on the stage in the afternoon sun near the old harbour .",
    "two dogs .",
    "東京は日本の首都である。",
]


@pytest.fixture(scope="module")
def scorer(tiny_gpt2) -> PerplexityScorer:
    return PerplexityScorer(tiny_gpt2, "cpu", batch_size=8, max_batch_tokens=4096)


def test_perplexity_matches_hand_computation(scorer, tiny_gpt2):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval()
    text = SENTENCES[0]
    ids = [tok.bos_token_id] + tok(text)["input_ids"]  # GPT-2 adds no BOS itself
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    nll = []
    for t in range(1, len(ids)):
        row = logits[t - 1]
        log_z = math.log(sum(math.exp(v) for v in row.tolist()))
        nll.append(log_z - row[ids[t]].item())
    expected = math.exp(sum(nll) / len(nll))
    assert scorer.encode(text) == ids
    assert scorer.score([text])[0] == pytest.approx(expected, rel=1e-4)


def test_padding_invariance(scorer):
    batched = scorer.score(SENTENCES)
    alone = scorer.score_one_by_one(SENTENCES)
    assert len(length_batches([len(scorer.encode(s)) for s in SENTENCES], 8, 4096)) == 1
    np.testing.assert_allclose(batched, alone, rtol=1e-5)
    assert np.all(np.isfinite(batched)) and np.all(batched > 1)


def test_length_batches_respect_limits():
    lengths = [5, 50, 7, 6, 49, 8, 200]
    batches = length_batches(lengths, batch_size=2, max_batch_tokens=100)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches[0] == [6]  # longer than the budget: alone
    for batch in batches:
        assert len(batch) <= 2
        if len(batch) > 1:
            assert len(batch) * max(lengths[i] for i in batch) <= 100
    assert batches[1] == [1, 4]  # similar lengths together


def _candidates(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    counts = pd.Series([r[0] for r in rows]).value_counts()
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "text": [r[1] for r in rows],
            "candidate": [r[2] for r in rows],
            "rule_sources": [["x"] for _ in rows],
            "rule_targets": [["y"] for _ in rows],
            "rule_probs": [[0.5] for _ in rows],
            "n_candidates": [int(counts[r[0]]) for r in rows],
        }
    )


def _params(model: Path, max_sentences: int | None) -> dict:
    return {
        **load_params(REPO / "params.yaml"),  # run_stage expands every dvc.yaml stage
        "seed": 0,
        "lang": "en",
        "device": "cpu",
        "executor": "local",
        "ray_address": None,
        "workers": 1,
        "model_workers": 1,
        "gpus_per_model_worker": 1.0,
        "rank_fluency": {
            "model": {"en": str(model), "ja": str(model)},
            "batch_size": 4,
            "max_batch_tokens": {"en": 512, "ja": 512},
            "max_sentences": max_sentences,
            "shard_size": 2,
        },
    }


def _write_rules() -> None:
    """The rule table rank_fluency also reads (ppdb_substitute's metrics ride on it)."""
    rules = schemas.PPDB_RULES.empty_table().to_pandas()
    write_parquet(rules, "data/ppdb/rules.parquet", schemas.PPDB_RULES, {"metrics": {}})


def test_rank_fluency_stage_keeps_lowest_perplexity(tmp_path, monkeypatch, tiny_gpt2, scorer):
    monkeypatch.chdir(tmp_path)
    rows = [
        ("s1", "the cat sat .", "the cat sat on the mat ."),
        ("s1", "the cat sat .", "mat the on sat cat the ."),
        ("s1", "the cat sat .", "the dog sat on the mat ."),
        ("s2", "two dogs run .", "two dogs are running ."),
        ("s2", "two dogs run .", "dogs two running are ."),
        ("s3", "a b .", "a c ."),
    ]
    cands = _candidates(rows)
    write_parquet(cands, "data/ppdb/candidates.parquet", schemas.PPDB_CANDIDATES, {"theta": 0.3})
    _write_rules()
    run_stage("rank_fluency", _params(tiny_gpt2, max_sentences=2))
    pairs = read_parquet("data/ppdb/pairs.parquet", schemas.PPDB_PAIRS)
    ppl = scorer.score([r[2] for r in rows])
    assert pairs.id.tolist() == ["s1", "s2"]  # s3 is beyond max_sentences
    for sid, got, got_ppl in zip(pairs.id, pairs.paraphrase, pairs.perplexity, strict=True):
        mine = [i for i, r in enumerate(rows) if r[0] == sid]
        best = min(mine, key=lambda i: ppl[i])
        assert got == rows[best][2]
        assert got_ppl == pytest.approx(ppl[best], rel=1e-5)
    metrics = json.loads(Path("metrics/ppdb.json").read_text())
    assert (metrics["pairs"], metrics["candidates_scored"], metrics["theta"]) == (2, 5, 0.3)
    assert metrics["model"]["source"] == "local-dir"
    assert read_metadata("data/ppdb/pairs.parquet")["model"]["id"] == str(tiny_gpt2)


def test_rank_fluency_stage_empty_candidates(tmp_path, monkeypatch, tiny_gpt2):
    monkeypatch.chdir(tmp_path)
    empty = pd.DataFrame(columns=schemas.PPDB_CANDIDATES.names)
    write_parquet(empty, "data/ppdb/candidates.parquet", schemas.PPDB_CANDIDATES)
    _write_rules()
    run_stage("rank_fluency", _params(tiny_gpt2, max_sentences=None))
    assert len(read_parquet("data/ppdb/pairs.parquet", schemas.PPDB_PAIRS)) == 0
    metrics = json.loads(Path("metrics/ppdb.json").read_text())
    assert metrics["pairs"] == 0 and "no candidates" in metrics["notes"][0]


def _shuffled(words: list[str], seed: int = 0) -> list[str]:
    out = list(words)
    random.Random(seed).shuffle(out)
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    "model_id,sentences",
    [
        (
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            [
                "The city council approved the new budget on Monday after a long debate.",
                "He was born in London and studied physics at the University of Oxford.",
            ],
        ),
        (
            "google/gemma-3-270m",
            [
                "The city council approved the new budget on Monday after a long debate.",
                "東京は日本の首都であり、人口が最も多い都市である。",
                "猫は午後の日差しの中でマットの上に座っていた。",
            ],
        ),
    ],
)
def test_gguf_models_tokenise_and_rank_sensibly(model_id, sentences):
    """A GGUF-converted tokenizer that mangles text would not tell word salad apart."""
    from paracl.core.models import resolve_model

    model = resolve_model(model_id)
    scorer = PerplexityScorer(model.path, "cpu", batch_size=8)
    for text in sentences:
        ids = scorer.encode(text)
        decoded = scorer.tokenizer.decode(ids, skip_special_tokens=True)
        assert decoded.strip() == text  # the tokenizer round-trips the text
        assert len(ids) < len(text.encode("utf-8"))  # real subwords, not bytes
        # the document start the model was trained on, not a chat marker (<|im_start|>)
        assert scorer.tokenizer.convert_ids_to_tokens(ids[0]) in ("<|endoftext|>", "<bos>")
    shuffled = [
        " ".join(_shuffled(t.split(" "))) if " " in t else "".join(_shuffled(list(t)))
        for t in sentences
    ]
    ppl = scorer.score(sentences + shuffled)
    n = len(sentences)
    for i in range(n):
        if sentences[i].isascii():  # plain English prose is no surprise (193 with the
            assert ppl[i] < 100, (sentences[i], ppl[i])  # chat marker as start token)
        assert ppl[n + i] > 3 * ppl[i], (sentences[i], ppl[i], ppl[n + i])
