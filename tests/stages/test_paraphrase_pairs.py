"""Stage paraphrase_pairs: a pair/triplet Parquet's chosen columns paraphrased by the greedy
round trip or the paraphraser at a tag cell, each distinct sentence once, the same bytes on
a rerun, nothing written by a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
import stage_helpers
import yaml
from stage_helpers import REPO, dep_paths, expand_stages, run_stage
from test_nli_triplets import PAIRING_ROWS
from test_stage_deps import assert_deps_cover_code, assert_params_cover_reads

from paracl.core import io
from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_metadata, read_parquet, write_parquet
from paracl.parts import paraphraser, translate
from paracl.schema import load_params
from paracl.stages import nli_triplets as nli
from paracl.stages import paraphrase_pairs as stage

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")

OUT = Path("data/paraphrased/nli.parquet")
METRICS = Path("metrics/paraphrase_pairs/nli.json")
# SICK rows whose triplets the jobs paraphrase: the triplet tests' rows (see there)
SICK_ROWS = PAIRING_ROWS


def write_sick(path: Path, rows=SICK_ROWS) -> Path:
    return stage_helpers.write_sick(path, rows)


# --- the job's params ------------------------------------------------------------------


def test_by_names_the_round_trip_or_a_tag_cell():
    assert stage.tags_of("roundtrip_greedy", "w") is None
    assert stage.tags_of("SIM95_BLEU0_5", "w") == "<SIM95><BLEU0_5>"
    assert stage.tags_of("SIM70_BLEU40", "w") == "<SIM70><BLEU40>"
    with pytest.raises(ParamsError, match=r"'paraphrase_pairs.jobs.x.by'.*SIM96_BLEU20"):
        stage.tags_of("SIM96_BLEU20", "params.yaml: 'paraphrase_pairs.jobs.x.by'")
    with pytest.raises(ParamsError, match="roundtrip_greedy or a tag cell"):
        stage.tags_of("<SIM95><BLEU20>", "w")
    with pytest.raises(ParamsError, match=r"jobs.j.columns' must list distinct"):
        stage.Job.of("j", {"input": "x", "columns": ["a", "a"], "by": "roundtrip_greedy"})


def test_bleu_to_source_says_whether_the_tag_controlled_the_surface():
    """Each distinct sentence's paraphrase scored against it as the tag stage scores a
    pair (sentence BLEU, symbols stripped, lower case); an empty output is left out."""
    from paracl.parts.tags import tagging

    mapping = {
        "A man is playing a large guitar on the stage tonight": "a man is playing a large "
        "guitar on the stage tonight!",  # a copy: BLEU 100, above every tag
        "The children run across the wide green field": "Kids sprint over a big lawn",
        "Nobody is here": "",
    }
    got = stage.bleu_to_source(mapping, "<SIM95><BLEU0_5>", "en")
    scores = [tagging.sentence_bleu(o, s, "en") for s, o in mapping.items() if o]
    assert scores[0] == pytest.approx(100.0) and scores[1] < 10.0
    assert got == {"n": 2, "mean": pytest.approx(sum(scores) / 2), "requested_tag_share": 0.5}
    assert stage.bleu_to_source(mapping, None, "en") == {"n": 2, "mean": got["mean"]}
    assert stage.bleu_to_source({}, "<SIM95><BLEU20>", "en")["mean"] is None


def test_repeated_sentences_are_paraphrased_once_and_mapped_back():
    frame = pd.DataFrame(
        {"anchor": ["s1", "s2", "s1"], "positive": ["s2", "s3", None], "label": [0, 1, 2]}
    )
    texts = stage.unique_sentences(frame, ["anchor", "positive"])
    assert texts == ["s1", "s2", "s3"]
    out = stage.substitute(frame, ["anchor", "positive"], {t: t.upper() for t in texts}, "by")
    assert out["anchor"].tolist() == ["S1", "S2", "S1"]
    assert out["positive"].tolist()[:2] == ["S2", "S3"] and out["positive"].isna().tolist()[2]
    assert out["label"].tolist() == [0, 1, 2] and out["source_row"].tolist() == [0, 1, 2]


# --- the stage, on tiny models ---------------------------------------------------------


def _params(by: str, columns=("anchor", "positive", "negative"), **gen) -> dict:
    params = load_params(REPO / "params.yaml")
    params.update(device="cpu", lang="en", seed=3, executor="local")
    params["paraphrase_pairs"]["jobs"] = {
        "nli": {"input": "data/nli/sick.parquet", "columns": list(columns), "by": by}
    }
    params["roundtrip"].update(
        forward_model="tiny-random:marian",
        backward_model="tiny-random:marian",
        batch_size=2,
        max_new_tokens=6,
    )
    params["generate_paraphrases"].update(num_beams=2, batch_size=2, **gen)
    return params


def _triplets(root: Path) -> pd.DataFrame:
    sick = write_sick(root / "SICK.txt")
    return nli.write_sick_triplets(sick, "data/nli/sick.parquet")


def _spy(monkeypatch, module, name: str, index: int) -> list[list[str]]:
    """Record the texts argument (positional `index`) of every call of module.name."""
    calls: list[list[str]] = []
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(list(args[index]))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def _snapshot() -> dict[str, bytes]:
    key = METRICS.with_name("nli.key.json")
    return {str(p): p.read_bytes() for p in (OUT, METRICS, key)}


def test_round_trip_paraphrases_each_sentence_once_and_reruns_to_the_same_bytes(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    triplets = _triplets(tmp_path)
    calls = _spy(monkeypatch, translate, "round_trip", 3)
    run_stage("paraphrase_pairs@nli", _params("roundtrip_greedy"))
    # "a man plays": anchor of rows 0, 1 and positive of row 3; "nobody plays" twice
    assert calls == [["a man plays", "someone plays", "nobody plays", "a person is playing",
                      "a dog runs", "an animal runs", "a man plays the guitar"]]  # fmt: skip
    out = read_parquet(OUT)
    originals = [f"original_{c}" for c in ("anchor", "positive", "negative")]
    assert out.columns.tolist() == [*nli.TRIPLETS.names, "source_row", "paraphrased_by",
                                    *originals]  # fmt: skip
    for column in ("anchor", "positive", "negative"):  # each input text kept beside
        assert out[f"original_{column}"].tolist() == triplets[column].tolist()
    assert out["source_row"].tolist() == [0, 1, 2, 3]
    assert set(out["paraphrased_by"]) == {"roundtrip_greedy"}
    assert out["pair_id"].tolist() == triplets["pair_id"].tolist()  # other columns kept
    assert out["negative"].isna().tolist() == [False, False, True, True]  # nulls stay null
    assert out.loc[0, "anchor"] == out.loc[1, "anchor"] == out.loc[3, "positive"]
    metrics = json.loads(METRICS.read_text())
    assert (metrics["n_rows"], metrics["n_cells"], metrics["n_sentences"]) == (4, 10, 7)
    assert metrics["stand_in"] is True and metrics["paper_model"] is False
    assert metrics["decoding"] == "greedy" and metrics["forward_model"]["stand_in"] is True
    assert read_metadata(OUT)["by"] == "roundtrip_greedy"
    first = _snapshot()
    for path in first:
        Path(path).unlink()
    run_stage("paraphrase_pairs@nli", _params("roundtrip_greedy"))
    assert _snapshot() == first


def _paraphraser(base: Path, path: Path, trained: bool = True) -> None:
    """A paraphraser directory as train_paraphraser saves it: `base` (either kind) with
    the tag tokens, and its INFO_FILE."""
    model, tok = paraphraser.load(base)
    paraphraser.add_tag_tokens(tok, model)
    tok.save_pretrained(path)
    model.save_pretrained(path)
    info = {"trained": trained, "stand_in": True, "n_train": 0}
    (path / paraphraser.INFO_FILE).write_text(json.dumps(info))


@pytest.mark.parametrize("base", ["tiny_bart", "tiny_gpt2"])  # the paper's kind, decoder-only
def test_tag_cell_paraphrases_each_sentence_once_and_reruns_to_the_same_bytes(
    tmp_path, monkeypatch, request, base
):
    monkeypatch.chdir(tmp_path)
    _triplets(tmp_path)
    _paraphraser(request.getfixturevalue(base), Path("models/paraphraser"))
    calls = _spy(monkeypatch, paraphraser, "generate", 2)
    params = _params("SIM95_BLEU20", columns=("anchor", "positive"))
    run_stage("paraphrase_pairs@nli", params)
    assert len(calls) == 1 and len(calls[0]) == len(set(calls[0])) == 6
    assert "nobody plays" not in calls[0]  # the negative column is not chosen
    out = read_parquet(OUT)
    assert set(out["paraphrased_by"]) == {"<SIM95><BLEU20>"}
    assert out["negative"].tolist()[:2] == ["nobody plays", "nobody plays"]  # unchanged
    assert out.loc[0, "anchor"] == out.loc[3, "positive"]  # one paraphrase, mapped back
    metrics = json.loads(METRICS.read_text())
    assert metrics["tags"] == "<SIM95><BLEU20>"
    assert (
        metrics["bleu_to_source"]["n"] == 6 and "requested_tag_share" in metrics["bleu_to_source"]
    )
    first = _snapshot()
    for path in first:
        Path(path).unlink()
    run_stage("paraphrase_pairs@nli", params)
    assert _snapshot() == first


def test_a_failed_run_leaves_no_output(tmp_path, monkeypatch, tiny_bart):
    monkeypatch.chdir(tmp_path)
    _triplets(tmp_path)
    _paraphraser(tiny_bart, Path("models/paraphraser"))

    def killed(*args, **kwargs):
        raise RuntimeError("killed")

    with monkeypatch.context() as patch:  # killed while paraphrasing
        patch.setattr(paraphraser, "generate", killed)
        with pytest.raises(RuntimeError, match="killed"):
            run_stage("paraphrase_pairs@nli", _params("SIM95_BLEU0_5"))
    assert not OUT.exists() and not METRICS.exists()

    def half_written(table, where, **kwargs):  # killed while writing the Parquet
        Path(where).write_bytes(b"PAR1 half a file")
        raise RuntimeError("killed")

    monkeypatch.setattr(io.pq, "write_table", half_written)
    with pytest.raises(RuntimeError, match="killed"):
        run_stage("paraphrase_pairs@nli", _params("SIM95_BLEU0_5"))
    assert not OUT.exists() and not METRICS.exists()
    assert list(OUT.parent.iterdir()) == []  # no temporary file left either


def test_bad_inputs_are_one_line_errors_naming_the_culprit(tmp_path, monkeypatch, tiny_bart):
    monkeypatch.chdir(tmp_path)
    _triplets(tmp_path)
    _paraphraser(tiny_bart, Path("models/paraphraser"), trained=False)
    with pytest.raises(InputError, match=r"paracl_paraphraser.json: the paraphraser was not"):
        run_stage("paraphrase_pairs@nli", _params("SIM95_BLEU0_5"))
    with pytest.raises(ParamsError, match=r"jobs.nli.columns'.*'premise' is not a column"):
        run_stage("paraphrase_pairs@nli", _params("roundtrip_greedy", columns=["premise"]))
    with pytest.raises(InputError, match=r"column 'pair_id' holds int64, not text"):
        run_stage("paraphrase_pairs@nli", _params("roundtrip_greedy", columns=["pair_id"]))
    _paraphraser(tiny_bart, Path("models/paraphraser"))  # trained, but a bad length window
    with pytest.raises(ParamsError, match="generate_paraphrases.min_ratio' exceeds"):
        run_stage("paraphrase_pairs@nli", _params("SIM95_BLEU0_5", min_ratio=2.0, max_ratio=1.0))
    frame = pd.DataFrame({"a": ["x"], "source_row": [0]})
    write_parquet(frame, "data/nli/sick.parquet", pa.schema([("a", pa.string()),
                                                              ("source_row", pa.int64())]))  # fmt: skip
    with pytest.raises(InputError, match="already has a 'source_row' column"):
        run_stage("paraphrase_pairs@nli", _params("roundtrip_greedy", columns=["a"]))
    assert not OUT.exists()


# --- dvc.yaml ----------------------------------------------------------------------------


def test_dvc_stage_deps_and_params_cover_what_it_runs_and_reads():
    """tests/pipeline/test_stage_deps.py's checks, on a job (the default lists none)."""
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    assert params["paraphrase_pairs"]["jobs"] == {}  # the default run is unchanged
    job = {"input": "data/nli/sick.parquet", "columns": ["anchor"], "by": "SIM95_BLEU20"}
    params["paraphrase_pairs"]["jobs"] = {"sick": job}
    stages = expand_stages(pipeline, params)
    got = stages["paraphrase_pairs@sick"]
    assert_deps_cover_code("paraphrase_pairs@sick", got)
    assert_params_cover_reads("paraphrase_pairs@sick", got)
    own = {"data/nli/sick.parquet", "models/paraphraser", "stages/paraphrase_pairs.py"}
    assert own <= set(dep_paths(got["deps"]))
    assert "paraphrase_pairs.jobs.sick" in got["params"]
    outs = dep_paths(got["outs"])
    assert outs == ["data/paraphrased/sick.parquet", "metrics/paraphrase_pairs/sick.json"]
    assert got["cmd"].split()[2:] == ["sick", "models/paraphraser", *outs]


def test_the_inputs_sts_check_is_passed_on_to_the_paraphrased_file(tmp_path, monkeypatch):
    """nli_triplets records the STS sets its triplets were checked against; the paraphrased
    file says the same, so a run trained on it is scored on those sets alone."""
    from paracl.stages.train_contrastive.training.data import training_record

    monkeypatch.chdir(tmp_path)
    triplets = _triplets(tmp_path)
    record = {"source": "sick", "exclude_sts": ["STS12", "STSBenchmark"], "n_kept": 4}
    write_parquet(triplets, "data/nli/sick.parquet", nli.TRIPLETS, metadata=record)
    run_stage("paraphrase_pairs@nli", _params("roundtrip_greedy"))
    assert read_metadata(OUT)["exclude_sts"] == ["STS12", "STSBenchmark"]
    assert "n_kept" not in read_metadata(OUT)  # the check alone, not the input's counts
    assert training_record(OUT) == {"source": "sick", "exclude_sts": ["STS12", "STSBenchmark"]}
