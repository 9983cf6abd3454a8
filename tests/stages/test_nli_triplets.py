"""Stage nli_triplets: SICK's triplets minus every one that shares a sentence with an STS
set of `exclude_sts` (stripped or folded, as `match` says), the same bytes on a rerun,
one-line errors naming the key or file, and dvc.yaml deps that cover what it imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stage_helpers import REPO, dep_paths, expand_stages, run_stage, write_sick
from test_stage_deps import assert_deps_cover_code, assert_params_cover_reads, import_closure

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_metadata, read_parquet
from paracl.parts.evaluation.readers import read_sick
from paracl.parts.nli import normalise
from paracl.schema import load_params
from paracl.stages import nli_triplets as stage

OUT = Path("data/nli/triplets.parquet")
METRICS = Path("metrics/nli_triplets.json")
ALL_SETS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness"]
# (id, A, B, label, split). Entailments 1, 3, 4, 5, 6 are the triplets; each of 1, 3, 4
# and 5 leaks into one set, 6 into none (see STS below)
SICK_ROWS = [
    (1, "A man plays", "Someone plays", "ENTAILMENT", "TRAIN"),
    (2, "A man plays", "Nobody plays", "CONTRADICTION", "TRAIN"),
    (3, "A dog runs", "An animal runs", "ENTAILMENT", "TRAIN"),
    (4, "A cat sleeps", "A cat rests", "ENTAILMENT", "TRAIN"),
    (5, "A bird sings", "A bird makes a sound", "ENTAILMENT", "TRAIN"),
    (6, "A boy jumps", "A child jumps", "ENTAILMENT", "TRAIN"),
    (7, "An animal runs", "A dog is running", "NEUTRAL", "TEST"),  # SICK-R: triplet 3
]
# year -> one pair; STS12 holds triplet 1's negative folded ("nobody plays ." as MSRvid
# writes SICK's sentences), STS14 triplet 5's anchor as it is
STS = {
    "STS12": ("nobody plays .", "a woman sings ."),
    "STS13": ("The sky is blue.", "The sky is grey."),
    "STS14": ("A bird sings", "A plane flies"),
    "STS15": ("Stocks fell.", "Shares dropped."),
    "STS16": ("Is it safe?", "Is it sound?"),
}
STSB = ("  A cat rests ", "A tiger rests")  # triplet 4's positive, with spaces around


def write_raw(raw: Path, sick_rows=SICK_ROWS) -> Path:
    """A data/raw holding SICK.txt (the mirror's layout: CRLF, no final newline), the five
    SentEval STS years and STS-B's test split, each one pair."""
    write_sick(raw / "sick" / "SICK.txt", sick_rows)
    for year, (a, b) in STS.items():
        folder = raw / "sts12-16" / f"{year}-en-test"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "STS.input.news.txt").write_text(f"{a}\t{b}\n")
        (folder / "STS.gs.news.txt").write_text("3.0\n")
    (raw / "stsbenchmark").mkdir(parents=True, exist_ok=True)
    row = ["main-captions", "MSRvid", "2012test", "0001", "2.5", *STSB]
    (raw / "stsbenchmark" / "sts-test.csv").write_text("\t".join(row) + "\n")
    return raw


def _params(**cfg) -> dict:
    params = load_params(REPO / "params.yaml")
    params["nli_triplets"] = {**params["nli_triplets"], **cfg}
    return params


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write_raw(tmp_path / "data" / "raw")
    return tmp_path


def _kept() -> list[int]:
    return read_parquet(OUT, stage.TRIPLETS)["pair_id"].tolist()


# --- the leakage filter ----------------------------------------------------------------


