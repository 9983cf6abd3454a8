"""The summary over seeds: a method's runs (one per training seed, train_contrastive.runs)
make one row (mean ± sd), and each row's difference to `none` comes with a t-test over
the seeds."""

from __future__ import annotations

import json

import pytest
from stage_helpers import squeezed

from paracl.core.io import ArtifactError
from paracl.parts.runs import expand_runs
from paracl.report import render_block, split_parts
from paracl.stages.summary import (
    NOT_RUN,
    TABLE4_CLAIMS,
    build_summary,
    effect_vs,
    judged_claims,
    load_results,
    run_groups,
    to_markdown,
    verdict,
)

METHODS = {
    "none": {"loss": "none", "input": "dev.csv"},
    "ppdb": {"loss": "infonce", "input": "pairs.parquet", "seeds": [1, 2, 3]},
    "simcse_unsup": {"loss": "infonce", "input": "sentences.parquet", "seeds": [1, 2]},
    "ams": {"loss": "ams", "input": "pairs.parquet", "margin": 0.5},
}
GROUPS = run_groups(expand_runs({"methods": METHODS, "seeds": None}))


def _result(score: float) -> dict:
    return {"kind": "unsup_sts", "score": score, "official_split": True,
            "encoder": {"base_model": {"id": "tiny/base"}}}  # fmt: skip


def test_a_methods_runs_share_a_row_named_after_it():
    assert GROUPS == {"none": ["none"], "ppdb": ["ppdb_s1", "ppdb_s2", "ppdb_s3"],
                      "simcse_unsup": ["simcse_unsup_s1", "simcse_unsup_s2"], "ams": ["ams"]}  # fmt: skip
    # the row is the run's `method`, whatever the run is called or its entry holds
    runs = {"a": {"method": "ams", "seed": 1}, "b": {"method": "ams", "seed": 2}}
    assert run_groups(runs) == {"ams": ["a", "b"]}


def test_two_stage_runs_group_by_their_method_and_continue_their_own_seed():
    stage_two = {"loss": "jcse", "data": "nli.tsv", "hard_negative_weight": 1.0}
    methods = {
        "jcse": {"loss": "jcse", "input": "negatives.parquet"},
        "jcse_two_stage": {**stage_two, "input": "models/encoders/jcse"},
    }
    runs = expand_runs({"methods": methods, "seeds": [1, 2]})
    assert run_groups(runs) == {"jcse": ["jcse_s1", "jcse_s2"],
                                "jcse_two_stage": ["jcse_two_stage_s1", "jcse_two_stage_s2"]}  # fmt: skip
    assert runs["jcse_two_stage_s2"]["input"] == "models/encoders/jcse_s2"


def test_row_is_mean_and_sd_over_seeds_with_effect_and_test():
    scores = {"none": 30.0, "ppdb_s1": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0, "ams": 35.0}  # fmt: skip
    results = {m: {"unsup_sts_en": _result(s)} for m, s in scores.items()}
    summary = build_summary(results, ["unsup_sts_en"], "all", GROUPS)
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
    md = squeezed(to_markdown(summary))
    assert "| ppdb (3 seeds) | 41.0 ± 1.0 | 41.0 ± 1.0 | **+11.0 ± 1.0** |" in md
    assert "| ams | 35.0 | 35.0 | +5.0 | n/a (1 seed) |" in md
    assert "t-test over training seeds" in md


def test_one_seed_each_keeps_the_plain_table():
    results = {"none": {"stsb": _result(50.0)}, "jcse": {"stsb": _result(49.5)}}
    md = squeezed(to_markdown(build_summary(results, ["stsb"], "all")))
    assert "p (seeds)" not in md and "| jcse | 49.5 | 49.5 | −0.5 |" in md


def test_no_spread_and_a_missing_seed():
    assert effect_vs({"a": 2.0, "b": 2.0}, {"none": 1.0})["p"] is None  # identical seeds
    assert effect_vs({"a": 2.0, "b": None}, {"none": 1.0}) is None
    results = {"none": {"stsb": _result(50.0)}, "ppdb_s1": {"stsb": _result(51.0)},
               "ppdb_s2": {"stsb": None}}  # fmt: skip
    summary = build_summary(results, ["stsb"], "all", GROUPS)
    row = summary["methods"]["ppdb"]
    assert row["avg"] is None and row["tasks"]["stsb"]["score"] is None
    md = squeezed(to_markdown(summary))
    assert "n/a" in md and "- ppdb / stsb: 1 of 2 seeds scored; not yet: ppdb_s2" in md
    # a seed skipped for a reason keeps that reason
    results["ppdb_s2"]["stsb"] = {**_result(0.0), "score": None, "skipped": "no test labels"}
    results["ppdb_s3"] = {"stsb": _result(52.0)}
    md = squeezed(to_markdown(build_summary(results, ["stsb"], "all", GROUPS)))
    assert "- ppdb / stsb: no test labels" in md and "seeds scored" not in md


