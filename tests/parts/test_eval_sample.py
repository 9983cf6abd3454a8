"""The evaluation sample: seeded, stratified with proportional allocation, in file order,
never the first N, and recorded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paracl.parts.evaluation.sample import allocate, sample_rows
from paracl.parts.evaluation.unsup_sts import _year, evaluate_unsup_sts, sts_sets

REPO = Path(__file__).resolve().parents[2]


def _ordered(sizes: dict[str, int]) -> pd.DataFrame:
    """A set sorted by genre, as STS-B test is (captions first)."""
    rows = [(f"{g} {i} a", f"{g} {i} {'b' * (i % 3)}", float(i % 6), g) for g, n in sizes.items()
            for i in range(n)]  # fmt: skip
    return pd.DataFrame(rows, columns=["sentence1", "sentence2", "label", "genre"])


STSB = {"main-captions": 625, "main-news": 500, "main-forums": 254}  # STS-B test's genres


def test_allocation_is_proportional_and_exact():
    take = allocate(STSB, 200)
    assert sum(take.values()) == 200
    assert take == {"main-captions": 91, "main-news": 72, "main-forums": 37}
    for k, n in STSB.items():  # each within one pair of its exact share
        assert abs(take[k] - 200 * n / 1379) < 1
    assert allocate({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}


def test_stratified_sample_is_seeded_not_a_prefix_and_recorded():
    df = _ordered(STSB)
    a, rec = sample_rows(df, 200, seed=7, by="genre")
    b, rec_b = sample_rows(df, 200, seed=7, by="genre")
    c, rec_c = sample_rows(df, 200, seed=8, by="genre")
    assert a.equals(b) and rec == rec_b and not a.equals(c)
    assert rec["rows_sha256"] != rec_c["rows_sha256"] and len(rec["rows_sha256"]) == 12
    assert a["genre"].value_counts().to_dict() == allocate(STSB, 200)  # not all captions
    assert rec["strata"]["main-forums"] == {"pairs": 37, "of": 254}
    assert (rec["seed"], rec["cap"], rec["pairs"], rec["of"]) == (7, 200, 200, 1379)
    # file order kept, no row twice
    keys = [df.index[df["sentence1"] == s][0] for s in a["sentence1"]]
    assert keys == sorted(set(keys))


def test_no_cap_or_a_cap_above_the_set_keeps_every_row():
    df = _ordered({"x": 5, "y": 3})
    for cap in (None, 8, 100):
        out, rec = sample_rows(df, cap, seed=0, by="genre")
        assert out.equals(df) and rec["pairs"] == 8 and rec["cap"] == cap
    out, rec = sample_rows(df, 4, seed=0)  # unstratified: one stratum
    assert len(out) == 4 and rec["strata"] == {"all": {"pairs": 4, "of": 8}}


class _Cache:
    """Embeddings and cosines as fixed functions of the text: no model needed."""

    def embed(self, sents):
        return np.array([[len(s), 1.0] for s in sents])

    def cosine(self, a, b):
        return np.array([len(x) - len(y) for x, y in zip(a, b, strict=True)], dtype=float)


def test_unsup_sts_samples_each_set_by_its_strata(tmp_path):
    """STS-B by genre, an STS year by subset; the metrics say which sample was scored."""
    for sub, n in (("MSRpar", 30), ("MSRvid", 10)):
        (tmp_path / f"STS.input.{sub}.txt").write_text(
            "".join(f"{sub} {i} a\t{sub} {i} {'b' * (i % 4)}\n" for i in range(n)))  # fmt: skip
        (tmp_path / f"STS.gs.{sub}.txt").write_text("".join(f"{i % 5}\n" for i in range(n)))
    sets = {"STS12": _year(tmp_path), "STSBenchmark": _ordered({"main-captions": 30, "x": 10})}
    out = evaluate_unsup_sts(_Cache(), sets, max_pairs=8, seed=3)
    assert out["sets"]["STS12"]["sample"]["strata"] == {
        "MSRpar": {"pairs": 6, "of": 30}, "MSRvid": {"pairs": 2, "of": 10}}  # fmt: skip
    assert out["sets"]["STSBenchmark"]["sample"]["stratified_by"] == "genre"
    assert out["sets"]["STSBenchmark"]["pairs"] == 8 and out["max_pairs"] == 8
    whole = evaluate_unsup_sts(_Cache(), sets)
    assert whole["sets"]["STS12"]["pairs"] == 40 and whole["sets"]["STS12"]["sample"]["cap"] is None


def test_sts_sets_carry_their_strata(mirror):
    sets = sts_sets("en", mirror)
    assert set(sets["STSBenchmark"]["genre"]) == set(STSB)
    assert set(sets["STS13"]["subset"]) == {"FNWN", "OnWN", "headlines"}
    assert "genre" not in sets["SICKRelatedness"] and "subset" not in sets["SICKRelatedness"]


@pytest.mark.slow
def test_minilm_on_the_default_sample_lands_within_its_sampling_error(mirror):
    """The default cap's STS-B sample (params.yaml's seed and max_eval_pairs): MiniLM as
    `none` scores within one bootstrap SE of its whole-test 82.03 (the published 82.0)."""
    import torch
    from scipy import stats

    from paracl.core.models import resolve_model
    from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
    from paracl.schema import load_params

    params = load_params(REPO / "params.yaml")
    test = sts_sets("en", mirror)["STSBenchmark"]
    sample, record = sample_rows(
        test, params["evaluate"]["max_eval_pairs"], params["seed"], "genre"
    )
    model = resolve_model("sentence-transformers/all-MiniLM-L6-v2").path
    cache = EmbeddingCache(load_encoder(model, torch.device("cpu")), 64)
    cos = cache.cosine(sample["sentence1"].tolist(), sample["sentence2"].tolist())
    gold = sample["label"].to_numpy(float)
    score = stats.spearmanr(cos, gold).statistic * 100
    idx = np.random.default_rng(0).integers(0, len(gold), size=(1000, len(gold)))
    se = np.std([stats.spearmanr(cos[i], gold[i]).statistic * 100 for i in idx], ddof=1)
    print(f"STS-B sample {record['pairs']} pairs ({record['rows_sha256']}): {score:.2f} ± {se:.2f}")
    assert abs(score - 82.03) < se
