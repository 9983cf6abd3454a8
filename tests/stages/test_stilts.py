"""The round-trip paper's §6 (STILTs): nli_pairs' labelled SICK pairs, train_intermediate's
arms (a 3-way classifier, saved without its head, which evaluate_finetune fine-tunes), and
Table 5 / Figure 4 and their claims from fine-tuning jobs' JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import stage_helpers
import torch
from safetensors.torch import load_file
from stage_helpers import REPO, run_main, run_stage
from test_eval_e2e import make_raw

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_parquet, write_parquet
from paracl.parts import stilts_tables as st
from paracl.parts.evaluation.tasks import load_task
from paracl.parts.finetune import tuning
from paracl.parts.finetune.saved_head import (
    HEAD_INFO,
    HEAD_WEIGHTS,
    load_with_head,
    save_head,
    score_with_head,
)
from paracl.parts.finetune.tuning import (
    FinetuneConfig,
    finetune_once,
    finetune_task,
)
from paracl.schema import load_params, with_runs
from paracl.stages import nli_pairs, paraphrase_pairs, summary
from paracl.stages import train_intermediate as ti
from paracl.stages.evaluate_finetune import finetune_runs

pytestmark = pytest.mark.usefixtures("one_thread")
CPU = torch.device("cpu")
PAIRS = Path("data/nli/pairs.parquet")


def _raw(root: Path) -> Path:
    """make_raw's data/raw, SICK replaced: 9 TRAIN pairs (3 a label), one of whose
    sentences is STS-B test's first sentence lower-cased with a final " ." (as STS-B holds
    SICK's), and TRIAL / TEST pairs for SICK-E's dev and test."""
    raw = make_raw(root / "data" / "raw")
    first = (raw / "stsbenchmark" / "sts-test.csv").read_text().split("\n")[0].split("\t")[5]
    labels = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
    rows = [(i, f"a man plays number {i}", f"someone does thing {i}", labels[i % 3], "TRAIN")
            for i in range(1, 10)]  # fmt: skip
    rows[0] = (1, f"{first.lower().rstrip('.')} .", "a person", "ENTAILMENT", "TRAIN")
    rows += [(10 + i, f"a dog runs {i}", f"an animal {i}", labels[i % 3], split)
             for i in range(9) for split in ("TRIAL", "TEST")]  # fmt: skip
    stage_helpers.write_sick(raw / "sick" / "SICK.txt", rows)
    return raw


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    _raw(tmp_path)
    return tmp_path


def _params(**sections) -> dict:
    params = load_params(REPO / "params.yaml")
    for name, values in sections.items():
        params[name] = {**params[name], **values}
    return with_runs(params)


# --- nli_pairs ---------------------------------------------------------------------------


def test_nli_pairs_keep_every_label_and_drop_pairs_leaking_into_sts_b(project):
    run_stage("nli_pairs", _params())
    pairs = read_parquet(PAIRS, nli_pairs.PAIRS)
    assert pairs["pair_id"].tolist() == list(range(2, 10))  # pair 1 shares STS-B's sentence
    assert set(pairs["label"]) == set(nli_pairs.LABELS)
    metrics = json.loads(Path("metrics/nli_pairs.json").read_text())
    assert metrics["n_leaking"] == {"STSBenchmark": 1} and metrics["n_kept"] == 8


def test_nli_pairs_sample_is_stratified_seeded_and_the_same_bytes(project):
    params = _params(nli_pairs={"max_pairs": 6})
    run_stage("nli_pairs", params)
    first = PAIRS.read_bytes()
    assert read_parquet(PAIRS)["label"].value_counts().to_dict() == {
        "entailment": 2, "neutral": 2, "contradiction": 2}  # fmt: skip
    run_stage("nli_pairs", params)
    assert PAIRS.read_bytes() == first


@pytest.mark.parametrize(
    ("cfg", "message"),
    [({"splits": []}, "'nli_pairs.splits' lists no split"),
     ({"exclude_sts": ["STSBenchmark", "STSBenchmark"]}, "'nli_pairs.exclude_sts' lists")],
)  # fmt: skip
def test_nli_pairs_bad_params_are_one_line_errors(project, cfg, message):
    with pytest.raises(ParamsError, match=message) as err:
        nli_pairs.build({**load_params(REPO / "params.yaml")["nli_pairs"], **cfg}, "data/raw",
                        PAIRS, 0)  # fmt: skip
    assert "\n" not in str(err.value)


# --- train_intermediate ------------------------------------------------------------------

FAST = {"epochs": 2, "lr": 1e-3, "batch_size": 4, "max_seq_length": 32, "mini_batch_size": None}


def _arm(
    project: Path, start: Path, arm: str, entry: dict, out: str = "models/encoders", **section
) -> dict:
    """Stage train_intermediate@arm from `start` (a plain transformers folder), its metrics;
    `section`: more train_intermediate keys."""
    params = _params(train_intermediate={**FAST, "arms": {arm: entry}, **section})
    params["precision"] = "fp32"
    Path("metrics/train").mkdir(parents=True, exist_ok=True)
    Path("metrics/train/none.json").write_text(json.dumps({"model": {"id": "tiny"}}))
    metrics = f"metrics/train/{arm}-{Path(out).name}.json"
    run_main("train_intermediate", params, arm, str(start), "metrics/train/none.json",
             f"{out}/{arm}", metrics)  # fmt: skip
    return json.loads(Path(metrics).read_text())


def _bare(key: str) -> str:
    """A weight's name inside the transformer (a LM head model's prefix dropped)."""
    return key.split(".", 1)[1] if key.startswith(("bert.", "model.")) else key


@pytest.mark.parametrize("model", ["tiny_bert", "tiny_llama"])
def test_an_arm_trains_and_saves_an_encoder_evaluate_finetune_fine_tunes(project, model, request):
    start = request.getfixturevalue(model)
    run_stage("nli_pairs", _params())
    metrics = _arm(project, start, "stilts", {"input": str(PAIRS), "with_original": False})
    assert metrics["loss"] == ti.LOSS and metrics["model"] == {"id": "tiny"}
    assert metrics["intermediate"]["augmented_by"] is None and metrics["steps"] == 2 * 2
    assert 0 <= metrics["dev_accuracy"] <= 100 and len(metrics["train_loss"]) == 2
    saved = load_file(Path("models/encoders/stilts/model.safetensors"))
    base = {_bare(k): v for k, v in load_file(Path(start) / "model.safetensors").items()}
    assert not any("classifier" in k or k.startswith("score") for k in saved)  # no head
    emb = next(k for k in saved if k.endswith(("word_embeddings.weight", "embed_tokens.weight")))
    assert saved[emb].shape == base[emb].shape  # the head's pad token dropped again
    assert any(not torch.equal(v, base[k]) for k, v in saved.items() if k in base)  # trained
    data = load_task("sicke", "data/raw", 0)
    cfg = FinetuneConfig(epochs=1, lr=1e-3, batch_size=4, max_seq_length=32, patience=1,
                         precision="fp32", train_layers=None, length_grouping=False,
                         mini_batch_size=None, finetune_head="last_token")  # fmt: skip
    out = finetune_once("models/encoders/stilts", data, cfg, 1, CPU)
    assert out["epochs_run"] == 1 and out["head"] in ("[CLS] (transformers)", "closing <eos>")


def test_table5_reads_the_median_dev_seed_as_evaluate_finetune_picks_it(tiny_bert, project):
    """The direct row and every arm are scored alike: Table 5's cell is the job's own
    median-dev seed (test_at_median_dev), for a real 3-seed fine-tuning job."""
    cfg = FinetuneConfig(epochs=1, lr=1e-3, batch_size=4, max_seq_length=32, patience=1,
                         precision="fp32", train_layers=None, length_grouping=False,
                         mini_batch_size=None, finetune_head="last_token")  # fmt: skip
    job = finetune_task(tiny_bert, load_task("sicke", "data/raw", 0), cfg, [1, 2, 3], CPU)
    job |= {"score": job["test"]["mean"], "dev_score": job["dev"]["mean"]}
    cell = st.cell_score([job], job["metric"])
    assert cell["median_dev"] == pytest.approx(job["test_at_median_dev"])
    assert cell["n"] == 3 and cell["values"] == [r["test"][job["metric"]] for r in job["runs"]]


def test_an_arm_is_deterministic(project, tiny_bert):
    run_stage("nli_pairs", _params())
    entry = {"input": str(PAIRS), "with_original": False}
    first = _arm(project, tiny_bert, "stilts", entry, "models/a")
    again = _arm(project, tiny_bert, "stilts", entry, "models/b")
    assert first == again
    assert Path("metrics/train/stilts-a.json").read_bytes() == Path(
        "metrics/train/stilts-b.json").read_bytes()  # fmt: skip
    a, b = (load_file(Path(f"models/{d}/stilts/model.safetensors")) for d in "ab")
    assert all(torch.equal(a[k], b[k]) for k in a)


def _paraphrased(path: Path) -> pd.DataFrame:
    """A paraphrase_pairs output of the pairs (its own `substitute`), each sentence upper-cased."""
    pairs = read_parquet(PAIRS)
    texts = paraphrase_pairs.unique_sentences(pairs, ["sentence1", "sentence2"])
    out = paraphrase_pairs.substitute(pairs, ["sentence1", "sentence2"],
                                      {t: t.upper() for t in texts}, "<SIM95><BLEU0_5>")  # fmt: skip
    schema = paraphrase_pairs.output_schema(PAIRS, ["sentence1", "sentence2"], "test")
    write_parquet(out, path, schema)
    return pairs


def test_an_augmented_arm_trains_on_the_pairs_and_their_paraphrases_labels_kept(project):
    run_stage("nli_pairs", _params())
    pairs = _paraphrased(Path("data/paraphrased/p.parquet"))
    got, info = ti.arm_pairs("x", {"input": "data/paraphrased/p.parquet", "with_original": True})
    assert len(got) == 2 * len(pairs) == info["n_pairs"]
    assert (
        got.iloc[: len(pairs)].values.tolist()
        == pairs[["sentence1", "sentence2", "label"]].values.tolist()
    )
    para = got.iloc[len(pairs) :].reset_index(drop=True)
    assert para["sentence1"].tolist() == pairs["sentence1"].str.upper().tolist()
    assert para["label"].tolist() == pairs["label"].tolist()
    assert info["augmented_by"] == "<SIM95><BLEU0_5>"
    with pytest.raises(ParamsError, match="'train_intermediate.arms.y.with_original'"):
        ti.arm_pairs("y", {"input": str(PAIRS), "with_original": True})


BAD_ARMS = [
    ({"start": "nobody"}, "'train_intermediate.start': 'nobody' is not a run"),
    ({"arms": {"none": {"input": "x.parquet"}}}, "'train_intermediate.arms.none': a run"),
    ({"tasks": ["cola"]}, "'train_intermediate.tasks': 'cola' is not a task of"),
    ({"same_task": "mnli"}, "'train_intermediate.same_task': 'mnli' is not a task the STILTs"),
    ({"same_task": "stsb"}, "'train_intermediate.same_task': 'stsb' is not a 3-way NLI task"),
]


@pytest.mark.parametrize(("section", "message"), BAD_ARMS)
def test_bad_arms_are_one_line_errors(section, message):
    params = load_params(REPO / "params.yaml")
    cfg = {**params["train_intermediate"], "arms": {"a": {"input": "x.parquet"}}, **section}
    with pytest.raises(ParamsError, match=message) as err:
        ti.check_arms(cfg, params["train_contrastive"]["runs"], ["stsb"])
    assert "\n" not in str(err.value)


def test_without_arms_start_and_tasks_are_not_checked():
    """A run list without `none` (a preset that trains other methods only) needs no arm."""
    cfg = {"start": "none", "arms": {}, "tasks": ["cola"]}
    assert ti.check_arms(cfg, {"ebsim": {}}, []) is None


def test_a_missing_input_column_names_the_arm(project):
    pd.DataFrame({"a": ["x"]}).to_parquet("bad.parquet")
    with pytest.raises(InputError, match=r"no column 'sentence1' \(train_intermediate.arms.z"):
        ti.arm_pairs("z", {"input": "bad.parquet", "with_original": False})


def test_every_arm_is_a_fine_tuned_run():
    params = load_params(REPO / "params.yaml")
    params["train_intermediate"]["arms"] = {"stilts": {"input": "x", "with_original": False}}
    params["evaluate"] = {**params["evaluate"], "finetune_methods": ["none"]}
    assert finetune_runs(params) == ["none", "stilts"]


# --- Table 5, Figure 4 and the claims ----------------------------------------------------


def _job(metric: str, seeds: list[tuple[float, float]], by=None, arm=None) -> dict:
    """A fine-tuning job's JSON: (dev, test) per fine-tuning seed; the median-dev seed's test."""
    runs = [{"seed": i, "dev": d, "test": {metric: t}} for i, (d, t) in enumerate(seeds)]
    median = sorted(runs, key=lambda r: (r["dev"], r["seed"]))[(len(runs) - 1) // 2]
    job = {
        "kind": "finetune",
        "metric": metric,
        "runs": runs,
        "score": sum(t for _, t in seeds) / 3,
        "dev_score": sum(d for d, _ in seeds) / 3,
        "test_at_median_dev": median["test"][metric],
    }
    if arm:
        job["intermediate"] = {"arm": arm, "start_run": "none", "augmented_by": by}
    return job


# run -> (augmented_by, {task: [(dev, test) per seed]})
JOBS = {
    "none": (None, {"cola": [(50, 40), (60, 45), (55, 70)], "rte": [(50, 50), (51, 51), (52, 52)]}),
    "stilts": (None, {"cola": [(40, 30), (41, 31), (42, 32)], "rte": [(60, 60), (61, 61), (62, 62)]}),
    "stilts_rt": ("roundtrip_greedy",
                  {"cola": [(40, 33), (41, 34), (42, 35)], "rte": [(60, 58), (61, 59), (62, 60)]}),
    "stilts_a": ("<SIM95><BLEU0_5>",
                 {"cola": [(45, 20), (46, 21), (47, 22)], "rte": [(70, 63), (71, 64), (72, 65)]}),
    "stilts_b": ("<SIM70><BLEU20>",
                 {"cola": [(30, 36), (31, 37), (32, 38)], "rte": [(65, 70), (66, 71), (67, 72)]}),
}  # fmt: skip
METRIC = {"cola": "mcc", "rte": "accuracy"}


def _results() -> tuple[dict, dict]:
    results = {run: {t: _job(METRIC[t], s, by, None if run == "none" else run)
                     for t, s in tasks.items()} for run, (by, tasks) in JOBS.items()}  # fmt: skip
    return results, {run: [run] for run in JOBS}


def test_table5_cells_are_the_median_dev_seeds_test_for_every_row():
    table = st.stilts_tables(*_results())
    assert table["roles"] == {"finetune": "none", "stilts": "stilts", "roundtrip": "stilts_rt"}
    assert table["tasks"] == ["cola", "rte"]
    assert table["rows"]["finetune"]["cola"]["median_dev"] == 70  # not the mean (51.7)
    assert table["rows"]["stilts"]["rte"]["median_dev"] == 61
    assert table["cells"]["SIM95_BLEU0_5"]["rte"]["median_dev"] == 64
    assert table["best"] == {"cola": "SIM70_BLEU20", "rte": "SIM70_BLEU20"}  # on test
    assert table["best_by_dev"] == {"cola": "SIM95_BLEU0_5", "rte": "SIM95_BLEU0_5"}
    assert table["figure4"]["rte"] == {"SIM95_BLEU0_5": 3.0, "SIM70_BLEU20": 10.0}
    assert table["sims"] == ["SIM95", "SIM70"] and table["bleus"] == ["BLEU0_5", "BLEU20"]


def test_the_claims_use_the_dev_chosen_cell_and_welch_over_seeds():
    table = st.stilts_tables(*_results())
    claims = {c["claim"]: c for c in st.stilts_claims(table)}
    above = claims["Round trip §6: + paraphraser above STILTs on RTE"]
    assert (above["method"], above["other"], above["measure"]) == (
        "stilts_a",
        "stilts",
        "stilts_rte",
    )
    assert above["diff"] == pytest.approx(3.0) and above["holds"] and above["p"] < 0.05
    cola = claims["Round trip §6: fine-tuning above STILTs on CoLA (no method helps CoLA)"]
    assert cola["method"] == "none" and cola["diff"] > 0
    assert "Round trip §6: + paraphraser above + round trip on CoLA" in claims
    assert not any("STILTs on CoLA" in c and "paraphraser above" in c for c in claims)


def test_the_summary_renders_table5_and_figure4_and_report_finds_them(tmp_path):
    from paracl import report

    results, groups = _results()
    out = summary.build_summary(results, ["cola", "rte"], "finetune", groups)
    assert out["stilts"]["roles"]["stilts"] == "stilts"
    text = summary.to_markdown(json.loads(json.dumps(out)))  # as summary.json reads back
    assert "Table 5 (round-trip paper's layout)" in text and "Figure 4 (round-trip" in text
    assert "| best tag (test)" in text and "&lt;SIM70>&lt;BLEU20>" in text  # escaped as HTML
    part = report.split_parts(text)["stilts"]
    assert part.startswith("Table 5") and "Figure 4" in part
    st.plot_figure4(out["stilts"], tmp_path / "f4.png")
    assert (tmp_path / "f4.png").stat().st_size > 0


def test_sts_b_is_scored_on_pearson_as_the_paper():
    assert st.metric("stsb") == "pearson" and st.metric("rte") == "accuracy"
    job = _job("spearman", [(50, 40), (60, 45), (55, 70)])
    for run, pearson in zip(job["runs"], (1.0, 2.0, 3.0), strict=True):
        run["test"]["pearson"] = pearson
    assert st.cell_score([job], "pearson")["median_dev"] == 3.0  # seed 2: dev 55, the median


# --- dvc.yaml ----------------------------------------------------------------------------


@pytest.mark.parametrize("stage", ["nli_pairs", "train_intermediate@stilts"])
def test_dvc_stage_deps_and_params_cover_what_it_runs_and_reads(stage):
    """Every module the stage imports is under a dep (a code change reruns it) and every
    top-level key it reads is a param; an arm exists only once the params name one."""
    import yaml
    from stage_helpers import dep_paths, expand_stages
    from test_stage_deps import assert_deps_cover_code, assert_params_cover_reads

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["train_intermediate"]["arms"] = {"stilts": {"input": "data/nli/pairs.parquet"}}
    got = expand_stages(yaml.safe_load((REPO / "dvc.yaml").read_text()), params)[stage]
    assert_deps_cover_code(stage, got)
    assert_params_cover_reads(stage, got)
    deps = dep_paths(got["deps"])
    if stage != "nli_pairs":
        assert {"data/nli/pairs.parquet", "models/encoders/none"} <= set(deps)
        assert dep_paths(got["outs"]) == ["models/encoders/stilts", "metrics/train/stilts.json"]


def test_the_stilts_rows_follow_train_intermediate_tasks_in_the_stage_and_the_summary():
    """An arm runs every task of train_intermediate.tasks (never finetune_task_methods' list)
    and the start run only those; the summary reads the same cells as not run."""
    from paracl.stages.evaluate_finetune import skipped

    params = load_params(REPO / "params.yaml")
    params["train_intermediate"] |= {"tasks": ["cola"], "arms": {"stilts": {"input": "x"}}}
    params["evaluate"] |= {"finetune_tasks": ["cola", "stsb"], "finetune_methods": ["none"],
                           "finetune_task_methods": {"cola": ["none"]}}  # fmt: skip
    params["evaluate"]["finetune_runs"] = finetune_runs(params)
    assert skipped(params, "stilts", "cola") is None  # an arm: finetune_task_methods not read
    assert "train_intermediate.tasks: cola" in skipped(params, "stilts", "stsb")["skipped"]
    assert "train_intermediate.tasks" in skipped(params, "none", "stsb")["skipped"]  # start
    assert skipped(params, "none", "cola") is None
    runs = {**params["train_contrastive"]["runs"], "stilts": {"method": "stilts"}}
    only = summary.finetune_only(params["evaluate"], runs, params["train_intermediate"])
    assert only == {"cola": {"none", "stilts"}, "stsb": set()}


# --- the §6 fine-tuning recipe (tasks.STILTS) ---------------------------------------------


def test_a_stilts_variant_reads_its_tasks_data_on_section_6s_recipe(tmp_path):
    """`<task>_stilts`: the same files, splits and metric as the task, on §6.1's recipe (10
    epochs under 10k training pairs, else 3; lr 2e-5, batch 32); the task keeps EBSIM's."""
    from paracl.parts.evaluation import tasks

    assert set(tasks.STILTS) == {"mrpc_stilts", "qqp_stilts", "stsb_stilts"}
    assert set(tasks.STILTS) <= set(tasks.FINETUNE_JOBS)
    epochs = {"mrpc_stilts": 10, "qqp_stilts": 3, "stsb_stilts": 10}
    for name, variant in tasks.STILTS.items():
        task = tasks.get_task(variant.variant_of)
        assert tasks.get_task(name) is variant and tasks.base_task(name) == task.name
        assert (variant.splits, variant.metric, variant.labels) == (
            task.splits, task.metric, task.labels)  # fmt: skip
        assert (task.epochs, task.lr, task.hp_source) == (3, 5e-5, tasks.EBSIM)
        assert (variant.epochs, variant.lr, variant.batch_size) == (epochs[name], 2e-5, 32)
        assert variant.hp_source.startswith("round-trip paper §6.1")
    for name in ("cola", "rte"):  # the registry's own §6 tasks share the one source
        assert tasks.get_task(name).hp_source == tasks.RT_SMALL
    raw = _raw(tmp_path)
    plain, variant = (load_task(n, raw, 1, missing="resplit") for n in ("stsb", "stsb_stilts"))
    for split in ("train", "dev", "test"):
        assert getattr(plain, split).equals(getattr(variant, split))


