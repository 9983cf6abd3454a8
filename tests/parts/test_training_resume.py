"""A killed train_contrastive run resumes from its checkpoint and ends with the weights,
losses, dev scores and curves of an uninterrupted run: the trainer for every loss family
(crashed mid-epoch), the stage in process (SIGTERM, then other params) and as a real
process killed with SIGKILL; a checkpoint of other params or inputs is never reused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from conftest import part_config
from smoke_helpers import SMOKE, merge_preset
from stage_helpers import methods, run_stage

from paracl.core.device import seed_everything
from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import additive_margin, ebsim_triplet, infonce
from paracl.parts.losses import weighted_hard_negative as jcse
from paracl.presets import deep_merge
from paracl.schema import load_params
from paracl.stages.train_contrastive.training import trainer
from paracl.stages.train_contrastive.training.checkpoint import (
    Checkpoint,
    TrainingInterrupted,
    run_key,
)
from paracl.stages.train_contrastive.training.data import to_examples
from paracl.stages.train_contrastive.training.dev import sts_spearman
from paracl.stages.train_contrastive.training.trainer import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_thread")

TAU = {"temperature": 0.05}  # the shared train_contrastive keys a loss reads
REPO = Path(__file__).resolve().parents[2]
WORDS = "man woman cat dog plays runs guitar field kitchen city river sea sun onion".split()


def _sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=6)) + f" {i}" for i in range(n)]


def _pairs(n: int) -> pd.DataFrame:
    texts = _sentences(n, 0)
    return pd.DataFrame(
        {
            "id": [str(i) for i in range(n)],
            "text": texts,
            "paraphrase": [t.replace("man", "person") + " ." for t in texts],
            "negative": [" ".join(reversed(t.split())) for t in texts],
        }
    )


DEV = (_sentences(10, 1), _sentences(10, 2), np.arange(10.0) % 6)


class Interrupting:
    """An objective that counts the steps computed and, at step `at`, raises (a crash in
    the middle of a step) or sends this process SIGTERM (the step then completes)."""

    def __init__(self, inner, at: int | None = None, how: str = "raise"):
        self.inner, self.at, self.how, self.calls = inner, at, how, 0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def _count(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            if self.how == "raise":
                raise RuntimeError("killed")
            os.kill(os.getpid(), signal.SIGTERM)

    def columns(self, batch):
        self._count()
        return self.inner.columns(batch)

    def step(self, *args, **kwargs):
        self._count()
        return self.inner.step(*args, **kwargs)


# family: (crash at step, what it covers). 12 examples, batches of 4: 3 steps an epoch,
# 3 epochs, a checkpoint every 2 steps
FAMILIES = {
    "infonce": 7,  # resumes at step 6: epoch 2's steps done, its dev score not yet
    "jcse_grad_cache": 5,  # GradCache with dropout (its saved RNG states), mid-epoch
    "ams": 5,  # resumes inside a mega-batch of 2: the negatives mined at its start
    "ebsim": 5,  # per-example loss with the RA/AA heads (extra params)
}


def _setup(family: str, model_dir: Path):
    """A fresh model, examples, objective, config and extra params, seeded alike."""
    seed_everything(0)
    model = build_encoder(model_dir, "mean", max_seq_length=16)
    examples = to_examples(_pairs(12), "fixture")
    config = part_config(TrainConfig, lr=1e-3, epochs=3, batch_size=4, patience=2, seed=0)
    extra = None
    if family == "infonce":
        objective = infonce.objective(model, infonce.Params(), TAU)
    elif family == "jcse_grad_cache":
        objective = jcse.objective(model, jcse.Params(0.0), TAU)
        config.mini_batch_size = 2
    elif family == "ams":
        objective = additive_margin.objective(model, additive_margin.Params(mine_k=1), TAU)
        # lr so large that one step changes what is mined: re-mining on resume would show
        config.mega_batch, config.lr = 2, 1e-2
    else:
        examples = examples.assign(kind="token")
        objective = ebsim_triplet.objective(model, ebsim_triplet.Params(), {"max_seq_length": 16})
        extra = objective.parameters()
    return model, examples, objective, config, extra


def _run(family: str, model_dir: Path, checkpoint=None, at=None, how="raise"):
    model, examples, objective, config, extra = _setup(family, model_dir)
    wrapped = Interrupting(objective, at, how)
    logged: list[tuple[str, float, int]] = []
    result = train(
        model,
        examples,
        wrapped,
        config,
        lambda m: sts_spearman(m, DEV),
        lambda *entry: logged.append(entry),
        extra,
        checkpoint,
    )
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    heads = [p.detach().clone() for p in extra or []]
    return result, weights, heads, logged, wrapped.calls


def _assert_same_run(got, want) -> None:
    (r1, w1, h1, log1, _), (r2, w2, h2, log2, _) = got, want
    assert (r1.steps, r1.epochs_run, r1.best_epoch, r1.examples_seen) == (
        r2.steps,
        r2.epochs_run,
        r2.best_epoch,
        r2.examples_seen,
    )
    assert r1.losses == pytest.approx(r2.losses, rel=1e-5)
    assert r1.dev_history == pytest.approx(r2.dev_history, abs=1e-4)
    # the logger saw the same curve, each step once, in order
    assert [(k, s) for k, _, s in log1] == [(k, s) for k, _, s in log2]
    assert [v for _, v, _ in log1] == pytest.approx([v for _, v, _ in log2], rel=1e-5)
    assert w1.keys() == w2.keys()
    for key in w1:
        torch.testing.assert_close(w1[key], w2[key], msg=key)
    for a, b in zip(h1, h2, strict=True):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("family", FAMILIES)
def test_crashed_training_resumes_to_the_uninterrupted_weights(family, tiny_bert, tmp_path):
    reference = _run(family, tiny_bert)
    assert reference[0].steps == 9 and reference[0].epochs_run == 3
    checkpoint = Checkpoint(tmp_path / "run.partial-k", every=2)
    crash = FAMILIES[family]
    with pytest.raises(RuntimeError, match="killed"):
        _run(family, tiny_bert, checkpoint, at=crash)
    saved = checkpoint.load()
    assert saved["result"]["steps"] == crash - 1 - (crash - 1) % 2
    if family == "ams":
        assert saved["batch"] % 2 == 1 and saved["prepared"] is not None
    resumed = _run(family, tiny_bert, checkpoint)
    # only the steps after the checkpoint were computed again
    assert resumed[4] == reference[0].steps - saved["result"]["steps"]
    _assert_same_run(resumed, reference)
    # training moved the weights far beyond the tolerance above (so the check can fail)
    seed_everything(0)
    initial = build_encoder(tiny_bert, "mean", max_seq_length=16).state_dict()
    moved = [k for k, v in reference[1].items() if not torch.allclose(v, initial[k], atol=1e-4)]
    assert len(moved) > 10


def test_sigterm_saves_at_the_step_boundary_and_resumes(tiny_bert, tmp_path):
    reference = _run("jcse_grad_cache", tiny_bert)
    checkpoint = Checkpoint(tmp_path / "run.partial-k", every=None)  # SIGTERM only
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(TrainingInterrupted, match="after step 4; checkpoint saved in"):
        _run("jcse_grad_cache", tiny_bert, checkpoint, at=4, how="sigterm")
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back
    assert checkpoint.load()["result"]["steps"] == 4  # the step under way was finished
    resumed = _run("jcse_grad_cache", tiny_bert, checkpoint)
    assert resumed[4] == 5
    _assert_same_run(resumed, reference)


def test_a_kill_while_saving_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    checkpoint = Checkpoint(tmp_path / "run.partial-k")
    checkpoint.save({"step": 1})

    def dying_save(obj, f):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt  # killed mid-write

    monkeypatch.setattr(torch, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save({"step": 2})
    monkeypatch.undo()
    assert checkpoint.load()["step"] == 1
    assert [p.name for p in checkpoint.dir.iterdir()] == ["state.pt"]


def test_key_covers_what_the_weights_depend_on(tmp_path):
    cfg = load_params(REPO / "params.yaml")["train_contrastive"]
    data = tmp_path / "pairs.parquet"
    _pairs(4).to_parquet(data)
    cfg["methods"] = methods("ppdb", "jcse", ppdb=str(data), jcse="x")

    def key(cfg=cfg, **changes) -> str:
        args = dict(seed=1, lang="en", device_type="cpu", processes=1, inputs=[data])
        return run_key("ppdb", cfg, **(args | changes))

    base = key()
    assert key() == base
    # params that cannot change the weights keep the checkpoint
    assert key({**cfg, "checkpoint_every": 99, "processes": 4}) == base
    assert (
        key({**cfg, "methods": {**cfg["methods"], "jcse": {"loss": "jcse", "input": "y"}}}) == base
    )
    # anything the weights depend on gives another key
    others = [
        key({**cfg, "lr": cfg["lr"] * 2}),
        key({**cfg, "methods": {**cfg["methods"], "ppdb": {**cfg["methods"]["ppdb"], "seed": 3}}}),
        key(seed=2),
        key(lang="ja"),
        key(device_type="cuda"),
        key(processes=2),
    ]
    _pairs(5).to_parquet(data)  # the same path with other content
    others.append(key())
    assert len({base, *others}) == len(others) + 1


# ---- the stage ----------------------------------------------------------------------


def _workdir(root: Path, model: Path) -> dict:
    """ppdb / jcse inputs and STS dev under root; params to train them on 12 pairs."""
    (root / "data/ppdb").mkdir(parents=True)
    (root / "data/negatives").mkdir(parents=True)
    (root / "data/raw/stsbenchmark").mkdir(parents=True)
    pairs = _pairs(12)
    pairs.to_parquet(root / "data/ppdb/pairs.parquet")
    pairs[["id", "text", "negative"]].to_parquet(root / "data/negatives/negatives.parquet")
    sts = [
        f"g\tf\ty\t{i}\t{(i * 7) % 6}.0\t{a}\t{b}"
        for i, (a, b) in enumerate(zip(DEV[0], DEV[1], strict=True))
    ]
    (root / "data/raw/stsbenchmark/sts-dev.csv").write_text("\n".join(sts) + "\n")
    params = load_params(REPO / "params.yaml")
    params.update(device="cpu", lang="en", seed=3)
    cfg = params["train_contrastive"]
    cfg.update(base_model=str(model), max_examples=None, batch_size=4, epochs=2, lr=1e-3)
    cfg.update(patience=2, mini_batch_size=2, checkpoint_every=2, dev_max_pairs=None)
    cfg["methods"] = methods("jcse")
    return params


def _stage(params: dict, method: str = "jcse") -> None:
    run_stage(f"train_contrastive@{method}", params)


def _outputs(root: Path, method: str = "jcse") -> tuple[dict, dict, list]:
    """Metrics, weights, and the dvclive curve rows without their timestamps."""
    from safetensors.torch import load_file

    metrics = json.loads((root / f"metrics/train/{method}.json").read_text())
    weights = load_file(root / f"models/encoders/{method}/model.safetensors")
    plots = root / f"metrics/train/{method}/plots/metrics"
    rows = []
    for tsv in sorted(plots.rglob("*.tsv")):
        frame = pd.read_csv(tsv, sep="\t").drop(columns="timestamp", errors="ignore")
        rows.append((tsv.relative_to(plots).as_posix(), frame.values.tolist()))
    return metrics, weights, rows


def _count_steps(monkeypatch, at: int | None = None, how: str = "raise") -> list[int]:
    """Patch the trainer's step to count calls (and to be interrupted at call `at`)."""
    real, calls = trainer._step, []

    def step(*args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            if how == "raise":
                raise RuntimeError("killed")
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer, "_step", step)
    return calls