def test_the_default_drops_every_triplet_sharing_a_sentence_with_any_sts_set(project):
    assert load_params(REPO / "params.yaml")["nli_triplets"]["exclude_sts"] == ALL_SETS
    run_stage("nli_triplets", _params())
    assert _kept() == [6]
    metrics = json.loads(METRICS.read_text())
    assert metrics["n_leaking"] == {
        "STS12": 1, "STS13": 0, "STS14": 1, "STS15": 0, "STS16": 0,
        "STSBenchmark": 1, "SICKRelatedness": 1,
    }  # fmt: skip
    assert (metrics["n_read"], metrics["n_dropped"], metrics["n_kept"]) == (5, 4, 1)
    assert metrics["n_with_negative"] == 0 and metrics["match"] == "folded"
    key = json.loads(METRICS.with_name("nli_triplets.key.json").read_text())
    assert key == {"n_kept": 1, "n_with_negative": 0}
    assert read_metadata(OUT)["exclude_sts"] == ALL_SETS


def test_sick_r_left_out_of_the_filter_keeps_its_triplets(project):
    six = [s for s in ALL_SETS if s != "SICKRelatedness"]
    run_stage("nli_triplets", _params(exclude_sts=six))
    assert _kept() == [3, 6]  # 3 shares "An animal runs" with SICK's TEST split only
    got = read_parquet(OUT, stage.TRIPLETS)
    assert got.columns.tolist() == stage.TRIPLETS.names
    assert got["anchor"].tolist() == ["A dog runs", "A boy jumps"]
    run_stage("nli_triplets", _params(exclude_sts=[]))
    assert _kept() == [1, 3, 4, 5, 6]
    assert read_parquet(OUT, stage.TRIPLETS)["negative"].tolist()[0] == "Nobody plays"
    assert json.loads(METRICS.read_text())["n_with_negative"] == 1


def test_stripped_matching_misses_what_only_case_and_punctuation_hide(project):
    run_stage("nli_triplets", _params(match="stripped"))
    # "Nobody plays" is "nobody plays ." in STS12: a folded match only; STS-B's
    # "  A cat rests " matches stripped too
    assert _kept() == [1, 6]
    assert json.loads(METRICS.read_text())["n_leaking"]["STSBenchmark"] == 1
    assert normalise(" A  Man, plays. ", "folded") == "a man plays"
    assert normalise(" A  Man, plays. ", "stripped") == "A  Man, plays."


def test_the_same_inputs_give_the_same_bytes(project):
    paths = (OUT, METRICS, METRICS.with_name("nli_triplets.key.json"))
    run_stage("nli_triplets", _params())
    first = [p.read_bytes() for p in paths]
    for path in paths:
        path.unlink()
    run_stage("nli_triplets", _params())
    assert [p.read_bytes() for p in paths] == first


# --- SICK's pairs as triplets (sick_triplets) ------------------------------------------

# (id, A, B, label, split): "a man plays" has two entailments and one contradiction, and is
# also the positive of pair 6; "a dog runs" has no contradiction; pair 5 is TEST
PAIRING_ROWS = [
    (1, "a man plays", "someone plays", "ENTAILMENT", "TRAIN"),
    (2, "a man plays", "nobody plays", "CONTRADICTION", "TRAIN"),
    (3, "a man plays", "a person is playing", "ENTAILMENT", "TRAIN"),
    (4, "a dog runs", "an animal runs", "ENTAILMENT", "TRAIN"),
    (5, "a cat sleeps", "an animal sleeps", "ENTAILMENT", "TEST"),
    (6, "a man plays the guitar", "a man plays", "entailment", "TRAIN"),
    (7, "a dog runs", "a cat sleeps", "NEUTRAL", "TRAIN"),
]