def _paper_en(tmp_path: Path) -> dict:
    """paper-en's params, resolved as `paracl preset paper-en` writes them."""
    import shutil

    from paracl import presets

    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    presets.apply_preset(
        presets.load_preset("paper-en", REPO / "presets"), tmp_path / "params.yaml"
    )
    return load_params(tmp_path / "params.yaml")


def test_paper_en_fine_tunes_stilts_rows_on_section_6_and_ebsims_rows_on_ebsims(tmp_path):
    """What evaluate_finetune runs for each (run, task) of paper-en: every STILTs row
    (the start run, Table 5's fine-tuning row, and each arm) on the 8 GLUE tasks at §6.1's
    recipe; EBSIM's rows on MRPC, QQP, STS-B at EBSIM's; Table 5 fills its columns."""
    from paracl.parts.evaluation.tasks import base_task
    from paracl.stages.evaluate_finetune import recipe, skipped

    params = _paper_en(tmp_path)
    ev, stilts = params["evaluate"], params["train_intermediate"]
    rows = [stilts["start"], *stilts["arms"]]
    assert stilts["start"] == "bert_large_none" and len(stilts["arms"]) == 50
    small = {"cola", "mrpc", "stsb", "rte"}  # under 10k training pairs (§6.1)
    ran = {
        run: {t: recipe(t, ev) for t in ev["finetune_tasks"] if skipped(params, run, t) is None}
        for run in ev["finetune_runs"]
    }
    for run in rows:
        assert {base_task(t) for t in ran[run]} == set(st.TASK_ORDER) - {"mnli_mm"}, run
        for t, hp in ran[run].items():
            epochs = 10 if base_task(t) in small else 3
            assert hp == {"epochs": epochs, "lr": 2e-5, "batch_size": 32}, (run, t)
    ebsim = [r for r in ev["finetune_runs"] if r == "none" or r.startswith("ebsim")]
    assert len(ebsim) == 11 and "bert_large_none" not in ebsim
    for run in ebsim:
        assert {"mrpc", "qqp", "stsb"} <= set(ran[run]) and not set(ran[run]) & {
            "mrpc_stilts", "qqp_stilts", "stsb_stilts", "cola", "mnli"}  # fmt: skip
        for t in ("mrpc", "qqp", "stsb"):
            assert ran[run][t] == {"epochs": 3, "lr": 5e-5, "batch_size": 32}, (run, t)


