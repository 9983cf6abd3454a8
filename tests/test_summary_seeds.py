"""The summary over seeds: entries that differ only in `seed` make one row (mean ± sd),
and each row's difference to `none` comes with a t-test over the seeds."""

from __future__ import annotations

import pytest

from paracl.evaluation.summary import build_summary, effect_vs, seed_groups, to_markdown

METHODS = {
    "none": {"loss": "none", "input": "dev.csv"},
    "ppdb": {"loss": "infonce", "input": "pairs.parquet", "seed": 1},
    "ppdb_s2": {"loss": "infonce", "input": "pairs.parquet", "seed": 2},
    "ppdb_s3": {"loss": "infonce", "input": "pairs.parquet", "seed": 3},
    "simcse_unsup": {"loss": "infonce", "input": "sentences.parquet", "seed": 1},
    "simcse_unsup_s2": {"loss": "infonce", "input": "sentences.parquet", "seed": 2},
    "ams": {"loss": "ams", "input": "pairs.parquet", "margin": 0.5},
}


def _result(score: float) -> dict:
    return {"kind": "unsup_sts", "score": score, "official_split": True,
            "encoder": {"base_model": {"id": "tiny/base"}}}  # fmt: skip


def test_entries_differing_only_in_seed_share_a_row():
    groups = seed_groups(METHODS)
    assert groups == {"none": ["none"], "ppdb": ["ppdb", "ppdb_s2", "ppdb_s3"],
                      "simcse_unsup": ["simcse_unsup", "simcse_unsup_s2"], "ams": ["ams"]}  # fmt: skip
    # another loss param is another method, even on the same input and seed
    other = {**METHODS, "ppdb_t": {"loss": "infonce", "input": "x.parquet", "seed": 1}}
    assert seed_groups(other)["ppdb_t"] == ["ppdb_t"]


def test_two_stage_seeds_group_by_the_encoder_they_continue():
    stage_two = {"loss": "jcse", "data": "nli.tsv", "alpha": 1.0}
    methods = {
        "jcse": {"loss": "jcse", "input": "negatives.parquet", "seed": 1},
        "jcse_s2": {"loss": "jcse", "input": "negatives.parquet", "seed": 2},
        "jcse_two_stage": {**stage_two, "input": "models/encoders/jcse", "seed": 1},
        "jcse_two_stage_s2": {**stage_two, "input": "models/encoders/jcse_s2", "seed": 2},
    }
    assert seed_groups(methods) == {"jcse": ["jcse", "jcse_s2"],
                                    "jcse_two_stage": ["jcse_two_stage", "jcse_two_stage_s2"]}  # fmt: skip