def _partials(root: Path) -> list[Path]:
    return sorted((root / "models/encoders").glob("jcse.partial-*"))


def test_stage_resumes_after_sigterm_and_never_reuses_other_params(
    tiny_bert, tmp_path, monkeypatch, capsys
):
    ref_root, root = tmp_path / "ref", tmp_path / "run"
    params = _workdir(ref_root, tiny_bert)
    _workdir(root, tiny_bert)
    monkeypatch.chdir(ref_root)
    _stage(params)
    reference = _outputs(ref_root)
    assert reference[0]["steps"] == 6 and not _partials(ref_root)

    monkeypatch.chdir(root)
    calls = _count_steps(monkeypatch, at=3, how="sigterm")
    with pytest.raises(SystemExit) as stopped:
        _stage(params)
    assert stopped.value.code == 128 + signal.SIGTERM
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("interrupted: SIGTERM: stopped after step 3; checkpoint saved")
    assert not (root / "models/encoders/jcse").exists()
    [partial] = _partials(root)
    calls = _count_steps(monkeypatch)
    _stage(params)
    assert len(calls) == 3  # steps 4-6 only
    metrics, weights, rows = _outputs(root)
    assert metrics == reference[0]
    assert rows == reference[2] and len(rows) == 2  # train/loss and dev/spearman, no repeats
    for key in reference[1]:
        torch.testing.assert_close(weights[key], reference[1][key], msg=key)
    assert not partial.exists()  # the finished run removed its checkpoint

    # a checkpoint from other params is not resumed, and is deleted
    calls = _count_steps(monkeypatch, at=5)
    with pytest.raises(RuntimeError, match="killed"):
        _stage(params)
    [stale] = _partials(root)
    params["train_contrastive"]["lr"] = 2e-3
    calls = _count_steps(monkeypatch)
    _stage(params)
    assert len(calls) == 6 and not stale.exists() and not _partials(root)


