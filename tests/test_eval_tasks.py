"""Task registry: official splits pass through; missing splits are re-split (seeded,
documented, flagged); a task without data says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from paracl.evaluation.tasks import TASKS, TaskUnavailable, load_task


def _pawsx(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"s{i} a\ts{i} b\t{i % 2}\n" for i in range(n)))


def test_every_task_is_described():
    for name, t in TASKS.items():
        assert t.name == name and t.lang in ("en", "ja") and t.splits and t.source
        assert t.kind in ("regression", "classification")
        assert (t.labels is None) == (t.kind == "regression")


def test_single_split_resplit_is_seeded_and_flagged(tmp_path):
    _pawsx(tmp_path / "pawsx/dev-en.tsv", 100)
    a = load_task("paws", tmp_path, seed=1)
    b = load_task("paws", tmp_path, seed=1)
    c = load_task("paws", tmp_path, seed=2)
    assert a.sizes() == {"train": 70, "dev": 10, "test": 20}
    assert not a.official_split and "seeded" in a.provenance["test"]
    assert a.test.equals(b.test) and not a.test.equals(c.test)
    # the three parts are disjoint and cover the file
    ids = [set(d["sentence1"]) for d in (a.train, a.dev, a.test)]
    assert sum(map(len, ids)) == 100 and len(set.union(*ids)) == 100
    # stratified: both classes in the test part in equal shares
    assert a.test["label"].value_counts().to_dict() == {"0": 10, "1": 10}


def test_missing_train_uses_dev_and_keeps_official_test(tmp_path):
    d = tmp_path / "jglue/jnli-v1.3"
    d.mkdir(parents=True)
    for split, n in (("valid", 50), ("test", 20)):
        rows = [f'{{"sentence1": "{split}{i}", "sentence2": "x", "label": "neutral"}}'
                for i in range(n)]  # fmt: skip
        (d / f"{split}-v1.3.json").write_text("\n".join(rows) + "\n")
    data = load_task("jnli", tmp_path, seed=0)
    assert data.sizes() == {"train": 45, "dev": 5, "test": 20}
    assert not data.official_split
    assert data.provenance["test"].startswith("official test")
    assert "train is missing" in data.provenance["train"]


def test_unavailable_task_names_files_and_source(tmp_path):
    with pytest.raises(TaskUnavailable, match=r"snli.*snli_1.0_train.jsonl.*stanford"):
        load_task("snli", tmp_path, seed=0)


def test_mirror_official_and_glue_dev_as_test(mirror):
    stsb = load_task("stsb", mirror, seed=0)
    assert stsb.official_split and stsb.sizes() == {"train": 5749, "dev": 1500, "test": 1379}
    rte = load_task("rte", mirror, seed=0)
    assert not rte.official_split and len(rte.test) == 277
    assert "not public" in rte.provenance["test"]
    sicke = load_task("sicke", mirror, seed=0)
    assert sicke.official_split and set(sicke.test["label"]) == {
        "entailment", "neutral", "contradiction"}  # fmt: skip


def test_job_results_stay_valid_json():
    from paracl.evaluation.jobs import _finite

    out = _finite({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": 2.5}})
    assert out == {"a": None, "b": [1.0, None], "c": {"d": 2.5}}