def test_table5_reads_a_stilts_variants_job_as_its_tasks_column():
    """A STILTs row's `mrpc_stilts` job fills Table 5's MRPC column (its `mrpc` job is not
    run); a row without the variant (effect-en-stilts) keeps its `mrpc` job."""
    results, groups = _results()
    not_run = {"skipped": "not run", "score": None, "not_run": True}
    for run, (by, tasks) in JOBS.items():
        arm = None if run == "none" else run
        results[run] |= {"mrpc": not_run, "mrpc_stilts": _job("f1", tasks["rte"], by, arm)}
    table = st.stilts_tables(results, groups)
    assert table["tasks"] == ["cola", "mrpc", "rte"]
    assert table["rows"]["stilts"]["mrpc"]["median_dev"] == 61
    assert table["rows"]["finetune"]["mrpc"] == table["rows"]["finetune"]["rte"]
    plain = {"a": {"mrpc": {"score": 1}, "mrpc_stilts": not_run}}
    assert st.by_column(plain) == {"a": {"mrpc": {"score": 1}}}


# --- the intermediate classifier scored as its own task (same_task: MNLI, §6.1) -----------

NLI = ("entailment", "neutral", "contradiction")


def _mnli(raw: Path) -> None:
    """MultiNLI 1.0's files, tiny: 30 train pairs (10 a label) and one without consensus,
    6 dev_matched and 6 dev_mismatched pairs (the mnli task's test and MNLI-mm)."""
    folder = raw / "multinli" / "multinli_1.0"
    folder.mkdir(parents=True)
    for name, n in (("train", 30), ("dev_matched", 6), ("dev_mismatched", 6)):
        rows = [{"sentence1": f"the {name} cat number {i} sits", "sentence2": f"a pet {i}",
                 "gold_label": NLI[i % 3]} for i in range(n)]  # fmt: skip
        rows.append({"sentence1": "no", "sentence2": "consensus", "gold_label": "-"})
        path = folder / f"multinli_1.0_{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _ft(**over) -> FinetuneConfig:
    values = dict(epochs=1, lr=1e-3, batch_size=4, max_seq_length=32, patience=1,
                  precision="fp32", train_layers=None, length_grouping=False,
                  mini_batch_size=None, finetune_head="last_token")  # fmt: skip
    return FinetuneConfig(**{**values, **over})


