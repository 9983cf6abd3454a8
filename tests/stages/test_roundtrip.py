"""Round-trip translation: seeded sampling, 4 candidates per sentence, resumable stage."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from stage_helpers import expand_stages, run_stage

from paracl.core import schemas
from paracl.core.io import read_metadata, read_parquet, write_parquet
from paracl.core.params import ParamsError, validate
from paracl.core.sampling import sample_corpus
from paracl.parts.translate import PAPER_SETTINGS, Sampling, Translator, round_trip
from paracl.schema import schema_keys
from paracl.stages.roundtrip import decoding_settings

REPO = Path(__file__).resolve().parents[2]
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
    "precision",
    "executor",
    "ray_address",
    "workers",
    "model_workers",
    "gpus_per_model_worker",
    "roundtrip",
    "roundtrip_baselines",
    "train_sts_scorer",
    "tag",
    "train_paraphraser",
    "generate_paraphrases",
)


def own_params() -> dict:
    """This area's sections of params.yaml, validated (other sections may be mid-edit)."""
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    return validate({k: raw[k] for k in OWN_KEYS}, {k: schema_keys()[k] for k in OWN_KEYS})


def _params(tmp_path: Path, **roundtrip) -> dict:
    params = own_params()
    params["device"] = "cpu"
    params["roundtrip"].update(
        {
            "forward_model": "tiny-random:marian",
            "backward_model": "tiny-random:marian",
            "max_sentences": None,
            "shard_size": 2,
            "batch_size": 4,
            "max_new_tokens": 8,
            **roundtrip,
        }
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

    # an interrupted run: shards 0 and 2 finished (files and manifest lines), shard 1 not
    # → only it is redone
    import shutil

    from paracl.core.params import RunSettings
    from paracl.stages.roundtrip import resume_key

    key = resume_key(params["roundtrip"], RunSettings.of(params), "data/corpus/sentences.parquet")
    partial = out.with_name(f"{out.name}.partial-{key}")
    shutil.copytree(out, partial)
    (partial / "part-00001.parquet").unlink()
    shards = json.loads((partial / "_manifest.json").read_text())["shards"]
    (partial / "_manifest.json").unlink()
    lines = [
        {"name": s["file"].removesuffix(".parquet"), "rows": s["rows"], "sha256": s["sha256"]}
        for s in shards
        if s["file"] != "part-00001.parquet"
    ]
    (partial / "_manifest.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    os.utime(partial / "part-00000.parquet", (1, 1))  # a kept shard keeps its mtime
    shutil.rmtree(out)
    run_stage("roundtrip", params)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first_bytes
    assert (out / "part-00000.parquet").stat().st_mtime == 1  # resumed, not redone
    assert (out / "part-00001.parquet").stat().st_mtime > 1


def test_stage_greedy_mode_one_candidate_on_a_causal_lm(tmp_path, monkeypatch, tiny_llama):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS[:2])
    lm = str(tiny_llama)  # a prompted causal LM, as the default gemma-3-270m
    run_stage("roundtrip", _params(tmp_path, mode="greedy", forward_model=lm, backward_model=lm))
    out = read_parquet("data/roundtrip/candidates.parquet", schemas.ROUNDTRIP_CANDIDATES)
    assert len(out) == 2 and set(out["forward"]) == {"greedy"}
    metrics = json.loads(Path("metrics/roundtrip/roundtrip.json").read_text())
    assert metrics["paper_model"] is False and metrics["forward_model"]["stand_in"] is False


def test_greedy_baseline_stage_round_trips_the_same_sample_greedily(tmp_path, monkeypatch):
    """roundtrip_baseline@greedy (round-trip paper §4.4): roundtrip's seeded sample through
    the same translators, greedy both ways, one candidate a sentence, in its own artifact;
    dvc.yaml gives it roundtrip's deps and none of the sampling params."""
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    params = _params(tmp_path, max_sentences=3)
    params["roundtrip_baselines"] = {"decodings": ["greedy"]}
    run_stage("roundtrip_baseline@greedy", params)
    greedy = read_parquet("data/roundtrip/greedy.parquet", schemas.ROUNDTRIP_CANDIDATES)
    sample = sample_corpus("data/corpus/sentences.parquet", 3, params["seed"])  # roundtrip's
    assert greedy[["id", "text"]].values.tolist() == sample[["id", "text"]].values.tolist()
    assert set(greedy["forward"]) == set(greedy["backward"]) == {"greedy"}
    metrics = json.loads(Path("metrics/roundtrip/greedy.json").read_text())
    assert metrics["mode"] == "greedy" and metrics["candidates_per_sentence"] == 1

    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    defaults = yaml.safe_load((REPO / "params.yaml").read_text())
    stages = expand_stages(pipeline, defaults)
    assert not any(name.startswith("roundtrip_baseline@") for name in stages)  # default: none
    stages = expand_stages(pipeline, defaults | params)
    stage, sampling = stages["roundtrip_baseline@greedy"], stages["roundtrip"]
    assert stage["deps"] == sampling["deps"]
    assert not {"roundtrip", "roundtrip.mode", "roundtrip.top_k"} & set(stage["params"])
    with pytest.raises(ParamsError, match="MODE must be sample or greedy"):
        from stage_helpers import run_main

        run_main("roundtrip", params, "c.parquet", "o.parquet", "m.json", "beam")


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
    """tiny-random:* ids come through paracl.core.models' hook (tests/conftest.py
    registers paracl.testing.standins)."""
    from paracl.core.models import model_dir

    with model_dir("tiny-random:fsmt") as (path, desc):
        assert (path / "config.json").exists() and desc["stand_in"] is True
    with pytest.raises(ValueError, match="tiny-random:nope"):
        with model_dir("tiny-random:nope"):
            pass


# --- a causal LM prompted to translate (the offline default: gemma-3-270m) ----------------


def test_prompt_names_both_languages_and_ends_at_the_target():
    from paracl.parts.translate import few_shot_prefix, translation_prompt

    prompt = translation_prompt("Der Hund bellt.", "de", "en")
    assert prompt.startswith(few_shot_prefix("de", "en"))
    assert prompt.endswith("German: Der Hund bellt.\nEnglish:")
    assert prompt.count("\nEnglish: ") == 3  # three examples


def test_causal_lm_translator_is_chosen_by_config_and_seeded(tiny_llama, tiny_marian):
    import torch

    from paracl.parts.translate import PromptTranslator, load_translator

    cpu = torch.device("cpu")
    assert isinstance(load_translator(str(tiny_marian), 0, cpu, "en", "de"), Translator)
    loaded: dict = {}
    forward = load_translator(str(tiny_llama), 0, cpu, "en", "de", loaded=loaded)
    backward = load_translator(str(tiny_llama), 0, cpu, "de", "en", loaded=loaded)
    assert isinstance(forward, PromptTranslator) and forward.model is backward.model
    a = forward.translate(TEXTS, Sampling(20, 1.0), seed=3, batch_size=2, max_new_tokens=8)
    b = forward.translate(TEXTS, Sampling(20, 1.0), seed=3, batch_size=2, max_new_tokens=8)
    assert a == b and len(a) == len(TEXTS)
    assert all("\n" not in t for t in a)  # one line per translation


def test_unknown_pivot_language_is_a_params_error(tiny_gpt2):
    import torch

    from paracl.parts.translate import load_translator

    with pytest.raises(ParamsError, match="roundtrip.pivot"):
        load_translator(str(tiny_gpt2), 0, torch.device("cpu"), "en", "xx")


@pytest.mark.slow
def test_gemma_round_trip_gives_real_text_in_both_languages():
    """The packaged gemma-3-270m on llama.cpp: en → de → en and ja → en → ja give
    non-empty text in the right script, not the input, the same on a rerun."""
    import torch
    from langdetect import DetectorFactory, detect

    from paracl.parts.translate import load_translator

    DetectorFactory.seed = 0
    cpu, model, loaded = torch.device("cpu"), "google/gemma-3-270m", {}
    en = [
        "The church was rebuilt after a fire in 1905.",
        "He played for the national team until his retirement in 1998.",
    ]
    to_de = load_translator(model, 0, cpu, "en", "de", loaded=loaded)
    to_en = load_translator(model, 0, cpu, "de", "en", loaded=loaded)
    setting = Sampling(20, 0.7)
    german = to_de.translate(en, setting, seed=1)
    back = to_en.translate(german, setting, seed=1)
    assert [detect(t) for t in german] == ["de", "de"], german
    assert all(b and b != s and detect(b) == "en" for s, b in zip(en, back, strict=True)), back
    assert to_en.translate(german[::-1], setting, seed=1) == back[::-1]  # order-free

    ja = ["その城は16世紀に建てられた。", "彼は東京大学で経済学を学んだ。"]
    to_pivot = load_translator(model, 0, cpu, "ja", "en", loaded=loaded)
    to_ja = load_translator(model, 0, cpu, "en", "ja", loaded=loaded)
    back_ja = to_ja.translate(to_pivot.translate(ja, setting, seed=1), setting, seed=1)
    kana_kanji = __import__("re").compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
    assert all(b and b != s and kana_kanji.search(b) for s, b in zip(ja, back_ja, strict=True))
