"""train_contrastive on 2 CPU processes (gloo, as under torchrun) trains the same model as
one process on the same global batches and seed: the stage, end to end, for every loss
family (MNRL, JCSE through GradCache, AMS with mega-batch mining, EBSIM's cross-encoder)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.multiprocessing as mp
from stage_helpers import methods, rank_titled_corpus, run_stage, stage_argv

REPO = Path(__file__).resolve().parents[2]
WORDS = "man woman cat dog plays runs guitar field kitchen city river sea sun onion".split()
# method: mini_batch_size. ppdb: MNRL in one pass; jcse: JCSE loss through GradCache;
# ams: mining over mega-batches of 2 global batches; ebsim: per-example cross-encoder loss
RUNS = {"ppdb": None, "jcse": 2, "ams": None, "ebsim": None}


def _sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=6)) + f" {i}" for i in range(n)]


def _workdir(root: Path, model: Path) -> dict:
    """Inputs of ppdb / jcse and STS dev under root; the params to train them with."""
    from paracl.schema import load_params

    (root / "data/ppdb").mkdir(parents=True)
    (root / "data/negatives").mkdir(parents=True)
    (root / "data/raw/stsbenchmark").mkdir(parents=True)
    texts = _sentences(12, 0)
    pairs = pd.DataFrame(
        {
            "id": [str(i) for i in range(12)],
            "text": texts,
            "paraphrase": [t.replace("man", "person") + " ." for t in texts],
            "negative": [" ".join(reversed(t.split())) for t in texts],
        }
    )
    pairs.to_parquet(root / "data/ppdb/pairs.parquet")
    pairs[["id", "text", "negative"]].to_parquet(root / "data/negatives/negatives.parquet")
    (root / "data/corpus").mkdir(parents=True)
    docs = [(f"d{d}", f"{WORDS[d]} {WORDS[d + 1]}", s) for d in range(8) for s in _sentences(3, d)]
    corpus = pd.DataFrame(docs, columns=["doc_id", "title", "text"])
    corpus.to_parquet(root / "data/corpus/sentences.parquet")  # titled documents for EBSIM
    sts = [
        f"g\tf\ty\t{i}\t{(i * 7) % 6}.0\t{a}\t{b}"
        for i, (a, b) in enumerate(zip(_sentences(10, 1), _sentences(10, 2), strict=True))
    ]
    (root / "data/raw/stsbenchmark/sts-dev.csv").write_text("\n".join(sts) + "\n")
    params = load_params(REPO / "params.yaml")
    params.update(device="cpu", lang="en", seed=3)
    cfg = params["train_contrastive"]
    # 12 examples in global batches of 5: 5, 5, 2 -> ranks hold 2+3, 2+3, 1+1 rows
    cfg.update(base_model=str(model), max_examples=None, batch_size=5, epochs=2, lr=1e-3)
    cfg.update(patience=1, processes=1, dev_max_pairs=None)
    cfg["methods"] = methods("ppdb", "jcse", "ams", "ebsim")
    cfg["methods"]["ams"].update(mega_batch=2, mine_k=1)
    rank_titled_corpus(root, params)
    return params


def _run(params: dict, method: str, mini: int | None) -> None:
    params["train_contrastive"]["mini_batch_size"] = mini
    run_stage(f"train_contrastive@{method}", params)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, root: str, params: dict, ports: list[int]) -> None:
    """One torchrun-like process: the env torchrun sets, then the stage's main."""
    torch.set_num_threads(1)
    os.chdir(root)
    os.environ.update(WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank))
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    for (method, mini), port in zip(RUNS.items(), ports, strict=True):
        os.environ["MASTER_PORT"] = str(port)  # a fresh rendezvous per process group
        _run(params, method, mini)