def test_unsupervised_sts_sets_get_a_breakdown_table():
    def unsup(sts12: float, sickr: float) -> dict:
        sets = {"SICKRelatedness": {"spearman": sickr}, "STS12": {"spearman": sts12}}
        return {**_result((sts12 + sickr) / 2), "sets": sets}

    results = {"none": {"unsup_sts_en": unsup(40.0, 50.0)},
               "ppdb_s1": {"unsup_sts_en": unsup(42.0, 55.0)},
               "ppdb_s2": {"unsup_sts_en": unsup(44.0, 57.0)}}  # fmt: skip
    summary = build_summary(results, ["unsup_sts_en"], "all", GROUPS)
    md = squeezed(to_markdown(summary))
    assert "| Method | STS12 | SICKRelatedness |" in md  # SimCSE's order, not alphabetical
    assert "| none | 40.0 | 50.0 |" in md and "| ppdb | 43.0 ± 1.4 | 56.0 ± 1.4 |" in md

    # a set without a score (too few pairs) is n/a; PI's per-set accuracies get no table
    results["none"]["unsup_sts_en"]["sets"]["STS12"] = {"pairs": 1}
    results["none"]["pi_en"] = {**_result(70.0), "kind": "pi", "sets": {"mrpc": {"accuracy": 70}}}
    summary = build_summary(results, ["unsup_sts_en", "pi_en"], "all", GROUPS)
    md = squeezed(to_markdown(summary))
    assert "| none | n/a | 50.0 |" in md and "mrpc" not in md


JA = {"simcse_unsup", "simcse_sup", "ppdb", "jcse", "jcse_two_stage", "ams"}
EFFECT_METHODS = {  # presets applied in order -> the methods besides none (README says why)
    ("effect-en",): {"simcse_unsup", "ppdb", "jcse", "ams"},
    ("effect-en", "effect-en-roundtrip"): {  # the round-trip paper's, beside SimCSE
        "simcse_unsup",
        "paraphraser_bleu0_5",
        "paraphraser_bleu20",
        "paraphraser_bleu40",
        "roundtrip_greedy",
    },
    ("effect-ja",): JA,
    ("effect-ja", "effect-ja-ebsim"): {"ebsim", "ebsim_no_aa"},  # null removes effect-ja's
    ("effect-en", "effect-en-theta"): {"ppdb"},  # the θ sweep: null removes the others
    ("effect-en", "effect-en-roundtrip", "effect-en-roundtrip-nli"): {  # Table 3's NLI half
        "simcse_sup_rt", "nli_roundtrip_greedy", "nli_paraphraser_bleu0_5",
        "nli_paraphraser_bleu20", "nli_paraphraser_bleu40"},
    ("effect-en", "effect-en-roundtrip", "effect-en-roundtrip-nli", "effect-en-roundtrip-ab"): {
        "nli_ab", "nli_ab_twice", *(f"{p}_{t}" for p in ("nli_apbp", "nli_apb", "nli_abp", "nli_ab_apbp")
                    for t in ("bleu0_5", "bleu20", "bleu40"))},  # Table 4
}  # fmt: skip


@pytest.mark.parametrize("names", sorted(EFFECT_METHODS))
def test_effect_presets_train_every_method_with_three_seeds(names, tmp_path):
    """Each method written once, its seeds expanded into runs: one row of 3 seeds each."""
    import shutil
    from pathlib import Path

    from paracl import presets
    from paracl.schema import load_params

    repo = Path(__file__).resolve().parents[2]
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    for name in names:
        presets.apply_preset(presets.load_preset(repo / "presets" / f"{name}.yaml"),
                             tmp_path / "params.yaml")  # fmt: skip
    runs = load_params(tmp_path / "params.yaml")["train_contrastive"]["runs"]
    rows = run_groups(runs)
    assert rows.pop("none") == ["none"]
    assert set(rows) == EFFECT_METHODS[names]
    assert all([runs[r]["seed"] for r in names_] == [1, 2, 3] for names_ in rows.values()), rows
    for run in rows.get("jcse_two_stage", []):  # each seed continues from jcse's same seed
        assert runs[run]["input"] == f"models/encoders/jcse_s{runs[run]['seed']}"