def test_sick_triplets_pair_entailments_with_contradictions_of_the_same_premise(tmp_path):
    sick = write_sick(tmp_path / "SICK.txt", PAIRING_ROWS)
    frame = stage.write_sick_triplets(sick, tmp_path / "t.parquet")
    got = read_parquet(tmp_path / "t.parquet", stage.TRIPLETS)
    assert got["pair_id"].tolist() == [1, 3, 4, 6] == frame["pair_id"].tolist()  # TRAIN only
    assert got["anchor"].tolist()[:3] == ["a man plays", "a man plays", "a dog runs"]
    # both entailments of "a man plays" get its one contradiction; "a dog runs" has none
    assert got["negative"].tolist()[:2] == ["nobody plays", "nobody plays"]
    assert got["negative_pair_id"].tolist()[:2] == [2, 2]
    assert got["negative"].isna().tolist() == [False, False, True, True]
    assert got["positive"].tolist()[3] == "a man plays"  # the lower-case label counts
    test = stage.sick_triplets(read_sick(sick), ["TEST"])
    assert test[["anchor", "split"]].values.tolist() == [["a cat sleeps", "TEST"]]
    with pytest.raises(ValueError, match="unknown SICK split 'DEV'"):
        stage.sick_triplets(read_sick(sick), ["DEV"])


def test_sick_negatives_cycle_over_a_premises_contradictions(tmp_path):
    rows = [
        (1, "p", "e1", "ENTAILMENT", "TRAIN"),
        (2, "p", "c1", "CONTRADICTION", "TRAIN"),
        (3, "p", "e2", "ENTAILMENT", "TRAIN"),
        (4, "p", "c2", "CONTRADICTION", "TRAIN"),
        (5, "p", "e3", "ENTAILMENT", "TRAIN"),
    ]
    got = stage.sick_triplets(read_sick(write_sick(tmp_path / "s.txt", rows)))
    assert got["negative"].tolist() == ["c1", "c2", "c1"]


# --- bad params and files --------------------------------------------------------------


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"exclude_sts": ["STS12", "STS12"]}, r"'nli_triplets.exclude_sts' lists 'STS12' twice"),
        ({"exclude_sts": ["sickr"]}, r"'nli_triplets.exclude_sts': no 'sickr' \(STS12, "),
        ({"splits": []}, r"'nli_triplets.splits' lists no split"),
        ({"splits": ["DEV"]}, r"'nli_triplets.splits': no 'DEV' \(TRAIN, TRIAL, TEST\)"),
        ({"match": "lower"}, r"'nli_triplets.match' must be one of"),
        (
            {"source": "snli"},
            r"'nli_triplets.source' must be one of \['sick', 'simcse-nli'\], got 'snli'",
        ),
    ],
)
def test_a_bad_param_is_a_one_line_error_naming_the_key(project, cfg, message):
    with pytest.raises(ParamsError, match=message) as err:
        run_stage("nli_triplets", _params(**cfg))
    assert "\n" not in str(err.value) and not OUT.exists()


def test_the_schema_refuses_an_unknown_set(tmp_path):
    text = (REPO / "params.yaml").read_text()
    bad = tmp_path / "params.yaml"
    bad.write_text(text.replace("STSBenchmark, SICKRelatedness]", "stsb, SICKRelatedness]"))
    with pytest.raises(ParamsError, match=r"nli_triplets.exclude_sts"):
        load_params(bad)


def test_a_missing_file_is_a_one_line_error_naming_it(project):
    (project / "data/raw/sts12-16/STS14-en-test/STS.input.news.txt").unlink()
    with pytest.raises(InputError, match="STS14-en-test: no STS.input"):
        run_stage("nli_triplets", _params())
    run_stage("nli_triplets", _params(exclude_sts=[]))  # no set read: SICK alone will do
    (project / "data/raw/sick/SICK.txt").unlink()
    with pytest.raises(InputError, match=r"SICK.txt: not found"):
        run_stage("nli_triplets", _params())


