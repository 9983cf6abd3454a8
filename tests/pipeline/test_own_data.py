"""A user's own data, end to end (docs/own-data.md): a plain text file as the corpus and a
TSV of pairs as a method's input, set by params keys alone, each a DVC dep of the stage
that reads it; the trained encoder loads with sentence-transformers and embeds as paracl
scored it."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from stage_helpers import REPO, dep_paths, expand_stages, run_stage

from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
from paracl.schema import load_params, with_runs
from paracl.stages.train_contrastive.training.data import load_examples

pytestmark = pytest.mark.usefixtures("one_thread")

SUBJECTS = ["The old bridge", "A young doctor", "The city council", "Her brother", "The museum"]
VERBS = ["was opened in", "moved to the coast in", "was rebuilt after", "won an award in"]
YEARS = ["the spring of 1932", "the late nineteenth century", "the second world war", "2004"]


def _sentences() -> list[str]:
    return [f"{s} {v} {y}." for s in SUBJECTS for v in VERBS for y in YEARS[:2]]


def _own_project(root, base) -> dict:
    """A project whose corpus is data/own/corpus/mine.txt and whose method `mine` trains on
    own/pairs.tsv (anchor, positive, negative with one empty negative)."""
    (root / "own").mkdir()
    (root / "data/own/corpus").mkdir(parents=True)
    corpus = root / "data/own/corpus/mine.txt"
    corpus.write_text("\n".join(_sentences()) + "\n", encoding="utf-8")
    rows = [(s, s.replace("The ", "That "), "" if i == 0 else "Nothing happened.")
            for i, s in enumerate(_sentences()[:12])]  # fmt: skip
    pairs = pd.DataFrame(rows, columns=["anchor", "positive", "negative"])
    pairs.to_csv(root / "own/pairs.tsv", sep="\t", index=False)
    (root / "data/raw/stsbenchmark").mkdir(parents=True)  # the dev set early stopping reads
    dev = [f"g\tf\ty\t{i}\t{i % 6}.0\t{a}\t{b}"
           for i, (a, b) in enumerate(zip(_sentences()[:10], _sentences()[10:20], strict=True))]  # fmt: skip
    (root / "data/raw/stsbenchmark/sts-dev.csv").write_text("\n".join(dev) + "\n")
    params = load_params(REPO / "params.yaml")
    params["prepare_corpus"]["input"]["en"] = {
        "source": str(corpus.relative_to(root)),
        "format": "text",
    }
    params["prepare_corpus"].update(langdetect_threshold=0.0, workers=1)
    tc = params["train_contrastive"]
    tc.update(base_model=str(base), max_examples=None, batch_size=4, epochs=1)
    tc["methods"] = {
        "simcse_unsup": {"loss": "infonce", "input": "data/corpus/sentences.parquet"},
        "mine": {"loss": "infonce", "input": "own/pairs.tsv"},
    }
    params["device"] = "cpu"
    return with_runs(params)


def test_a_users_pairs_and_triplets_train_as_they_are(tmp_path):
    pairs = pd.DataFrame({"anchor": ["a b", "c d"], "positive": ["a c", "c e"]})
    pairs.to_parquet(tmp_path / "pairs.parquet")
    got = load_examples(tmp_path / "pairs.parquet", None, seed=0)
    assert got[["anchor", "positive"]].values.tolist() == [["a b", "a c"], ["c d", "c e"]]
    assert got["negative"].isna().all()
    (tmp_path / "triplets.tsv").write_text(
        "anchor\tpositive\tnegative\na b\ta c\t\nc d\tc e\tf g\n", encoding="utf-8"
    )
    got = load_examples(tmp_path / "triplets.tsv", None, seed=0)
    assert got["negative"].isna().tolist() == [True, False]  # an empty cell: no negative
    assert got["negative"][1] == "f g"


def test_a_users_files_are_deps_of_the_stages_that_read_them(tmp_path, tiny_bert):
    params = _own_project(tmp_path, tiny_bert)
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    stages = expand_stages(pipeline, params)
    assert "data/own/corpus" in dep_paths(stages["prepare_corpus"]["deps"])
    assert "own/pairs.tsv" in dep_paths(stages["train_contrastive@mine"]["deps"])


def test_from_a_users_text_file_to_an_encoder_sentence_transformers_loads(tmp_path, tiny_bert):
    from sentence_transformers import SentenceTransformer

    params = _own_project(tmp_path, tiny_bert)
    with contextlib.chdir(tmp_path):
        run_stage("prepare_corpus", params)
        for method in ("simcse_unsup", "mine"):
            run_stage(f"train_contrastive@{method}", params)
    corpus = pd.read_parquet(tmp_path / "data/corpus/sentences.parquet")
    assert set(corpus["text"]) <= set(_sentences()) and len(corpus) > 20
    probe = ["The old bridge was rebuilt.", "A doctor moved to the coast."]
    for method in ("simcse_unsup", "mine"):
        path = tmp_path / "models/encoders" / method
        user = SentenceTransformer(str(path), device="cpu").encode(probe)
        ours = EmbeddingCache(load_encoder(path, torch.device("cpu")), precision="fp32")
        np.testing.assert_allclose(user, ours.embed(probe), rtol=1e-5, atol=1e-6)
        trained = SentenceTransformer(str(tiny_bert), device="cpu").encode(probe)
        assert not np.allclose(user, trained), f"{method} did not train"
