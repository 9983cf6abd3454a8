"""Hard negatives from a causal LM: the fill rules, seeded determinism (tiny random
GPT-2), the adapt_filler / corrupt stages on a causal LM, and (slow) the packaged LMs."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import params_at, part_config

from paracl.parts.filler.causal import CausalFiller, is_causal_lm, row_seed
from paracl.parts.filler.chunks import load_pipeline
from paracl.parts.filler.fills import is_dangling, is_garbled, is_original, outside_changed
from paracl.parts.filler.pipeline import CorruptConfig, corrupt, join_spaced, merge_stats

CPU = torch.device("cpu")
ANCHORS = pd.DataFrame(
    {
        "id": ["a-0", "a-1", "a-2"],
        "text": [
            "The cat sat on the mat in the afternoon sun.",
            "He was born in London and studied physics at Oxford.",
            "The city council approved the new budget on Monday.",
        ],
    }
)


def _cfg(**kw) -> CorruptConfig:
    return part_config(
        CorruptConfig,
        **{
            "mask_mode": "all_at_once",
            "num_return_sequences": 2,
            "num_samples": 4,
            "batch_size": 10,
            **kw,
        },  # fmt: skip
    )


def test_fill_rules():
    assert is_garbled("", "the cat") and is_garbled(" , ", "the cat")
    assert is_garbled("the \ufffd", "the cat") and is_garbled("dog.", "the cat")
    assert is_garbled("犬", "the cat") and is_garbled("dog", "猫")  # wrong script
    assert not is_garbled("a big dog", "the cat") and not is_garbled("犬", "猫")
    assert is_original(" The  Cat", "the cat") and not is_original("the dog", "the cat")
    assert is_dangling("the city of") and is_dangling("猫は") and not is_dangling("the city")
    assert not outside_changed("<extra_id_0> sat on <extra_id_1>.", "A dog sat on a rug.")
    assert outside_changed("<extra_id_0> sat on <extra_id_1>.", "A dog sits on a rug.")


def test_chunks_separated_by_spaces_only_become_one_blank():
    text = "On Monday morning the council met."
    assert join_spaced(text, [(3, 9), (10, 17), (18, 29)]) == [(3, 29)]
    assert join_spaced(text, [(0, 2), (3, 9)]) == [(0, 9)]
    assert join_spaced("a, b", [(0, 1), (3, 4)]) == [(0, 1), (3, 4)]


def test_row_seeds_depend_on_seed_text_and_row_only():
    assert row_seed(1, "x", 0) == row_seed(1, "x", 0)
    assert len({row_seed(1, "x", 0), row_seed(2, "x", 0), row_seed(1, "y", 0)}) == 3


def test_filler_kind_comes_from_the_config(tiny_gpt2, tiny_t5):
    assert is_causal_lm(tiny_gpt2) and not is_causal_lm(tiny_t5)


def test_causal_negatives_keep_the_text_outside_the_blanks(tiny_gpt2, nlp_en):
    filler = CausalFiller(tiny_gpt2, CPU, _cfg().sampling(), seed=3)
    rows, stats = corrupt(ANCHORS, nlp_en, filler, _cfg())
    assert stats["candidates"] == 3 * 4 and stats["sentences_in"] == 3
    dropped = sum(v for k, v in stats.items() if k.startswith("dropped_"))
    assert stats["negatives"] == len(rows) <= stats["candidates"] - dropped
    assert (rows.groupby("id").size() <= 2).all()
    for r in rows.itertuples():
        assert r.negative != r.text and not outside_changed(r.masked, r.negative)
        filled = [(f, c) for f, c in zip(r.fills, r.chunks, strict=True) if f]
        assert 1 <= len(filled) <= 2  # max_blanks
        assert all(not is_garbled(f, c) and not is_original(f, c) for f, c in filled)
    assert stats["q_identical"] == stats["q_outside_changed"] == stats["q_garbled"] == 0
    assert len(stats["ppl_log_ratios"]) == len(rows)
    quality = merge_stats([stats])["quality"]
    assert quality["share_identical"] in (0.0, None) and "ppl_log_ratios" not in quality


def test_same_seed_same_rows_in_any_batching(tiny_gpt2, nlp_en):
    def run(seed: int, batch_size: int) -> pd.DataFrame:
        cfg = _cfg(batch_size=batch_size)
        return corrupt(ANCHORS, nlp_en, CausalFiller(tiny_gpt2, CPU, cfg.sampling(), seed), cfg)[0]

    first = run(3, 10)
    pd.testing.assert_frame_equal(first, run(3, 10))
    other = run(3, 5)  # one anchor per batch: same samples, scores up to float rounding
    assert other["negative"].tolist() == first["negative"].tolist()
    assert not run(4, 10)["negative"].equals(first["negative"]) or first.empty


def test_too_few_samples_for_the_negatives_is_a_params_error():
    from paracl.core.params import ParamsError

    with pytest.raises(ParamsError, match="num_samples"):
        CorruptConfig.from_params(
            {**params_at("corrupt"), "num_return_sequences": 8}, seq2seq=False
        )


def test_stages_record_the_causal_lm_and_corrupt_with_it(tmp_path, monkeypatch, tiny_gpt2):
    from stage_helpers import run_stage
    from test_negatives_stages import _params, _write_corpus

    from paracl.core import schemas
    from paracl.core.io import read_parquet

    monkeypatch.chdir(tmp_path)
    _write_corpus()
    params = _params()
    params["adapt_filler"]["model"] = {"en": str(tiny_gpt2), "ja": str(tiny_gpt2)}
    params["adapt_filler"]["enabled"] = (
        False  # recorded, not adapted (adapted: test_adapt_filler_causal)
    )
    params["corrupt"].update(num_samples=3, max_blanks=1)
    before = torch.get_num_threads()
    try:
        run_stage("adapt_filler", params)
        info = json.loads(Path("models/filler/paracl_filler.json").read_text())
        assert info["causal_lm"] and info["adapted"] is False and info["paper_model"] is False
        assert sorted(p.name for p in Path("models/filler").iterdir()) == ["paracl_filler.json"]
        run_stage("corrupt", params)
        out = Path("data/negatives/negatives.parquet")
        first = {p.name: p.read_bytes() for p in out.iterdir()}
        metrics = json.loads(Path("metrics/negatives.json").read_text())
        assert metrics["filler"] == "causal_lm" and metrics["paper_model"] is False
        assert metrics["model"]["id"] == str(tiny_gpt2) and "quality" in metrics
        assert len(read_parquet(str(out), schemas.NEGATIVES)) == metrics["negatives"]
        run_stage("corrupt", params)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    finally:
        torch.set_num_threads(before)


JA = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lang", "model_id", "texts"),
    [
        ("en", "HuggingFaceTB/SmolLM2-135M-Instruct", ANCHORS["text"].tolist()),
        (
            "ja",
            "google/gemma-3-270m",
            [
                "猫は午後の日差しの中でマットの上に座っていた。",
                "東京は日本の首都であり、人口が最も多い都市である。",
            ],
        ),
    ],
)
def test_packaged_lm_writes_real_negatives(lang, model_id, texts, one_thread):
    from paracl.core.models import resolve_model

    anchors = pd.DataFrame({"id": [f"s{i}" for i in range(len(texts))], "text": texts})
    cfg = part_config(CorruptConfig, mask_mode="all_at_once", num_return_sequences=2, num_samples=8)
    filler = CausalFiller(resolve_model(model_id).path, CPU, cfg.sampling(), seed=1)
    rows, _ = corrupt(anchors, load_pipeline(lang), filler, cfg)
    assert len(rows) >= 1
    for r in rows.itertuples():
        assert r.negative.strip() and r.negative != r.text
        for fill, chunk in zip(r.fills, r.chunks, strict=True):
            if fill:
                assert not is_garbled(fill, chunk) and not is_original(fill, chunk)
                assert bool(JA.search(fill)) == (lang == "ja")


def test_a_quantized_filler_runs_in_fp32_whatever_the_precision(tiny_gpt2, nlp_en):
    """int8 dynamic Linear layers (the CPU default) take fp32 activations: under bf16
    autocast (precision auto on an AMX CPU) they raised "expected Float but found BFloat16"."""
    sampling = _cfg().sampling()
    assert sampling.quantize, "the CPU default quantizes the filler"
    filler = CausalFiller(tiny_gpt2, CPU, sampling, seed=3, precision="bf16")
    assert filler.precision == "fp32"
    rows, stats = corrupt(ANCHORS, nlp_en, filler, _cfg())
    assert stats["sentences_in"] == 3