# ---- two processes ------------------------------------------------------------------


def _rank_worker(rank: int, roots: tuple[str, str], params: dict, ports: list[int]) -> None:
    """One torchrun-like rank: an uninterrupted run in roots[0]; in roots[1] a run where
    only rank 1 gets SIGTERM (during step 3), then the rerun, counting its steps."""
    torch.set_num_threads(1)
    os.environ.update(WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank))
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    ref, run = roots
    os.chdir(ref)
    os.environ["MASTER_PORT"] = str(ports[0])
    _stage(params)
    os.chdir(run)
    real, calls, armed = trainer._step, [], [rank == 1]

    def step(*args, **kwargs):
        calls.append(1)
        if armed[0] and len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    trainer._step = step
    os.environ["MASTER_PORT"] = str(ports[1])
    try:
        _stage(params)
    except SystemExit as stopped:
        Path(f"exit-{rank}").write_text(str(stopped.code))
    calls.clear()
    armed[0] = False
    os.environ["MASTER_PORT"] = str(ports[2])
    _stage(params)
    Path(f"steps-{rank}").write_text(str(len(calls)))


def test_two_processes_resume_after_sigterm_on_one_rank(tiny_bert, tmp_path):
    """Every rank stops at the same step, rank 0 saves all ranks' RNG states (each draws
    its own dropout masks), every rank loads them: the uninterrupted 2-process model."""
    import multiprocessing
    import socket

    import torch.multiprocessing as mp

    def free_port() -> int:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]

    ref, run = tmp_path / "ref", tmp_path / "run"
    params = _workdir(ref, tiny_bert)  # the tiny BERT with dropout; GradCache (mini 2)
    _workdir(run, tiny_bert)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["paracl.stages.train_contrastive.training.methods"])
    ports = [free_port() for _ in range(3)]
    mp.start_processes(
        _rank_worker,
        ((str(ref), str(run)), params, ports),
        nprocs=2,
        join=True,
        start_method="forkserver",
    )
    assert [(run / f"exit-{r}").read_text() for r in (0, 1)] == [str(128 + signal.SIGTERM)] * 2
    # 6 steps; both ranks stopped after step 3 and computed steps 4-6 only on the rerun
    assert [(run / f"steps-{r}").read_text() for r in (0, 1)] == ["3", "3"]
    reference, got = _outputs(ref), _outputs(run)
    assert reference[0]["processes"] == 2 and reference[0]["steps"] == 6
    assert got[0] == reference[0] and got[2] == reference[2]
    for key in reference[1]:
        torch.testing.assert_close(got[1][key], reference[1][key], msg=key)
    assert not _partials(run)