@pytest.mark.parametrize("model", ["tiny_bert", "tiny_llama"])
def test_an_arm_on_mnli_keeps_its_head_and_its_mnli_job_scores_it_without_fine_tuning(
    project, model, request, monkeypatch
):
    """same_task: mnli (paper-en): the arm's encoder and saved head are the intermediate
    classifier (they score SICK TRIAL as train_intermediate scored it), and evaluate_finetune's
    mnli job of the arm scores it on MNLI-m and -mm: one run, its training seed, no dev,
    no fine-tuning step; Table 5 reads both columns from it."""
    from paracl.stages import evaluate_finetune

    start = request.getfixturevalue(model)
    _mnli(Path("data/raw"))
    run_stage("nli_pairs", _params(nli_pairs={"source": "multinli"}))
    entry = {"input": str(PAIRS), "with_original": False}
    metrics = _arm(project, start, "stilts", entry, same_task="mnli")
    encoder = Path("models/encoders/stilts")
    assert (encoder / HEAD_WEIGHTS).is_file() and (encoder / HEAD_INFO).is_file()
    assert metrics["intermediate_head"]["scored_as"] == "mnli"
    assert metrics["intermediate_head"]["labels"] == list(NLI)
    sick = load_task("sicke", "data/raw", 0)
    sick.test, sick.eval_sets = sick.dev, {}
    again = score_with_head(encoder, sick, _ft(), CPU)["test"]
    assert again["accuracy"] == pytest.approx(metrics["dev"]["accuracy"])
    assert again["macro_f1"] == pytest.approx(metrics["dev"]["macro_f1"])

    def no_fine_tuning(*args, **kwargs):
        raise AssertionError("the arm's mnli job fine-tuned")

    monkeypatch.setattr(tuning, "finetune_task", no_fine_tuning)
    monkeypatch.setattr(tuning, "finetune_once", no_fine_tuning)
    params = _params(
        train_intermediate={**FAST, "arms": {"stilts": entry}, "tasks": ["mnli"],
                            "same_task": "mnli"},
        evaluate={"finetune_tasks": ["mnli"], "finetune_methods": ["none"]},
    )  # fmt: skip
    params["precision"] = "fp32"
    params["evaluate"]["finetune_runs"] = finetune_runs(params)
    run_main("evaluate_finetune", params, "stilts", "mnli", str(encoder),
             "metrics/train/stilts-encoders.json", "out.json")  # fmt: skip
    job = json.loads(Path("out.json").read_text())
    assert job["scored"] == evaluate_finetune.HEAD_NOTE and job["intermediate"]["arm"] == "stilts"
    assert [r["seed"] for r in job["runs"]] == [metrics["seed"]] and job["test"]["n"] == 1
    assert job["dev_score"] is None and job["runs"][0]["dev"] is None
    assert job["sizes"] == {"test": 6, "mismatched": 6}
    direct = score_with_head(encoder, load_task("mnli", "data/raw", 0), _ft(), CPU)
    assert job["score"] == pytest.approx(direct["test"]["accuracy"])
    mm = direct["eval_sets"]["mismatched"]["accuracy"]
    table = st.with_mismatched({"stilts": {"mnli": job}})["stilts"]
    assert table["mnli"]["test_at_median_dev"] == pytest.approx(job["score"])
    assert table["mnli_mm"]["test_at_median_dev"] == pytest.approx(mm)