def _finetuned(score: float) -> dict:
    return {"kind": "finetune", "score": score, "score_std": 0.0, "official_split": True,
            "test": {"n": 1}, "encoder": {"base_model": {"id": "tiny/base"}}}  # fmt: skip


def test_the_dev_average_is_each_seeds_mean_over_its_fine_tuned_dev_scores():
    """PPDB's θ and |D| are chosen on it (paracl theta-curve): per seed the mean over the
    fine-tuned tasks of each task's dev score (the paper's Avg., on dev; a cosine column
    stays out), then the mean and sd over seeds, both in scores.json."""
    from paracl.stages.summary import scores

    devs = {"ppdb_s1": (60.0, 70.0), "ppdb_s2": (62.0, 72.0), "ppdb_s3": (64.0, 74.0)}
    results = {run: {"stsb": {**_finetuned(50.0), "dev_score": stsb},
                     "sicke": {**_finetuned(70.0), "dev_score": sicke},
                     "unsup_sts_en": _result(99.0)}
               for run, (stsb, sicke) in devs.items()}  # fmt: skip
    summary = build_summary(results, ["stsb", "sicke", "unsup_sts_en"], "finetune", GROUPS)
    ppdb = summary["methods"]["ppdb"]
    assert ppdb["dev_avg"] == pytest.approx(67.0) and ppdb["dev_avg_std"] == pytest.approx(2.0)
    assert ppdb["avg"] == pytest.approx(60.0)  # the test average: no cosine column either
    assert scores(summary)["ppdb"]["dev_avg_std"] == pytest.approx(2.0)


def test_the_papers_claims_are_welch_tests_between_their_two_methods():
    from scipy import stats

    scores = {"none": 30.0, "ppdb_s1": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0, "ams": 35.0}  # fmt: skip
    # PPDB's Table 3 is fine-tuned: its claim is tested on the fine-tuned column
    results = {m: {"stsb": _finetuned(s)} for m, s in scores.items()}
    summary = build_summary(results, ["stsb"], "all", GROUPS)
    # only the claim whose two methods ran: ppdb above unsupervised SimCSE
    [claim] = summary["claims"]
    assert (claim["method"], claim["other"]) == ("ppdb", "simcse_unsup")
    assert claim["measure"] == "finetune"
    assert claim["diff"] == pytest.approx(41.0 - 30.0)
    expected = stats.ttest_ind([40.0, 41.0, 42.0], [31.0, 29.0], equal_var=False).pvalue
    assert claim["p"] == pytest.approx(expected) and claim["holds"]
    text = to_markdown(summary)
    assert "The papers' claims" in text and "ppdb − simcse_unsup: +11.0" in text
    # the claim's direction matters: a significant difference the other way does not hold
    flipped = {**scores, "ppdb_s1": 20.0, "ppdb_s2": 21.0, "ppdb_s3": 22.0}
    results = {m: {"stsb": _finetuned(s)} for m, s in flipped.items()}
    [claim] = build_summary(results, ["stsb"], "all", GROUPS)["claims"]
    assert claim["diff"] < 0 and claim["p"] < 0.05 and not claim["holds"]
    # one seed each: a difference, no test
    single = {"none": 30.0, "ppdb": 40.0, "simcse_unsup": 31.0}
    results = {m: {"stsb": _finetuned(s)} for m, s in single.items()}
    [claim] = build_summary(results, ["stsb"], "all")["claims"]
    assert (
        claim["p"] is None
        and not claim["holds"]
        and "n/a" in to_markdown(build_summary(results, ["stsb"], "all"))
    )


def test_a_claim_on_another_kind_of_task_is_not_tested_on_cosine_sts():
    """PPDB's claim is about fine-tuned tasks: a table of cosine STS alone says it cannot
    test it, rather than testing what the paper did not claim (issue 33 item 4)."""
    scores = {"none": 30.0, "ppdb_s1": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0}  # fmt: skip
    results = {m: {"unsup_sts_en": _result(s)} for m, s in scores.items()}
    summary = build_summary(results, ["unsup_sts_en"], "all", GROUPS)
    [claim] = summary["claims"]
    assert "diff" not in claim and "fine-tuned" in claim["untested"]
    text = to_markdown(summary)
    assert "Not tested here:\n\n- PPDB Table 3" in text and "| Claim" not in text  # no empty table


