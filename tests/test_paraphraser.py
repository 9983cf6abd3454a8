"""Tag-controlled paraphraser: tag tokens, early stopping, length window, and the stages
tag → train_paraphraser → generate_paraphrases on tiny models (empty and non-empty sets)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch
from stage_helpers import run_stage
from test_roundtrip import TEXTS, own_params, write_corpus
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl import schemas
from paracl.io import read_parquet, write_parquet
from paracl.roundtrip import paraphraser, tagging

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def bart(tiny_bart):
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart).eval()
    paraphraser.add_tag_tokens(tok, model)
    return tok, model


def tagged_frame(n_train: int = 6, n_dev: int = 2, n_test: int = 2) -> pd.DataFrame:
    rows = []
    for split, n in (("train", n_train), ("dev", n_dev), ("test", n_test)):
        for i in range(n):
            text = TEXTS[i % len(TEXTS)]
            rows.append(
                {
                    "id": f"{split}-{i}",
                    "candidate": 0,
                    "text": text,
                    "paraphrase": text.replace("the", "a"),
                    "sim": 96.0,
                    "bleu": 30.0,
                    "sim_tag": "<SIM95>",
                    "bleu_tag": "<BLEU30>",
                    "split": split,
                }
            )
    df = pd.DataFrame(rows)
    df["candidate"] = df["candidate"].astype("int32")
    return df


def test_tag_tokens_are_single_special_tokens(tiny_bart):
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    before = len(tok)
    assert paraphraser.add_tag_tokens(tok, model) == 14
    assert len(tok) == before + 14
    assert model.get_input_embeddings().weight.shape[0] >= len(tok)
    ids = tok(paraphraser.tagged_input("<SIM95><BLEU0_5>", "the cat"), add_special_tokens=False)[
        "input_ids"
    ]
    assert ids[:2] == tok.convert_tokens_to_ids(["<SIM95>", "<BLEU0_5>"])
    assert paraphraser.add_tag_tokens(tok, model) == 0  # idempotent


@pytest.mark.parametrize("n,expected", [(0, (0, 0)), (4, (3, 6)), (10, (8, 15)), (3, (3, 4))])
def test_length_window(n, expected):
    assert paraphraser.length_window(n, 0.75, 1.5) == expected


def test_generation_respects_length_window(bart):
    tok, model = bart
    texts = TEXTS[:4]
    out, counts = paraphraser.generate(
        model, tok, texts, "<SIM95><BLEU20>", num_beams=4, batch_size=3
    )
    for text, n_out in zip(texts, counts, strict=True):
        n_in = len(tok(text, add_special_tokens=False)["input_ids"])
        assert math.ceil(0.75 * n_in) <= n_out <= math.floor(1.5 * n_in)
    assert all(tag not in o for o in out for tag in tagging.ALL_TAGS)


def test_generation_is_deterministic(bart):
    tok, model = bart
    a = paraphraser.generate(model, tok, TEXTS[:2], "<SIM70><BLEU40>", num_beams=3)
    b = paraphraser.generate(model, tok, TEXTS[:2], "<SIM70><BLEU40>", num_beams=3)
    assert a == b


def test_early_stopping_after_patience_epochs_without_gain(bart):
    tok, model = bart
    df = tagged_frame()
    kwargs = dict(batch_size=4, max_length=64, seed=0, device=torch.device("cpu"))
    # lr 0: the dev loss never improves after epoch 1 → stop at epoch 1 + patience
    history = paraphraser.train(
        model,
        tok,
        df[df.split == "train"],
        df[df.split == "dev"],
        lr=0.0,
        max_epochs=10,
        patience=2,
        **kwargs,
    )
    assert [h["epoch"] for h in history] == [1, 2, 3]
    # a real learning rate lowers the training loss on this tiny set
    history = paraphraser.train(
        model,
        tok,
        df[df.split == "train"],
        df[df.split == "dev"],
        lr=1e-2,
        max_epochs=4,
        patience=5,
        **kwargs,
    )
    assert history[-1]["train_loss"] < history[0]["train_loss"]


def _scorer(tiny_bert, path: Path) -> None:
    from sentence_transformers.cross_encoder import CrossEncoder

    torch.manual_seed(0)
    CrossEncoder(str(tiny_bert), num_labels=1, max_length=64).save_pretrained(str(path))


def _params(**overrides) -> dict:
    params = own_params()
    params["device"] = "cpu"
    params["train_paraphraser"].update({"max_epochs": 2, "batch_size": 4, "max_length": 64})
    params["generate_paraphrases"].update({"num_beams": 3, "max_sentences": 3, "batch_size": 2})
    for section, values in overrides.items():
        params[section].update(values)
    return params


def test_pipeline_on_empty_set(tmp_path, monkeypatch, tiny_bert):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    _scorer(tiny_bert, Path("models/sts_scorer"))
    cands = pd.DataFrame(
        {
            "id": ["a", "a", "b"],
            "candidate": [0, 1, 0],
            "text": ["the cat sat .", "the cat sat .", "x y"],
            "pivot": ["", "", ""],
            "paraphrase": ["zq wv !", "", "p q"],
            "forward": "k20_T3",
            "backward": "k20_T3",
        }
    )
    cands["candidate"] = cands["candidate"].astype("int32")
    write_parquet(cands, "data/roundtrip/candidates.parquet", schemas.ROUNDTRIP_CANDIDATES)
    params = _params()
    run_stage("tag", params)
    metrics = json.loads(Path("metrics/roundtrip/tag.json").read_text())
    assert metrics["n_candidates"] == 3 and metrics["n_empty"] == 1 and metrics["n_scored"] == 2
    assert metrics["n_high_quality"] == 0 and metrics["n_empty_cells"] == 48
    assert len(read_parquet("data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)) == 0
    assert Path("metrics/roundtrip/candidates_heatmap.png").stat().st_size > 0

    run_stage("train_paraphraser", params)
    info = json.loads(Path("models/paraphraser/paracl_paraphraser.json").read_text())
    assert info["trained"] is False and info["stand_in"] is True
    run_stage("generate_paraphrases", params)
    out = read_parquet("data/paraphraser/generated.parquet", schemas.GENERATED_PARAPHRASES)
    assert len(out) == 0
    assert json.loads(Path("metrics/roundtrip/generate.json").read_text())["n_generated"] == 0


def test_pipeline_trains_and_generates_with_requested_tags(tmp_path, monkeypatch, tiny_bert):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    _scorer(tiny_bert, Path("models/sts_scorer"))
    write_parquet(tagged_frame(), "data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)
    params = _params()
    run_stage("train_paraphraser", params)
    metrics = json.loads(Path("metrics/roundtrip/paraphraser.json").read_text())
    assert metrics["trained"] and metrics["epochs_run"] == 2 and metrics["test_loss"] is not None
    run_stage("generate_paraphrases", params)
    out = read_parquet("data/paraphraser/generated.parquet", schemas.GENERATED_PARAPHRASES)
    assert len(out) == 3 * 3
    assert set(out["tags"]) == set(params["generate_paraphrases"]["tags"])
    for n_in, n_out in zip(out["n_input_tokens"], out["n_output_tokens"], strict=True):
        assert math.ceil(0.75 * n_in) <= n_out <= math.floor(1.5 * n_in)
    assert len(list(Path("metrics/roundtrip/heatmaps/generated").glob("*.csv"))) == 3
    out_dir = Path("data/paraphraser/generated.parquet")  # a shard directory
    first = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    run_stage("generate_paraphrases", params)
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == first


def test_generate_rejects_bad_tags(tmp_path, monkeypatch):
    from paracl.params import ParamsError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParamsError, match="SIM tag"):
        run_stage(
            "generate_paraphrases", _params(generate_paraphrases={"tags": ["<BLEU20><SIM95>"]})
        )
    with pytest.raises(ParamsError, match="min_ratio' exceeds"):
        run_stage("generate_paraphrases", _params(generate_paraphrases={"min_ratio": 2.0}))
