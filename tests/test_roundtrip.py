"""Round-trip translation: seeded sampling, 4 candidates per sentence, resumable stage."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from stage_helpers import run_stage

from paracl import schemas
from paracl.io import read_metadata, read_parquet, write_parquet
from paracl.params import SCHEMA, ParamsError, validate
from paracl.roundtrip.translate import (
    PAPER_SETTINGS,
    Sampling,
    Translator,
    decoding_settings,
    round_trip,
)

REPO = Path(__file__).resolve().parents[1]
TEXTS = [
    "a man is playing a guitar on the stage .",
    "the cat sat on the mat .",
    "two dogs are running through the green field .",
    "the river flows into the sea .",
    "he was born in london .",
]

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def write_corpus(path: Path, texts: list[str]) -> None:
    df = pd.DataFrame(
        {
            "id": [f"d{i // 2}-{i}" for i in range(len(texts))],
            "doc_id": [f"d{i // 2}" for i in range(len(texts))],
            "title": ["t"] * len(texts),
            "text": texts,
            "tokens": [t.split() for t in texts],
            "n_words": [len(t.split()) for t in texts],
            "lang": ["en"] * len(texts),
        }
    )
    df["n_words"] = df["n_words"].astype("int32")
    write_parquet(df, path, schemas.CORPUS)


@pytest.fixture(scope="module")
def marian(tiny_marian) -> Translator:
    return Translator(tiny_marian)


def test_sampling_is_seeded(marian):
    setting = Sampling(20, 3.0)
    a = marian.translate(TEXTS, setting, seed=1, batch_size=2, max_new_tokens=12)
    b = marian.translate(TEXTS, setting, seed=1, batch_size=2, max_new_tokens=12)
    c = marian.translate(TEXTS, setting, seed=2, batch_size=2, max_new_tokens=12)
    assert a == b
    assert a != c
    assert len(a) == len(TEXTS) and all(isinstance(t, str) for t in a)


def test_batch_result_does_not_depend_on_what_ran_before(marian):
    setting = Sampling(30, 2.0)
    first = marian.translate(TEXTS[:2], setting, seed=5, batch_size=2, max_new_tokens=10)
    marian.translate(TEXTS[2:], setting, seed=5, batch_size=2, max_new_tokens=10)  # moves torch RNG
    again = marian.translate(TEXTS[:2], setting, seed=5, batch_size=2, max_new_tokens=10)
    assert first == again


def test_greedy_ignores_the_seed(marian):
    a = marian.translate(TEXTS, Sampling(), seed=1, max_new_tokens=10)
    b = marian.translate(TEXTS, Sampling(), seed=99, max_new_tokens=10)
    assert a == b


def test_max_new_tokens_caps_the_output(marian):
    out = marian.translate(TEXTS[:2], Sampling(20, 3.0), seed=0, max_new_tokens=3)
    for text in out:
        assert len(marian.tokenizer(text, add_special_tokens=False)["input_ids"]) <= 3 + 1


def test_round_trip_gives_four_candidates_per_sentence(marian):
    ids = [f"s{i}" for i in range(3)]
    out = round_trip(marian, marian, ids, TEXTS[:3], PAPER_SETTINGS, seed=0, max_new_tokens=8)
    assert len(out) == 12
    assert out.groupby("id")["candidate"].apply(sorted).tolist() == [[0, 1, 2, 3]] * 3
    assert set(zip(out["forward"], out["backward"], strict=True)) == {
        (f, b) for f in ("k20_T3", "k30_T2") for b in ("k20_T3", "k30_T2")
    }
    assert (out.groupby("id")["text"].nunique() == 1).all()


def test_unknown_language_code_is_an_error(tiny_marian):
    with pytest.raises(ValueError, match="language code"):
        Translator(tiny_marian, tgt_lang="xxx_Zzzz")


OWN_KEYS = (
    "seed",
    "lang",
    "theta",
    "device",
    "executor",
    "ray_address",
    "workers",
    "model_workers",
    "gpus_per_model_worker",
    "roundtrip",
    "train_sts_scorer",
    "tag",
    "train_paraphraser",
    "generate_paraphrases",
)


def own_params() -> dict:
    """This area's sections of params.yaml, validated (other sections may be mid-edit)."""
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    return validate({k: raw[k] for k in OWN_KEYS}, {k: SCHEMA[k] for k in OWN_KEYS})


def _params(tmp_path: Path, **roundtrip) -> dict:
    params = own_params()
    params["device"] = "cpu"
    params["roundtrip"].update(
        {"max_sentences": None, "shard_size": 2, "batch_size": 4, "max_new_tokens": 8, **roundtrip}
    )
    return params


def test_stage_is_resumable_and_deterministic(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    params = _params(tmp_path)
    run_stage("roundtrip", params)
    out = Path("data/roundtrip/candidates.parquet")
    first = read_parquet(out, schemas.ROUNDTRIP_CANDIDATES)
    assert len(first) == 4 * len(TEXTS)
    assert sorted(p.name for p in out.glob("part-*.parquet")) == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    meta = read_metadata(out)
    assert meta["forward_model"]["stand_in"] is True
    first_bytes = {p.name: p.read_bytes() for p in out.iterdir()}

    # an interrupted run: shard 1 of the partial directory is missing → only it is redone
    import shutil

    from paracl.io import fingerprint, sha256_file

    key = fingerprint(
        params["roundtrip"],
        params["seed"],
        params["lang"],
        sha256_file("data/corpus/sentences.parquet"),
    )
    partial = out.with_name(f"{out.name}.partial-{key}")
    shutil.copytree(out, partial)
    (partial / "part-00001.parquet").unlink()
    (partial / "_manifest.json").unlink()
    shutil.rmtree(out)
    run_stage("roundtrip", params)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first_bytes


def test_stage_greedy_mode_one_candidate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS[:2])
    run_stage("roundtrip", _params(tmp_path, mode="greedy"))
    out = read_parquet("data/roundtrip/candidates.parquet", schemas.ROUNDTRIP_CANDIDATES)
    assert len(out) == 2 and set(out["forward"]) == {"greedy"}


def test_decoding_settings_pair_top_k_with_temperature():
    cfg = {"mode": "sample", "top_k": [20, 30], "temperature": [3.0, 2.0]}
    assert decoding_settings(cfg) == list(PAPER_SETTINGS)
    assert decoding_settings({**cfg, "mode": "greedy"}) == [Sampling()]
    with pytest.raises(ParamsError, match="equal length"):
        decoding_settings({**cfg, "top_k": [20]})
    with pytest.raises(ParamsError, match="non-empty"):
        decoding_settings({**cfg, "top_k": [], "temperature": []})


def test_fsmt_round_trip_is_seeded(tiny_fsmt):
    fsmt = Translator(tiny_fsmt)
    a = round_trip(fsmt, fsmt, ["x"], TEXTS[:1], PAPER_SETTINGS, seed=3, max_new_tokens=6)
    b = round_trip(fsmt, fsmt, ["x"], TEXTS[:1], PAPER_SETTINGS, seed=3, max_new_tokens=6)
    assert len(a) == 4
    pd.testing.assert_frame_equal(a, b)


def test_standin_ids_build_and_say_so():
    from paracl.standins import seq2seq_model

    with seq2seq_model("tiny-random:fsmt") as (path, desc):
        assert (path / "config.json").exists() and desc["stand_in"] is True
    with pytest.raises(ValueError, match="tiny-random:nope"):
        with seq2seq_model("tiny-random:nope"):
            pass
