"""The adapt_filler and corrupt stage scripts end to end on a tiny corpus (stand-in T5)."""

import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from stage_helpers import run_stage

from paracl.core import schemas
from paracl.core.io import read_metadata, read_parquet, write_parquet
from paracl.core.params import ParamsError
from paracl.parts.filler.pipeline import CorruptConfig
from paracl.schema import load_params
from paracl.stages.adapt_filler import split_dev

REPO = Path(__file__).resolve().parents[2]
SENTENCES = [
    "The cat sat on the mat in the afternoon sun.",
    "Two dogs are running through the green field.",
    "A man is playing a guitar on the stage.",
    "The river flows into the sea near the old harbour.",
    "He was born in London and studied physics at Oxford.",
    "The city council approved the new budget on Monday.",
    "Go away!",
    "A woman is slicing an onion in the kitchen.",
] * 3


@pytest.fixture(autouse=True)
def restore_threads():
    """The stages set torch's thread count (corrupt.threads); give it back afterwards."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _params() -> dict:
    params = load_params(REPO / "params.yaml")
    params.update(device="cpu", lang="en", seed=1)
    params["adapt_filler"].update(
        model={"en": "tiny-random:t5", "ja": "tiny-random:t5"},
        dev_sentences=4,
        standin={"vocab_size": 200, "d_model": 16, "num_layers": 1},
    )
    params["adapt_filler"]["t5"].update(max_steps=4, batch_size=4, eval_every=2)
    params["corrupt"].update(
        max_sentences=10, num_beams=2, num_return_sequences=2, max_fill_tokens=2, batch_size=4,
        mask_mode="all_at_once",
    )  # fmt: skip
    return params


def _write_corpus() -> None:
    n = len(SENTENCES)
    corpus = pd.DataFrame(
        {
            "id": [f"d{i}-0" for i in range(n)],
            "doc_id": [f"d{i}" for i in range(n)],
            "title": "",
            "text": SENTENCES,
            "tokens": [s.split() for s in SENTENCES],
            "n_words": [len(s.split()) for s in SENTENCES],
            "lang": "en",
        }
    ).astype({"n_words": "int32"})
    write_parquet(corpus, "data/corpus/sentences.parquet", schemas.CORPUS)


def test_adapt_then_corrupt_is_reproducible(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_corpus()
    params = _params()
    run_stage("adapt_filler", params)
    adapt_metrics = json.loads(Path("metrics/adapt_filler.json").read_text())
    assert adapt_metrics["stand_in"] is True and adapt_metrics["adapted"] is True
    assert adapt_metrics["model"]["id"] == "tiny-random:t5"
    assert (
        adapt_metrics["filler"] == "t5"
        and adapt_metrics["objective"] == "span-corruption denoising"
    )
    assert adapt_metrics["dev_perplexity"] < adapt_metrics["dev_perplexity_before"]
    curve = Path("metrics/adapt_filler/curve.csv").read_text()
    assert curve.startswith("step,train_loss,dev_loss")
    assert Path("models/filler/config.json").exists()

    run_stage("corrupt", params)
    out = Path("data/negatives/negatives.parquet")  # a shard directory + _manifest.json
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    metrics = json.loads(Path("metrics/negatives.json").read_text())
    assert metrics["stand_in"] is True and metrics["sentences_in"] == 10
    generation = metrics["generation"]  # params.yaml's mode, named with its departures
    assert generation["mask_mode"] == "all_at_once" and generation["beam_width"] == 2
    assert any("all chunks at once" in d for d in generation["deviations"])
    rows = read_parquet("data/negatives/negatives.parquet", schemas.NEGATIVES)
    assert len(rows) == metrics["negatives"]
    assert read_metadata("data/negatives/negatives.parquet")["model"]["stand_in"] is True
    # the target corpus is the reference corpus here: no domain vocabulary to measure
    assert metrics["domain_vocabulary"]["vocabulary"] is None
    run_stage("corrupt", params)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


def test_adaptation_off_saves_the_base_model_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_corpus()
    params = _params()
    params["adapt_filler"]["enabled"] = False
    run_stage("adapt_filler", params)
    metrics = json.loads(Path("metrics/adapt_filler.json").read_text())
    assert metrics["adapted"] is False and metrics["dev_loss"] is None and metrics["steps"] == 0
    assert metrics["objective"] is None and metrics["dev_perplexity"] is None
    curve = Path("metrics/adapt_filler/curve.csv").read_text()
    assert curve.strip() == "step,train_loss,dev_loss"
    info = json.loads(Path("models/filler/paracl_filler.json").read_text())
    assert info["stand_in"] is True and info["adapted"] is False and info["filler"] == "t5"


def test_more_return_sequences_than_beams_is_a_params_error():
    cfg = {**_params()["corrupt"], "num_beams": 2, "num_return_sequences": 3}
    with pytest.raises(ParamsError, match="num_return_sequences"):
        CorruptConfig.from_params(cfg)
    assert CorruptConfig.from_params({**cfg, "num_return_sequences": 2}).num_beams == 2


def test_a_bad_mask_mode_is_a_params_error_naming_it():
    cfg = {**_params()["corrupt"], "mask_mode": "sequentially"}
    with pytest.raises(ParamsError, match="corrupt.mask_mode"):
        CorruptConfig.from_params(cfg)


def test_dev_split_is_seeded_and_at_most_a_tenth():
    texts = [f"s{i}" for i in range(30)]
    train, dev = split_dev(texts, dev_sentences=200, seed=1)
    assert len(dev) == 3 and sorted(train + dev) == sorted(texts)
    assert (train, dev) == split_dev(texts, dev_sentences=200, seed=1)
    assert len(split_dev(texts[:2], dev_sentences=200, seed=1)[1]) == 1  # at least one