def test_a_run_killed_while_the_head_is_written_leaves_no_encoder_without_head(
    project, tiny_bert, monkeypatch
):
    """The head goes into the encoder folder's temporary copy, so a fault while it is
    written publishes nothing: no encoder that evaluate_finetune would find headless."""
    from paracl.parts.finetune import saved_head

    def killed(model, folder, *args):
        (Path(folder) / saved_head.HEAD_WEIGHTS).write_bytes(b"cut")
        raise OSError(28, "No space left on device")

    run_stage("nli_pairs", _params())
    monkeypatch.setattr(saved_head, "save_head", killed)
    entry = {"input": str(PAIRS), "with_original": False}
    with pytest.raises(OSError, match="No space left"):
        _arm(project, tiny_bert, "stilts", entry, same_task="sicke")
    assert not Path("models/encoders/stilts").exists()
    assert list(Path("models/encoders").iterdir()) == []


def test_an_arm_without_same_task_saves_no_head(project, tiny_bert):
    """effect-en-stilts (SICK, no target task): the encoder alone, as before."""
    run_stage("nli_pairs", _params())
    metrics = _arm(project, tiny_bert, "stilts", {"input": str(PAIRS), "with_original": False})
    assert "intermediate_head" not in metrics
    assert not (Path("models/encoders/stilts") / HEAD_WEIGHTS).exists()