def test_the_script_fails_with_one_error_line(project):
    (project / "params.yaml").write_text((REPO / "params.yaml").read_text())
    (project / "data/raw/sick/SICK.txt").write_text("pair_ID\tsentence_A\n1\ta\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    script = REPO / "stages/nli_triplets.py"
    cmd = [sys.executable, str(script), "data/raw", str(OUT), str(METRICS)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: data/raw/sick/SICK.txt:1: header lacks columns ['sentence_B'")
    assert not OUT.exists() and not METRICS.exists()


# --- the mirror's counts (docs/stages/nli-triplets.md) ---------------------------------


def test_the_mirrors_counts(mirror, tmp_path):
    cfg = load_params(REPO / "params.yaml")["nli_triplets"]
    six = [s for s in ALL_SETS if s != "SICKRelatedness"]
    counts = {
        (match, len(exclude)): stage.build(
            {**cfg, "match": match, "exclude_sts": exclude}, mirror, tmp_path / "t.parquet"
        )["n_kept"]
        for match in ("folded", "stripped")
        for exclude in (ALL_SETS, six)
    }
    assert counts == {("folded", 7): 16, ("folded", 6): 1009,
                      ("stripped", 7): 17, ("stripped", 6): 1274}  # fmt: skip


def test_the_mirrors_sick_train_split(mirror):
    got = stage.sick_triplets(read_sick(mirror / "sick" / "SICK.txt"))
    assert len(got) == 1274  # SICK's TRAIN entailments
    assert got.loc[got["negative"].notna(), "anchor"].nunique() == 104  # "about 100"


# --- dvc.yaml ----------------------------------------------------------------------------


def test_dvc_stage_deps_and_params_cover_what_it_runs_and_reads():
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    got = expand_stages(pipeline, params)["nli_triplets"]
    assert_deps_cover_code("nli_triplets", got)
    assert_params_cover_reads("nli_triplets", got)
    closure = import_closure(REPO / "stages/nli_triplets.py")
    assert REPO / "src/paracl/parts/evaluation/unsup_sts.py" in closure  # the sets it filters by
    assert {"data/raw", "stages/nli_triplets.py"} <= set(dep_paths(got["deps"]))
    assert got["params"] == ["seed", "nli_triplets"]  # the seed draws max_triplets' sample
    outs = dep_paths(got["outs"])
    assert outs == [str(OUT), str(METRICS)]
    assert got["cmd"].split()[2:] == ["data/raw", *outs]
    assert dep_paths(got["metrics"]) == ["metrics/nli_triplets.key.json"]


def test_simcses_nli_file_gives_triplets_and_max_triplets_a_seeded_sample(tmp_path):
    """paper-en's source: SimCSE's MNLI + SNLI triplets (sent0, sent1, hard_neg), all of
    them training rows; max_triplets keeps a seeded sample in the file's order."""
    (tmp_path / "simcse-nli").mkdir()
    rows = [f"p{i},h{i},c{i}" for i in range(10)]
    (tmp_path / "simcse-nli" / "nli_for_simcse.csv").write_text(
        "sent0,sent1,hard_neg\n" + "\n".join(rows) + "\n")  # fmt: skip
    cfg = {"source": "simcse-nli", "splits": ["TRAIN"], "exclude_sts": [], "match": "folded",
           "max_triplets": None}  # fmt: skip
    record = stage.build(cfg, tmp_path, tmp_path / "all.parquet")
    frame = read_parquet(tmp_path / "all.parquet")
    assert frame[["anchor", "positive", "negative"]].values.tolist()[0] == ["p0", "h0", "c0"]
    assert record["n_kept"] == record["n_with_negative"] == 10 and set(frame["split"]) == {"train"}
    record = stage.build({**cfg, "max_triplets": 4}, tmp_path, tmp_path / "four.parquet", seed=3)
    four = read_parquet(tmp_path / "four.parquet")
    assert record["n_kept"] == 4 and record["max_triplets"] == 4
    assert four["pair_id"].is_monotonic_increasing and set(four["anchor"]) < set(frame["anchor"])
    stage.build({**cfg, "max_triplets": 4}, tmp_path, tmp_path / "again.parquet", seed=3)
    assert read_parquet(tmp_path / "again.parquet").equals(four)  # same seed, same rows