def test_row_is_mean_and_sd_over_seeds_with_effect_and_test():
    scores = {"none": 30.0, "ppdb": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup": 31.0, "simcse_unsup_s2": 29.0, "ams": 35.0}  # fmt: skip
    results = {m: {"unsup_sts_en": _result(s)} for m, s in scores.items()}
    summary = build_summary(results, ["unsup_sts_en"], "all", seed_groups(METHODS))
    rows = summary["methods"]
    assert list(rows) == ["none", "ppdb", "simcse_unsup", "ams"]
    ppdb = rows["ppdb"]
    assert ppdb["avg"] == pytest.approx(41.0) and ppdb["avg_std"] == pytest.approx(1.0)
    assert ppdb["tasks"]["unsup_sts_en"]["n_seeds"] == 3
    assert ppdb["vs_none"]["diff"] == pytest.approx(11.0)
    assert ppdb["vs_none"]["p"] < 0.01 and ppdb["vs_none"]["holds"]
    simcse = rows["simcse_unsup"]["vs_none"]  # +1 and -1: no effect, and not "holds"
    assert simcse["diff"] == pytest.approx(0.0) and simcse["p"] > 0.5 and not simcse["holds"]
    assert rows["ams"]["vs_none"]["p"] is None  # one seed: no test
    md = to_markdown(summary)
    assert "| ppdb (3 seeds) | 41.0 ± 1.0 | 41.0 ± 1.0 | **+11.0 ± 1.0** |" in md
    assert "| ams | 35.0 | 35.0 | +5.0 | n/a (1 seed) |" in md
    assert "t-test over training seeds" in md


def test_one_seed_each_keeps_the_plain_table():
    results = {"none": {"stsb": _result(50.0)}, "jcse": {"stsb": _result(49.5)}}
    md = to_markdown(build_summary(results, ["stsb"], "all"))
    assert "p (seeds)" not in md and "| jcse | 49.5 | 49.5 | −0.5 |" in md


def test_no_spread_and_a_missing_seed():
    assert effect_vs({"a": 2.0, "b": 2.0}, {"none": 1.0})["p"] is None  # identical seeds
    assert effect_vs({"a": 2.0, "b": None}, {"none": 1.0}) is None
    results = {"none": {"stsb": _result(50.0)}, "ppdb": {"stsb": _result(51.0)},
               "ppdb_s2": {"stsb": None}}  # fmt: skip
    summary = build_summary(results, ["stsb"], "all", seed_groups(METHODS))
    row = summary["methods"]["ppdb"]
    assert row["avg"] is None and row["tasks"]["stsb"]["score"] is None
    assert "n/a" in to_markdown(summary)


def test_unsupervised_sts_sets_get_a_breakdown_table():
    def unsup(sts12: float, sickr: float) -> dict:
        sets = {"SICKRelatedness": {"spearman": sickr}, "STS12": {"spearman": sts12}}
        return {**_result((sts12 + sickr) / 2), "sets": sets}

    results = {"none": {"unsup_sts_en": unsup(40.0, 50.0)},
               "ppdb": {"unsup_sts_en": unsup(42.0, 55.0)},
               "ppdb_s2": {"unsup_sts_en": unsup(44.0, 57.0)}}  # fmt: skip
    summary = build_summary(results, ["unsup_sts_en"], "all", seed_groups(METHODS))
    md = to_markdown(summary)
    assert "| Method | STS12 | SICKRelatedness |" in md  # SimCSE's order, not alphabetical
    assert "| none | 40.0 | 50.0 |" in md and "| ppdb | 43.0 ± 1.4 | 56.0 ± 1.4 |" in md

    # a set without a score (too few pairs) is n/a; PI's per-set accuracies get no table
    results["none"]["unsup_sts_en"]["sets"]["STS12"] = {"pairs": 1}
    results["none"]["pi_en"] = {**_result(70.0), "kind": "pi", "sets": {"mrpc": {"accuracy": 70}}}
    summary = build_summary(results, ["unsup_sts_en", "pi_en"], "all", seed_groups(METHODS))
    md = to_markdown(summary)
    assert "| none | n/a | 50.0 |" in md and "mrpc" not in md


JA = {"simcse_unsup", "simcse_sup", "ppdb", "jcse", "jcse_two_stage", "ams"}
EFFECT_METHODS = {  # presets applied in order -> the methods besides none (README says why)
    ("effect-en",): {"simcse_unsup", "ppdb", "roundtrip", "paraphraser", "jcse", "ams"},
    ("effect-ja",): JA,
    ("effect-ja", "effect-ja-ebsim"): {"ebsim", "ebsim_no_aa"},  # null removes effect-ja's
    ("effect-en", "effect-en-theta"): {"ppdb"},  # the θ sweep: null removes the others
}


@pytest.mark.parametrize("names", sorted(EFFECT_METHODS))
def test_effect_presets_train_every_method_with_three_seeds(names, tmp_path):
    """A typo in one seed's entry would split it into a row of its own: caught here."""
    import shutil
    from pathlib import Path

    from paracl import presets
    from paracl.params import load_params

    repo = Path(__file__).resolve().parents[1]
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    for name in names:
        presets.apply_preset(presets.load_preset(repo / "presets" / f"{name}.yaml"),
                             tmp_path / "params.yaml")  # fmt: skip
    methods = load_params(tmp_path / "params.yaml")["train_contrastive"]["methods"]
    rows = seed_groups(methods)
    assert rows.pop("none") == ["none"]
    assert set(rows) == EFFECT_METHODS[names]
    assert all(len(entries) == 3 for entries in rows.values()), rows
    assert all([methods[e]["seed"] for e in entries] == [1, 2, 3] for entries in rows.values())


def test_the_papers_claims_are_welch_tests_between_their_two_methods():
    from scipy import stats

    scores = {"none": 30.0, "ppdb": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup": 31.0, "simcse_unsup_s2": 29.0, "ams": 35.0}  # fmt: skip
    results = {m: {"unsup_sts_en": _result(s)} for m, s in scores.items()}
    summary = build_summary(results, ["unsup_sts_en"], "all", seed_groups(METHODS))
    # only the claim whose two methods ran: ppdb above unsupervised SimCSE
    [claim] = summary["claims"]
    assert (claim["method"], claim["other"]) == ("ppdb", "simcse_unsup")
    assert claim["diff"] == pytest.approx(41.0 - 30.0)
    expected = stats.ttest_ind([40.0, 41.0, 42.0], [31.0, 29.0], equal_var=False).pvalue
    assert claim["p"] == pytest.approx(expected) and claim["holds"]
    text = to_markdown(summary)
    assert "The papers' claims" in text and "ppdb − simcse_unsup: +11.0" in text
    # the claim's direction matters: a significant difference the other way does not hold
    flipped = {**scores, "ppdb": 20.0, "ppdb_s2": 21.0, "ppdb_s3": 22.0}
    results = {m: {"unsup_sts_en": _result(s)} for m, s in flipped.items()}
    [claim] = build_summary(results, ["unsup_sts_en"], "all", seed_groups(METHODS))["claims"]
    assert claim["diff"] < 0 and claim["p"] < 0.05 and not claim["holds"]
    # one seed each: a difference, no test
    single = {"none": 30.0, "ppdb": 40.0, "simcse_unsup": 31.0}
    results = {m: {"unsup_sts_en": _result(s)} for m, s in single.items()}
    [claim] = build_summary(results, ["unsup_sts_en"], "all")["claims"]
    assert (
        claim["p"] is None
        and not claim["holds"]
        and "n/a" in to_markdown(build_summary(results, ["unsup_sts_en"], "all"))
    )