def test_an_arm_whose_pairs_are_not_the_same_tasks_data_is_refused(project):
    """same_task: mnli with SICK's pairs would score a SICK classifier as MNLI."""
    info = {"input": str(PAIRS), "training_data": {"source": "sick"}}
    with pytest.raises(ParamsError, match="'train_intermediate.same_task': mnli's data") as err:
        ti.check_same_data("stilts", info, "mnli")
    assert "\n" not in str(err.value)
    assert (
        ti.check_same_data("stilts", {**info, "training_data": {"source": "sick"}}, "sicke") is None
    )


def test_the_saved_heads_classes_are_matched_to_the_tasks_by_name(tiny_bert, project):
    """A head whose classes are in another order scores the same (each class mapped by
    name); a head of other classes is refused, naming the file."""
    import shutil

    from transformers import AutoTokenizer

    shutil.copytree(tiny_bert, "enc")
    data = load_task("sicke", "data/raw", 0)
    torch.manual_seed(0)
    model, reads = tuning.task_model("enc", AutoTokenizer.from_pretrained("enc"), data.task,
                                     "last_token")  # fmt: skip
    save_head(model, "enc", NLI, reads)
    first, tok, _, order = load_with_head("enc", data.task)
    assert order.tolist() == [0, 1, 2]
    state = load_file("enc/" + HEAD_WEIGHTS)
    reverse = {k: v.flip(0) for k, v in state.items()}  # classes contradiction, neutral, entailment
    model.load_state_dict(reverse, strict=False)
    save_head(model, "enc", NLI[::-1], reads)
    second, _, _, order = load_with_head("enc", data.task)
    assert order.tolist() == [2, 1, 0]
    a, b = (
        tuning.predict(m, tok, data.test, _ft(), CPU, regression=False) for m in (first, second)
    )
    assert (a == order[b]).all() and (b == 2 - a).all()
    Path("enc", HEAD_INFO).write_text(json.dumps({"labels": ["0", "1", "2"], "head": reads}))
    with pytest.raises(InputError, match=r"intermediate_head.json: the head's classes"):
        load_with_head("enc", data.task)