# ---- a real process, killed ---------------------------------------------------------


def _smoke_project(root: Path, tiny_bert: Path, **train: object) -> dict:
    """A project dir for `python stages/train_contrastive.py ppdb`: params.yaml (the smoke
    preset over the defaults, ppdb on all 240 pairs: 30 steps of 8 an epoch, `train` on
    top), its tiny BERT, the pairs and an STS dev file; returns the params."""
    import shutil

    overlay = deep_merge(
        yaml.safe_load(SMOKE.read_text()),
        {
            "device": "cpu",
            "train_contrastive": {
                "methods": methods("ppdb"),
                "max_examples": None,
                "checkpoint_every": 5,
                **train,
            },
        },
    )
    (root / "data/ppdb").mkdir(parents=True)
    (root / "data/raw/stsbenchmark").mkdir(parents=True)
    _pairs(240).to_parquet(root / "data/ppdb/pairs.parquet")
    sts = [
        f"g\tf\ty\t{i}\t{i % 6}.0\t{a}\t{b}" for i, (a, b) in enumerate(zip(*DEV[:2], strict=True))
    ]
    (root / "data/raw/stsbenchmark/sts-dev.csv").write_text("\n".join(sts) + "\n")
    shutil.copytree(tiny_bert, root / "models/tiny/bert")
    params = merge_preset(yaml.safe_load((REPO / "params.yaml").read_text()), overlay)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return load_params(root / "params.yaml")