def test_a_claims_on_column_names_its_measure_and_tiny_p_is_not_zero():
    """The claims table names each claim's measure even where the main table has one
    "Avg." (it may average more columns than the claim's); a p below 0.001 prints
    "<0.001", never "0.000"."""
    from paracl.stages.summary import format_p

    scores = {"none": 30.0, "ppdb_s1": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0}  # fmt: skip
    results = {m: {"stsb": _finetuned(s)} for m, s in scores.items()}
    text = to_markdown(build_summary(results, ["stsb"], "all", GROUPS))
    claim_line = next(line for line in text.splitlines() if line.startswith("| PPDB Table 3"))
    assert "| Fine-tuned avg |" in claim_line
    assert [format_p(p) for p in (0.0004, 0.0005, 0.0496, 0.05)] == [
        "<0.001", "0.001", "0.050", "0.050"]  # fmt: skip


def test_a_claim_waiting_for_seeds_says_which_method():
    """A preset measured across sessions: a claim whose method has seeds still unscored
    names it, rather than saying the column is missing."""
    scores = {"none": 30.0, "ppdb_s1": 40.0, "ppdb_s2": None, "ppdb_s3": 42.0,
              "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0}  # fmt: skip
    results = {m: {"stsb": _finetuned(s) if s else None} for m, s in scores.items()}
    [claim] = build_summary(results, ["stsb"], "all", GROUPS)["claims"]
    assert claim["untested"] == "not every seed scored yet: ppdb"


def test_a_fine_tuned_column_for_some_methods_gets_its_own_average_and_test():
    """evaluate.finetune_tasks run for some methods only: their rows get a fine-tuned
    average with Δ and p against none, the other rows a dash there, and every row keeps
    its unsupervised average (effect presets, issue 33 item 4)."""
    unsup = {"none": 30.0, "ppdb_s1": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
             "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0, "ams": 35.0}  # fmt: skip
    tuned = {"none": 60.0, "ppdb_s1": 62.0, "ppdb_s2": 63.0, "ppdb_s3": 64.0,
             "simcse_unsup_s1": 61.0, "simcse_unsup_s2": 60.0}  # fmt: skip
    only = {"stsb": set(tuned)}
    results = {}
    for run, score in unsup.items():
        results[run] = {"unsup_sts_en": _result(score)}
        if run in tuned:
            results[run]["stsb"] = _finetuned(tuned[run])
    results = {  # what load_results gives for a run outside evaluate.finetune_runs
        run: {t: (r if t not in only or run in only[t] else
                  {"skipped": NOT_RUN, "score": None, "not_run": True})
              for t, r in {**per, "stsb": per.get("stsb")}.items()}
        for run, per in results.items()
    }  # fmt: skip
    summary = build_summary(results, ["unsup_sts_en", "stsb"], "all", GROUPS)
    assert summary["measures"] == ["sts", "finetune"]
    ppdb, ams = summary["methods"]["ppdb"], summary["methods"]["ams"]
    assert ppdb["measures"]["finetune"]["avg"] == pytest.approx(63.0)
    assert ppdb["measures"]["finetune"]["vs_none"]["diff"] == pytest.approx(3.0)
    assert ppdb["measures"]["sts"]["vs_none"]["diff"] == pytest.approx(11.0)
    assert ams["measures"]["finetune"]["avg"] is None
    assert ams["measures"]["sts"]["avg"] == pytest.approx(35.0)
    [claim] = summary["claims"]  # PPDB's, on the fine-tuned average
    assert claim["measure"] == "finetune" and claim["diff"] == pytest.approx(63.0 - 60.5)
    text = to_markdown(summary)
    assert "STS avg" in text and "Fine-tuned avg" in text and f"— {NOT_RUN}" in text
    ams_line = next(line for line in text.splitlines() if line.startswith("| ams"))
    assert "—" in ams_line and "35.0" in ams_line
    assert "Missing cells" not in text  # a planned gap is no missing result


def test_nones_fine_tuning_seeds_are_its_sample_and_welch_tests_against_it():
    """none trains nothing, but fine-tuning it is noisy: with evaluate.baseline_seeds its
    fine-tuned average is one value per fine-tuning seed (mean ± sd), and a method's Δ is
    tested with Welch's test against them, not a one-sample test against their mean."""
    from scipy import stats

    def tuned(scores: list[float]) -> dict:
        runs = [{"seed": i + 1, "test": {"spearman": s}} for i, s in enumerate(scores)]
        return {**_finetuned(sum(scores) / len(scores)), "metric": "spearman", "runs": runs,
                "test": {"n": len(scores)}}  # fmt: skip

    ppdb = {"ppdb_s1": 63.0, "ppdb_s2": 64.0, "ppdb_s3": 66.0}
    results = {"none": {"stsb": tuned([55.0, 61.0, 58.0]), "unsup_sts_en": _result(30.0)}}
    results |= {r: {"stsb": _finetuned(s), "unsup_sts_en": _result(40.0)} for r, s in ppdb.items()}
    groups = {"none": ["none"], "ppdb": list(ppdb)}
    summary = build_summary(results, ["unsup_sts_en", "stsb"], "all", groups)
    none = summary["methods"]["none"]["measures"]["finetune"]
    assert none["avg"] == pytest.approx(58.0) and none["avg_std"] == pytest.approx(3.0)
    effect = summary["methods"]["ppdb"]["measures"]["finetune"]["vs_none"]
    welch = stats.ttest_ind(list(ppdb.values()), [55.0, 61.0, 58.0], equal_var=False).pvalue
    one_sample = stats.ttest_1samp([v - 58.0 for v in ppdb.values()], 0.0).pvalue
    assert effect["diff"] == pytest.approx(6.333, abs=1e-3) and effect["n_baseline"] == 3
    assert effect["p"] == pytest.approx(welch) and effect["p"] > one_sample
    unsup = summary["methods"]["ppdb"]["measures"]["sts"]["vs_none"]  # cosine: exact base
    assert "n_baseline" not in unsup
    text = to_markdown(summary)
    assert "58.0 ± 3.0" in text and "Welch's two-sided two-sample t-test of the method" in text
    # one kind of column: Avg. is the fine-tuned average, tested the same way
    only = build_summary({r: {"stsb": v["stsb"]} for r, v in results.items()}, ["stsb"],
                         "finetune", groups)  # fmt: skip
    assert only["methods"]["ppdb"]["vs_none"]["p"] == pytest.approx(welch)


def test_load_results_marks_runs_outside_the_fine_tuned_methods(tmp_path):
    """A stale metrics file of a run no longer in evaluate.finetune_runs is not read."""
    (tmp_path / "ams").mkdir()
    (tmp_path / "ams" / "stsb.json").write_text('{"score": 99.0}')
    out = load_results(tmp_path, ["none", "ams"], ["stsb"], {"stsb": {"none"}})
    assert out["ams"]["stsb"]["not_run"] and out["none"]["stsb"] is None


def _pi(score: float) -> dict:
    return {"kind": "pi", "score": score, "official_split": True,
            "encoder": {"base_model": {"id": "tiny/base"}}}  # fmt: skip


def test_an_sts_claim_reads_the_sts_columns_alone():
    """The round-trip paper states its claims on the STS average: PI accuracy, its own
    column and measure, never enters them (issue 58 item 2). The paper presets' baseline is
    simcse_unsup_rt (SimCSE's recipe); without it, simcse_unsup stands in."""
    sts = {"none": 30.0, "paraphraser_bleu20_s1": 40.0, "paraphraser_bleu20_s2": 41.0,
           "simcse_unsup_rt_s1": 35.0, "simcse_unsup_rt_s2": 36.0}  # fmt: skip
    pi = {"none": 60.0, "paraphraser_bleu20_s1": 50.0, "paraphraser_bleu20_s2": 51.0,
          "simcse_unsup_rt_s1": 90.0, "simcse_unsup_rt_s2": 91.0}  # fmt: skip
    results = {r: {"unsup_sts_en": _result(sts[r]), "pi_en": _pi(pi[r])} for r in sts}
    groups = {"none": ["none"], "paraphraser_bleu20": list(sts)[1:3],
              "simcse_unsup_rt": list(sts)[3:]}  # fmt: skip
    summary = build_summary(results, ["unsup_sts_en", "pi_en"], "all", groups)
    assert summary["measures"] == ["sts", "pi"]
    [claim] = summary["claims"]
    assert (claim["other"], claim["measure"]) == ("simcse_unsup_rt", "sts")
    assert claim["diff"] == pytest.approx(40.5 - 35.5) and claim["holds"]  # PI would flip it
    line = next(x for x in squeezed(to_markdown(summary)).splitlines() if x.startswith("| Round"))
    assert "| STS avg |" in line and "| holds |" in line
    renamed = {"simcse_unsup" if k == "simcse_unsup_rt" else k: v for k, v in groups.items()}
    [claim] = build_summary(results, ["unsup_sts_en", "pi_en"], "all", renamed)["claims"]
    assert claim["other"] == "simcse_unsup" and claim["measure"] == "sts"


def _tuned(scores: list[float], metric: str = "spearman") -> dict:
    """A fine-tuning job's JSON: one test score per fine-tuning seed."""
    runs = [{"seed": i + 1, "test": {metric: s}} for i, s in enumerate(scores)]
    return {**_finetuned(sum(scores) / len(scores)), "metric": metric, "runs": runs,
            "test": {"n": len(scores)}}  # fmt: skip


def test_the_pi_papers_jobs_stay_out_of_the_ppdb_papers_fine_tuned_average():
    """paper-en scores every method on Table 3's tasks and on the PI paper's two jobs
    (pi_xling_full, a bi-encoder; pawsx_xling, a cross-encoder). The PPDB claim is judged on
    Table 3's fine-tuned average alone, one value per fine-tuning seed of each one-run
    method; the bi-encoder's accuracy is a PI column and the cross-encoder its own."""
    bi = {"kind": "pi_xling", "score": 70.0, "official_split": True,
          "breakdown": {"en": 80.0, "ja": 60.0, "en_ja": 70.0, "ja_en": 70.0,
                        "translation": 70.0},  # Table I's mean: (70 + 70 + 70) / 3
          "encoder": {"base_model": {"id": "tiny/base"}}}  # fmt: skip
    stsb = {"none": [50.0, 52.0], "ppdb": [60.0, 64.0], "simcse_unsup": [55.0, 57.0]}
    cross = _tuned([99.0, 97.0], "accuracy")
    for run in cross["runs"]:  # the zero-shot and cross-lingual sets, scored per seed
        run["eval_sets"] = {k: {"accuracy": 90.0} for k in ("ja", "en_ja", "ja_en", "translation")}
    results = {m: {"stsb": _tuned(s), "pi_xling_full": bi, "pawsx_xling": cross}
               for m, s in stsb.items()}  # fmt: skip
    tasks = ["stsb", "pi_xling_full", "pawsx_xling"]
    summary = build_summary(results, tasks, "finetune", {m: [m] for m in results})
    assert summary["measures"] == ["pi", "finetune", "pi_ce"]
    ppdb = summary["methods"]["ppdb"]
    assert ppdb["avg"] == pytest.approx(62.0)  # Avg. over Table 3's tasks only
    assert ppdb["measures"]["finetune"]["avg"] == pytest.approx(62.0)
    assert ppdb["measures"]["pi"]["avg"] == pytest.approx(70.0)
    claim = next(c for c in summary["claims"] if c["other"] == "simcse_unsup")
    assert claim["measure"] == "finetune" and claim["n_seeds"] == [2, 2]
    assert claim["diff"] == pytest.approx(6.0)


def test_a_claim_names_its_rows_base_and_refuses_rows_on_two_bases():
    """Each paper's rows on its own base: a claim compares two rows on one base model and
    names it; rows that ran on two bases are refused, naming each row's base (a toy pair:
    ppdb on one base, simcse_unsup on another). A continued encoder (jcse_two_stage from
    models/encoders/jcse_sN) is on the base of the run it continues."""

    def on(score: float, base: str) -> dict:
        return {**_finetuned(score), "encoder": {"base_model": {"id": base}}}

    scores = {"ppdb_s1": 40.0, "ppdb_s2": 41.0, "ppdb_s3": 42.0,
              "simcse_unsup_s1": 31.0, "simcse_unsup_s2": 29.0}  # fmt: skip
    alike = {m: {"stsb": on(s, "rinna/japanese-roberta-base")} for m, s in scores.items()}
    [claim] = build_summary(alike, ["stsb"], "all", GROUPS)["claims"]
    assert claim["base"] == "rinna/japanese-roberta-base" and claim["holds"]
    assert "refused" not in claim
    mixed = {**alike, **{f"simcse_unsup_s{i}": {"stsb": on(s, "cl-tohoku/bert-base-japanese")}
                         for i, s in ((1, 31.0), (2, 29.0))}}  # fmt: skip
    summary = build_summary(mixed, ["stsb"], "all", GROUPS)
    [claim] = summary["claims"]
    assert claim["base"] is None and not claim["holds"]
    assert claim["refused"] == (
        "rows on two bases (ppdb on rinna/japanese-roberta-base; "
        "simcse_unsup on cl-tohoku/bert-base-japanese)"
    )
    assert verdict(claim).startswith("refused: rows on two bases (ppdb on rinna/")
    line = next(x for x in squeezed(to_markdown(summary)).splitlines()
                if x.startswith("| PPDB Table 3"))  # fmt: skip
    assert "| two |" in line and "| refused: rows on two bases" in line
    # a summary.json written before claims named a base is judged from its rows
    old = {**summary, "claims": [{k: v for k, v in claim.items() if k not in ("base", "refused")}
                                 | {"holds": True}]}  # fmt: skip
    [judged] = judged_claims(old)
    assert judged["refused"] == claim["refused"] and not judged["holds"]
    # stage two continues stage one's encoder of the same seed: one base, jcse's
    methods = {"jcse": {"loss": "jcse", "input": "negatives.parquet", "seeds": [1, 2]},
               "jcse_two_stage": {"loss": "jcse", "input": "models/encoders/jcse",
                                  "data": "nli.tsv", "seeds": [1, 2]}}  # fmt: skip
    groups = run_groups(expand_runs({"methods": methods, "seeds": None}))
    tohoku = "cl-tohoku/bert-base-japanese"
    ran = {"jcse_s1": (70.0, tohoku), "jcse_s2": (71.0, tohoku),
           "jcse_two_stage_s1": (74.0, "models/encoders/jcse_s1"),
           "jcse_two_stage_s2": (75.0, "models/encoders/jcse_s2")}  # fmt: skip
    results = {run: {"unsup_sts_ja": {**_result(score), "encoder": {"base_model": {"id": base}}}}
               for run, (score, base) in ran.items()}  # fmt: skip
    summary = build_summary(results, ["unsup_sts_ja"], "all", groups)
    tested = [c for c in summary["claims"] if "untested" not in c]  # Table 6's: no domain set
    assert [c["claim"] for c in tested] == ["JCSE: two-stage training above stage one alone"]
    assert tested[0]["base"] == tohoku and "refused" not in tested[0]
    bases = [x for x in to_markdown(summary).splitlines() if x.startswith("- jcse_two_stage:")]
    assert bases == [f"- jcse_two_stage: {tohoku} (continued from models/encoders/jcse_s1, "
                     "models/encoders/jcse_s2)"]  # fmt: skip


def _sts(avg: float, sets: dict[str, float], excluded: dict[str, str] | None = None) -> dict:
    """An unsup_sts job as evaluate writes it: its average over the sets it scored."""
    out = {**_result(avg), "sets": {n: {"spearman": v} for n, v in sets.items()}}
    return out | ({"excluded_sets": excluded} if excluded else {})


def test_a_set_left_out_of_a_rows_score_says_why_and_a_mix_of_sets_is_an_error():
    sick = {"SICKRelatedness": "trained on SICK: not scored (evaluate.exclude_sts)"}
    every = {"SICKRelatedness": "not scored for any row (evaluate.exclude_sts), like for like"}
    groups = {"none": ["none"], "sup": ["sup_s1", "sup_s2"]}
    results = {"none": {"unsup_sts_en": _sts(40.0, {"STS12": 40.0}, every)},
               "sup_s1": {"unsup_sts_en": _sts(50.0, {"STS12": 50.0}, sick)},
               "sup_s2": {"unsup_sts_en": _sts(52.0, {"STS12": 52.0}, sick)}}  # fmt: skip
    md = squeezed(to_markdown(build_summary(results, ["unsup_sts_en"], "all", groups)))
    assert "| Method | STS12 | SICKRelatedness |" in md
    assert "| none | 40.0 | excluded: every row |" in md  # a reason, never a number
    assert "| sup | 51.0 ± 1.4 | excluded: trained on SICK |" in md
    # none scored on SICK-R beside rows that are not: their averages are unlike
    results["none"] = {"unsup_sts_en": _sts(45.0, {"STS12": 40.0, "SICKRelatedness": 50.0})}
    with pytest.raises(ArtifactError, match="different STS sets.*SICKRelatedness"):
        build_summary(results, ["unsup_sts_en"], "all", groups)


TABLE4 = {"nli_ab": [78.5, 78.6, 78.7]} | {  # the paper's AB 78.57; its A'B' etc. ~79
    f"{prefix}_{tag}": [base + d for d in (-0.1, 0.0, 0.1)]
    for tag, shift in (("bleu0_5", 0.1), ("bleu20", 0.0), ("bleu40", 0.0))
    for prefix, base in (("nli_apbp", 79.2 + shift), ("nli_apb", 79.0 + shift),
                         ("nli_abp", 79.1 + shift), ("nli_ab_apbp", 79.2 + shift))
}  # fmt: skip


def test_table4_is_laid_out_as_the_papers_and_its_claims_are_tested(tmp_path):
    results = {f"{m}_s{i + 1}": {"unsup_sts_en": _result(v)} for m, vs in TABLE4.items()
               for i, v in enumerate(vs)}  # fmt: skip
    groups = {m: [f"{m}_s{i}" for i in (1, 2, 3)] for m in TABLE4}
    summary = build_summary(results, ["unsup_sts_en"], "all", groups)
    md = squeezed(to_markdown(summary))
    assert "| &lt;SIM95> with | A'B' | A'B | AB' | AB + A'B' | AB |" in md
    assert (
        "| SimCSE + &lt;BLEU0_5> | 79.3 ± 0.1 | 79.1 ± 0.1 | 79.2 ± 0.1 | 79.3 ± 0.1 | 78.6 ± 0.1 |"
        in md
    )
    assert (
        "| SimCSE + &lt;BLEU40> | 79.2 ± 0.1 | 79.0 ± 0.1 | 79.1 ± 0.1 | 79.2 ± 0.1 | 78.6 ± 0.1 |"
        in md
    )
    part = split_parts(to_markdown(summary))["table4"]  # `report:<name>:table4` on a page
    assert part.startswith("Table 4 (round-trip") and part.count("| SimCSE + ") == 3
    assert part.endswith("AB has no tag (one row, shown in each).")
    shown = tmp_path / "results/effect-en-roundtrip-ab"  # a page showing the table alone
    shown.mkdir(parents=True)
    (shown / "summary.json").write_text(json.dumps(summary))
    (shown / "measured.json").write_text('{"date": "2026-12-07", "machine": "2 cores"}')
    block = render_block(tmp_path, tmp_path / "docs/results/x.md", shown.name, "table4")
    assert block.startswith("Table 4 (round-trip") and "Measured 2026-12-07 on 2 cores" in block
    claims = {c["claim"]: c for c in summary["claims"]}
    assert set(claims) == {c for c, *_ in TABLE4_CLAIMS}  # 9 "above AB", 3 "≈ A'B'"
    above = [c for name, c in claims.items() if "above AB" in name]
    assert len(above) == 9 and all(c["holds"] and c["other"] == "nli_ab" for c in above)
    same = [c for name, c in claims.items() if "≈" in name]
    assert len(same) == 3 and all(c["holds"] and c["margin"] == 1.0 for c in same)
    assert "≈: Welch's two one-sided tests (TOST) within ±1" in md
    # a doubled row 2 points above A'B' is not the same: TOST does not hold
    far = {f"nli_ab_apbp_bleu20_s{i + 1}": {"unsup_sts_en": _result(81.2 + d)}
           for i, d in enumerate((-0.1, 0.0, 0.1))}  # fmt: skip
    summary = build_summary(results | far, ["unsup_sts_en"], "all", groups)
    far_claim = next(c for c in summary["claims"] if "≈" in c["claim"] and "BLEU20" in c["claim"])
    assert not far_claim["holds"] and far_claim["diff"] > 1.9


def test_the_control_of_as_many_steps_is_a_column_of_its_own_and_a_claim_per_tag():
    """AB for 2 epochs (nli_ab_twice, not the paper's) has AB + A'B''s steps: the doubled
    row above it is the paraphrases' gain, not the steps'. Its column comes only with it."""
    rows = TABLE4 | {"nli_ab_twice": [78.8, 78.9, 79.0]}
    results = {f"{m}_s{i + 1}": {"unsup_sts_en": _result(v)} for m, vs in rows.items()
               for i, v in enumerate(vs)}  # fmt: skip
    groups = {m: [f"{m}_s{i}" for i in (1, 2, 3)] for m in rows}
    summary = build_summary(results, ["unsup_sts_en"], "all", groups)
    md = squeezed(to_markdown(summary))
    assert "| AB | AB, 2 epochs (control) |" in md and "| 78.6 ± 0.1 | 78.9 ± 0.1 |" in md
    assert "AB, 2 epochs: not the paper's" in md
    control = [c for c in summary["claims"] if "as many steps" in c["claim"]]
    assert {c["method"] for c in control} == {f"nli_ab_apbp_{t}" for t in
                                              ("bleu0_5", "bleu20", "bleu40")}  # fmt: skip
    assert all(c["other"] == "nli_ab_twice" and c["n_seeds"] == [3, 3] for c in control)
    assert all(c["holds"] for c in control)  # 79.2-79.3 against 78.9 with sd 0.1


def test_no_table4_without_its_rows():
    results = {"none": {"unsup_sts_en": _result(40.0)}}
    assert "A'B'" not in to_markdown(build_summary(results, ["unsup_sts_en"], "all"))