def test_the_last_epoch_rule_keeps_the_last_epoch_where_dev_peaked_earlier(
    tiny_bert, project, monkeypatch
):
    """patience None (train_intermediate.finetune_epoch: last): every epoch runs and the
    last weights are scored, as a best-epoch run whose dev rises to the end; the best-epoch
    rule on a dev that peaks at epoch 1 keeps epoch 1."""
    real, curve = tuning._score, []

    def dev_curve(data, df, pred, metrics):  # dev: the scores of `curve`, one a call
        return {metrics[0]: curve.pop(0)} if df is data.dev else real(data, df, pred, metrics)

    monkeypatch.setattr(tuning, "_score", dev_curve)
    data = load_task("sicke", "data/raw", 0)
    curve[:] = [0.9, 0.5, 0.1]
    falling = finetune_once(tiny_bert, data, _ft(epochs=3, patience=3), 1, CPU)
    assert (falling["best_epoch"], falling["epochs_run"], falling["dev"]) == (1, 3, 0.9)
    curve[:] = [0.7]
    last = finetune_once(tiny_bert, data, _ft(epochs=3, patience=None), 1, CPU)
    assert (last["best_epoch"], last["epochs_run"], last["dev"], curve) == (3, 3, 0.7, [])
    curve[:] = [0.1, 0.5, 0.9]
    rising = finetune_once(tiny_bert, data, _ft(epochs=3, patience=3), 1, CPU)
    assert rising["best_epoch"] == 3 and rising["test"] == last["test"]
    assert rising["train_loss"] == last["train_loss"]