STAGE_CMD = [
    sys.executable,
    str(REPO / "stages/train_contrastive.py"),
    *["ppdb", "models/encoders/ppdb", "metrics/train/ppdb.json", "metrics/train/ppdb"],
]
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _once_checkpointed(proc: subprocess.Popen, root: Path) -> Path:
    """Wait until the running stage has saved a checkpoint; its path."""
    deadline = time.monotonic() + 300
    while not (found := list((root / "models/encoders").glob("ppdb.partial-*/state.pt"))):
        assert proc.poll() is None, "the run ended before its first checkpoint"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return found[0]


def test_stage_process_killed_with_sigkill_resumes(tiny_bert, tmp_path, monkeypatch):
    """`python stages/train_contrastive.py ppdb` on the smoke configuration, SIGKILLed
    mid-epoch once a checkpoint exists, then run again: the uninterrupted run's model."""
    from safetensors.torch import load_file

    ref_root, root = tmp_path / "ref", tmp_path / "run"
    params = _smoke_project(ref_root, tiny_bert, epochs=2)
    _smoke_project(root, tiny_bert, epochs=2)
    monkeypatch.chdir(ref_root)
    _stage(params, "ppdb")  # in this process, one torch thread as the runs below
    reference = _outputs(ref_root, "ppdb")
    assert reference[0]["steps"] == 60

    killed = subprocess.Popen(STAGE_CMD, cwd=root, env=ONE_THREAD, stderr=subprocess.DEVNULL)
    _once_checkpointed(killed, root)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert not (root / "models/encoders/ppdb").exists()  # it died mid-run
    [state] = (root / "models/encoders").glob("ppdb.partial-*/state.pt")
    done = torch.load(state, weights_only=True)["result"]["steps"]
    assert 5 <= done < 60
    print(f"killed after step {done} of 60")

    rerun = subprocess.run(STAGE_CMD, cwd=root, env=ONE_THREAD, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"resuming from {state.relative_to(root)}: step {done}" in rerun.stderr
    metrics, _, rows = _outputs(root, "ppdb")
    floats = ("first_loss", "last_loss", "dev_spearman")
    assert metrics["steps"] == 60
    assert [metrics.pop(k) for k in floats] == pytest.approx(
        [reference[0].pop(k) for k in floats], rel=1e-5
    )
    assert metrics == reference[0]
    # the same curves, each step once (values to float tolerance: another process)
    assert [(name, [r[0] for r in v]) for name, v in rows] == [
        (name, [r[0] for r in v]) for name, v in reference[2]
    ]
    for (_, got), (_, want) in zip(rows, reference[2], strict=True):
        assert np.allclose(got, want, rtol=1e-5)
    weights = load_file(root / "models/encoders/ppdb/model.safetensors")
    for key in reference[1]:
        torch.testing.assert_close(weights[key], reference[1][key], msg=key)
    assert not state.parent.exists()


@pytest.mark.slow
def test_sigterm_reaches_the_ranks_of_a_relaunched_run(tiny_bert, tmp_path):
    """processes: 2 (the stage relaunches itself under torchrun): a SIGTERM to the stage
    goes through torchrun to both ranks, which save and stop; the rerun resumes."""
    _smoke_project(tmp_path, tiny_bert, processes=2, epochs=4, patience=4)
    env = {k: v for k, v in ONE_THREAD.items() if k not in ("WORLD_SIZE", "LOCAL_RANK")}
    log = tmp_path / "stderr.txt"
    with log.open("w") as err_file:
        run = subprocess.Popen(STAGE_CMD, cwd=tmp_path, env=env, stderr=err_file)
        _once_checkpointed(run, tmp_path)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=120) != 0
    err = log.read_text()
    assert "interrupted: SIGTERM: stopped after step" in err
    [state] = (tmp_path / "models/encoders").glob("ppdb.partial-*/state.pt")
    saved = torch.load(state, weights_only=True)
    assert len(saved["rng"]) == 2 and saved["result"]["steps"] < 120
    rerun = subprocess.run(STAGE_CMD, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"step {saved['result']['steps']} (epoch" in rerun.stderr
    metrics = json.loads((tmp_path / "metrics/train/ppdb.json").read_text())
    assert metrics["processes"] == 2 and metrics["steps"] == 120 and not state.parent.exists()
