"""Task registry: the papers' splits pass through (dev carved from train where the paper
did); missing splits are re-split (seeded, documented, flagged) or stop the run; a task
without data says so."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from paracl.parts.evaluation.tasks import TASKS, SplitMissing, TaskUnavailable, load_task
from paracl.stages.fetch import load_registry

REPO = Path(__file__).resolve().parents[2]


def _pawsx(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"s{i} a\ts{i} b\t{i % 2}\n" for i in range(n)))


def test_every_task_is_described():
    for name, t in TASKS.items():
        assert t.name == name and t.lang in ("en", "ja") and t.splits and t.source
        assert t.kind in ("regression", "classification")
        assert (t.labels is None) == (t.kind == "regression")


def test_single_split_resplit_is_seeded_and_flagged(tmp_path):
    _pawsx(tmp_path / "pawsx/dev-ja.tsv", 100)
    a = load_task("pawsx_ja", tmp_path, seed=1)
    b = load_task("pawsx_ja", tmp_path, seed=1)
    c = load_task("pawsx_ja", tmp_path, seed=2)
    assert a.sizes() == {"train": 70, "dev": 10, "test": 20}
    assert not a.official_split and "seeded" in a.provenance["test"]
    assert a.test.equals(b.test) and not a.test.equals(c.test)
    # the three parts are disjoint and cover the file
    ids = [set(d["sentence1"]) for d in (a.train, a.dev, a.test)]
    assert sum(map(len, ids)) == 100 and len(set.union(*ids)) == 100
    # stratified: both classes in the test part in equal shares
    assert a.test["label"].value_counts().to_dict() == {"0": 10, "1": 10}


def _paws(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{i}\ts{i} a\ts{i} b\t{i % 2}\r\n" for i in range(n))
    path.write_text("id\tsentence1\tsentence2\tlabel\r\n" + rows)


def test_missing_train_uses_dev_and_keeps_official_test(tmp_path):
    """PAWS offline: PAWS-Wiki dev and test, no train: train/dev re-split from dev."""
    _paws(tmp_path / "paws-wiki/dev.tsv", 50)
    _paws(tmp_path / "paws-wiki/test.tsv", 20)
    data = load_task("paws", tmp_path, seed=0)
    assert data.sizes() == {"train": 45, "dev": 5, "test": 20}
    assert not data.official_split and data.official_test and not data.official_dev
    assert data.provenance["test"].startswith("official test")
    assert "train is missing" in data.provenance["train"]
    with pytest.raises(SplitMissing, match=r"task paws: train split .*paws/final/train.tsv "
                       r"not found: add source 'paws' to fetch.sources"):  # fmt: skip
        load_task("paws", tmp_path, seed=0, missing="fail")


def test_dev_carved_from_train_is_the_papers_split(tmp_path):
    """JNLI as Table 2: test = official valid, dev = a seeded 10% of train (stratified)."""
    d = tmp_path / "jglue/jnli-v1.3"
    d.mkdir(parents=True)
    for split, n in (("train", 60), ("valid", 20)):
        rows = [f'{{"sentence1": "{split}{i}", "sentence2": "x", "label": "{("neutral", "entailment")[i % 2]}"}}'
                for i in range(n)]  # fmt: skip
        (d / f"{split}-v1.3.json").write_text("\n".join(rows) + "\n")
    data = load_task("jnli", tmp_path, seed=0, missing="fail")
    assert data.sizes() == {"train": 54, "dev": 6, "test": 20}
    assert data.official_split and data.official_test and not data.official_dev
    assert data.dev["label"].value_counts().to_dict() == {"neutral": 3, "entailment": 3}
    assert "valid-v1.3.json" in data.provenance["test"] and "seeded 10%" in data.provenance["dev"]
    (d / "train-v1.3.json").unlink()
    with pytest.raises(SplitMissing, match="add source 'jnli-train' to fetch.sources"):
        load_task("jnli", tmp_path, seed=0, missing="fail")
    resplit = load_task("jnli", tmp_path, seed=0)  # the CPU default: re-split valid
    assert not resplit.official_split and "only split offline" in resplit.provenance["test"]


def test_esci_dev_is_carved_by_query(tmp_path):
    """ESCI (large version): no query has rows on both sides of the train/dev carve."""
    import pandas as pd

    d = tmp_path / "esci"
    d.mkdir()
    q = [f"q{i // 4}" for i in range(80)]
    pd.DataFrame({
        "query": q, "product_id": [f"p{i}" for i in range(80)], "product_locale": "us",
        "esci_label": ["E", "S", "C", "I"] * 20, "small_version": 0,
        "split": ["train"] * 60 + ["test"] * 20,
    }).to_parquet(d / "shopping_queries_dataset_examples.parquet")  # fmt: skip
    pd.DataFrame(
        {"product_id": [f"p{i}" for i in range(80)], "product_locale": "us", "product_title": "t"}
    ).to_parquet(d / "shopping_queries_dataset_products.parquet")
    data = load_task("esci_en", tmp_path, seed=0, missing="fail")
    assert data.sizes() == {"train": 52, "dev": 8, "test": 20}  # 2 of the 15 train queries
    assert not set(data.train["sentence1"]) & set(data.dev["sentence1"])


def test_unavailable_task_names_files_and_source(tmp_path):
    with pytest.raises(TaskUnavailable, match=r"snli.*snli_1.0_train.jsonl.*stanford"):
        load_task("snli", tmp_path, seed=0)


def _registered(split) -> list[str]:
    """The sources that write `split`'s file: the registry lists it, or an archive
    unpacks into a folder above it."""
    registry = load_registry()
    found = [f.source for f in registry if f.file == split.path]
    return found or [f.source for f in registry if f.file.endswith((".zip", ".tar.gz"))
                     and split.path.startswith(f.file.rsplit("/", 1)[0] + "/")]  # fmt: skip


def test_every_split_file_comes_from_the_source_it_names():
    """The source a SplitMissing error names writes that file; every task a preset or
    params.yaml evaluates has each split registered (the others: the docs' task table)."""
    used = set()
    for f in [REPO / "params.yaml", *sorted((REPO / "presets").glob("*.yaml"))]:
        used |= set(((yaml.safe_load(f.read_text()) or {}).get("evaluate") or {}).get("tasks", []))
    for task in TASKS.values():
        for split in task.splits.values():
            copies = [split, split.alt] if split.alt else [split]
            sources = [_registered(c) for c in copies]
            for copy, found in zip(copies, sources, strict=True):
                assert not found or found == [copy.source], (task.name, copy.path, found)
            if task.name in used:
                assert any(sources), f"{task.name}: {split.path} is in no fetch source"


def test_mirror_matches_the_papers_split_sizes(mirror):
    """Every task whose files are all in the mirror has the paper's Table 1/2 sizes
    (PAWS-X ja: 20 untranslated NS pairs dropped from the 2,000)."""
    complete = [t for t in TASKS.values() if t.paper_sizes
                and all((mirror / s.path).exists() for s in t.splits.values())]  # fmt: skip
    assert {t.name for t in complete} >= {"stsb", "sickr", "sicke", "jsts", "jsickr", "jsicke"}
    for t in complete:
        data = load_task(t, mirror, seed=0, missing="fail")
        assert tuple(data.sizes().values()) == t.paper_sizes, t.name
        assert data.official_split


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
    from paracl.parts.evaluation.job_result import finite as _finite

    out = _finite({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": 2.5}})
    assert out == {"a": None, "b": [1.0, None], "c": {"d": 2.5}}