@pytest.fixture(scope="module")
def no_dropout_bert(tiny_bert, tmp_path_factory) -> Path:
    """The tiny BERT without dropout: ranks draw their own masks, so only a dropout-free
    model can match the single-process weights exactly."""
    path = tmp_path_factory.mktemp("bert-nodrop") / "bert"
    shutil.copytree(tiny_bert, path)
    config = json.loads((path / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (path / "config.json").write_text(json.dumps(config))
    return path


def _weights(root: Path, method: str) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(root / f"models/encoders/{method}/model.safetensors")


def test_two_processes_train_the_single_process_model(tmp_path, no_dropout_bert, monkeypatch):
    one, two = tmp_path / "one", tmp_path / "two"
    params = _workdir(one, no_dropout_bert)
    _workdir(two, no_dropout_bert)
    ports = [_free_port() for _ in RUNS]
    # not fork (a fork of a process whose torch thread pool already ran can hang) but a
    # fork server that imports the training code once for both ranks (saves ~10 CPU-s)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["paracl.stages.train_contrastive.training.methods"])
    mp.start_processes(
        _worker, (str(two), params, ports), nprocs=2, join=True, start_method="forkserver"
    )
    monkeypatch.chdir(one)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each rank; 2 threads on 2 busy cores run ~4x slower
    try:
        for method, mini in RUNS.items():
            _run(params, method, mini)
    finally:
        torch.set_num_threads(threads)
    for method in RUNS:
        m1 = json.loads((one / f"metrics/train/{method}.json").read_text())
        m2 = json.loads((two / f"metrics/train/{method}.json").read_text())
        assert m2.pop("processes") == 2 and "processes" not in m1
        # 3 global batches x 2 epochs (EBSIM: as many as its triples make)
        assert m1["steps"] == m2["steps"] == (6 if method != "ebsim" else m1["steps"]) > 2
        assert m1["first_loss"] == pytest.approx(m2["first_loss"], rel=1e-4)
        assert m1["last_loss"] == pytest.approx(m2["last_loss"], rel=1e-4)
        assert m1["dev_spearman"] == pytest.approx(m2["dev_spearman"], abs=1e-2)
        floats = ("first_loss", "last_loss", "dev_spearman")
        assert {k: v for k, v in m1.items() if k not in floats} == {
            k: v for k, v in m2.items() if k not in floats
        }
        w1, w2 = _weights(one, method), _weights(two, method)
        assert w1.keys() == w2.keys()
        # EBSIM cross-encodes each rank's rows padded to their own length: float noise
        # that Adam can turn into up to lr-sized steps on near-zero gradients (one weight
        # of 1024 off by 3e-5 seen, while training moved the weights by ~2e-3)
        atol = 1e-4 if method == "ebsim" else 1e-5
        for key in w1:
            torch.testing.assert_close(w2[key], w1[key], rtol=1e-4, atol=atol, msg=key)
        # the dvclive curves and PNG come from rank 0 only, as in the single-process run
        assert (two / f"metrics/train/{method}/curves.png").exists()
    # training moved the weights far beyond that tolerance (so the check can fail)
    from safetensors.torch import load_file

    initial = load_file(no_dropout_bert / "model.safetensors")
    trained = _weights(one, "ppdb")
    moved = [k for k in trained if k in initial and not torch.allclose(trained[k], initial[k])]
    assert len(moved) > 10, moved


@pytest.mark.slow
def test_processes_param_relaunches_under_torchrun(tmp_path, no_dropout_bert):
    """What `dvc repro` runs: the plain command, with processes: 2 in params.yaml."""
    import yaml

    from paracl.schema import with_runs

    params = _workdir(tmp_path, no_dropout_bert)
    params["train_contrastive"]["processes"] = 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(with_runs(params)))
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "LOCAL_RANK")}
    script, *paths = stage_argv("train_contrastive@ppdb", params)
    subprocess.run(
        [sys.executable, str(REPO / script), *paths],
        cwd=tmp_path,
        env=env,
        check=True,
    )
    metrics = json.loads((tmp_path / "metrics/train/ppdb.json").read_text())
    assert metrics["processes"] == 2 and metrics["steps"] == 6