def test_paper_en_scores_the_arms_mnli_and_keeps_the_last_epoch_of_every_stilts_row(tmp_path):
    """paper-en: each arm's mnli job scores its classifier (the start run's is fine-tuned:
    Table 5's fine-tuning row); every STILTs row keeps the last epoch, every other row the
    best on dev; effect-en-stilts keeps the best epoch and fine-tunes every task."""
    from paracl.stages.evaluate_finetune import job_section, scores_head

    params = _paper_en(tmp_path)
    stilts = params["train_intermediate"]
    assert (stilts["same_task"], stilts["finetune_epoch"]) == ("mnli", "last")
    for run in params["evaluate"]["finetune_runs"]:
        row = run in stilts["arms"] or run == stilts["start"]
        assert job_section(params, run)["patience"] == (None if row else 3), run
        assert scores_head(params, run, "mnli") == (run in stilts["arms"]), run
        assert not scores_head(params, run, "rte")
    import shutil

    from paracl import presets

    path = tmp_path / "effect.yaml"
    shutil.copy(REPO / "params.yaml", path)
    for name in ("effect-en", "effect-en-roundtrip", "effect-en-stilts"):
        presets.apply_preset(presets.load_preset(name, REPO / "presets"), path)
    effect = load_params(path)
    assert effect["train_intermediate"]["same_task"] is None
    for run in effect["evaluate"]["finetune_runs"]:
        assert job_section(effect, run) is effect["evaluate"] and not scores_head(
            effect, run, "rte"
        )


def _one_run(test: float, mm: float, by, arm) -> dict:
    """An arm's mnli job scored from its classifier: one run, no dev (evaluate_finetune)."""
    run = {"seed": 42, "dev": None, "test": {"accuracy": test},
           "eval_sets": {"mismatched": {"accuracy": mm}}}  # fmt: skip
    return {"kind": "finetune", "metric": "accuracy", "runs": [run], "score": test,
            "dev_score": None, "test_at_median_dev": test, "score_std": None,
            "eval_sets": {"mismatched": {"mean": mm}},
            "intermediate": {"arm": arm, "start_run": "none", "augmented_by": by}}  # fmt: skip


def test_an_arms_mnli_cell_is_its_one_run_and_its_claims_are_not_testable():
    """Table 5's MNLI-m/mm cells of the arms are their one unselected run; no tag cell is
    chosen on dev for them, so the paraphraser's claims there are listed as not testable,
    and a claim on one seed a side reads "not testable: one seed", never holds."""
    results, groups = _results()
    seeds = [(70, 70), (71, 71), (72, 72)]
    results["none"]["mnli"] = _job("accuracy", seeds)
    results["none"]["mnli"]["runs"] = [{**r, "eval_sets": {"mismatched": {"accuracy": 60}}}
                                       for r in results["none"]["mnli"]["runs"]]  # fmt: skip
    results["none"]["mnli"]["eval_sets"] = {"mismatched": {"mean": 60}}
    for i, (run, (by, _)) in enumerate(JOBS.items()):
        if run != "none":
            results[run]["mnli"] = _one_run(80 + i, 75 + i, by, run)
    one = [(40, 30)]
    results["none"]["cola"], results["stilts"]["cola"] = _job("mcc", one), _job("mcc", one)
    results["stilts"]["cola"]["intermediate"] = results["stilts"]["rte"]["intermediate"]
    table = st.stilts_tables(results, groups)
    assert table["tasks"] == ["cola", "mnli", "mnli_mm", "rte"]
    assert table["rows"]["stilts"]["mnli"]["median_dev"] == 81
    assert table["rows"]["stilts"]["mnli_mm"]["median_dev"] == 76
    assert (
        table["rows"]["stilts"]["mnli"]["n"] == 1 and table["rows"]["stilts"]["mnli"]["dev"] is None
    )
    assert table["best"]["mnli"] == "SIM70_BLEU20" and table["best_by_dev"]["mnli"] is None
    claims = {c["claim"]: c for c in st.stilts_claims(table)}
    for t in ("MNLI", "MNLI-mm"):
        assert (
            claims[f"Round trip §6: + paraphraser above + round trip on {t}"]["untested"]
            == st.NO_DEV
        )
    assert claims["Round trip §6: + paraphraser above STILTs on MNLI-mm"]["untested"] == st.NO_DEV
    cola = claims["Round trip §6: fine-tuning above STILTs on CoLA (no method helps CoLA)"]
    assert summary.verdict(cola) == "not testable: one seed" and not cola["holds"]
    out = summary.build_summary(results, ["cola", "rte", "mnli"], "finetune", groups)
    text = summary.to_markdown(json.loads(json.dumps(out)))
    assert "| MNLI-mm (accuracy) |" in text or "MNLI-mm (accuracy)" in text
    assert st.NO_DEV in text
