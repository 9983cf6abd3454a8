"""Shared fixtures: tiny random models of real architectures, the data mirror, and the
parts' configs built from params.yaml (`part_config`)."""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from paracl.testing import standins
from paracl.testing.tiny_models import build_tiny_model

# `precision: auto` resolves per CPU (bf16 with AMX); the suite's expected numbers are fp32's,
# so it runs as on a CPU without native bf16, stage subprocesses included (they inherit it).
# tests/parts/test_training_precision.py fakes each CPU kind to test the rule itself.
os.environ["PARACL_CPU_BF16"] = "none"

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("PARACL_DATA_MIRROR", REPO.parent / "shared" / "data"))

# tiny-random:<arch> model ids, which the tests name, through paracl.core.models' hook
# (production registers none); xdist workers import this file too, Ray workers run REGISTER.
standins.register()
REGISTER = "paracl.testing.standins.register"
# where the test modules are (pyproject.toml's pythonpath): tests/ and one folder a floor
TEST_DIRS = (".", "stages", "parts", "core", "pipeline", "docs")


# Each part config: its params.yaml section, and the fields its stage passes besides the
# section, each with what a test takes: a params.yaml key (a str) or the value itself.
# Tests build them with `part_config`; tests/parts/test_part_configs.py checks the table
# against the classes (no defaults, every other field a key of the section).
RUN = {"seed": "seed", "precision": "precision"}
PART_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "paracl.parts.filler.pipeline.CorruptConfig": ("corrupt", {}),
    "paracl.parts.filler.causal.Sampling": ("corrupt", {}),
    "paracl.parts.filler.adapt.AdaptConfig":
        ("adapt_filler.t5", {"max_length": "adapt_filler.max_length", **RUN}),
    "paracl.parts.filler.adapt_causal.CausalAdaptConfig":
        ("adapt_filler.causal_lm", {"max_length": "adapt_filler.max_length", **RUN}),
    "paracl.stages.train_contrastive.training.trainer.TrainConfig":
        ("train_contrastive", {**RUN, "mega_batch": 1}),  # 1: no loss that mines
    "paracl.parts.finetune.tuning.FinetuneConfig": ("evaluate", {"precision": "precision"}),
    "paracl.parts.corpus.pipeline.CorpusConfig": ("prepare_corpus", {
        "source": "prepare_corpus.input.en.source", "format": "prepare_corpus.input.en.format",
        "lang": "lang", "seed": "seed"}),
}  # fmt: skip


@functools.cache
def _params() -> dict:
    from paracl.schema import load_params

    return load_params(REPO / "params.yaml")


def params_at(key: str) -> Any:
    """params.yaml's value at a dotted key (`adapt_filler.t5`), checked, a fresh copy."""
    value = _params()
    for name in key.split("."):
        value = value[name]
    return copy.deepcopy(value)


def part_config(cls: type, **overrides: Any) -> Any:
    """`cls` built as its stage builds it (paracl.core.configs.from_section) from
    params.yaml's section, `overrides` over it: a test names only what it changes."""
    from paracl.core.configs import from_section

    section, extra = PART_CONFIGS[f"{cls.__module__}.{cls.__qualname__}"]
    unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}")
    given = {k: params_at(v) if isinstance(v, str) else v for k, v in extra.items()}
    given |= {k: v for k, v in overrides.items() if k in extra}
    values = params_at(section) | {k: v for k, v in overrides.items() if k not in extra}
    return from_section(cls, values, **given)


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The offline data mirror (../shared/data); tests that need it skip without it."""
    if not MIRROR.is_dir():
        pytest.skip(f"data mirror {MIRROR} not present")
    return MIRROR


def _tiny(arch: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(arch, tmp_path_factory.mktemp(f"tiny-{arch}"))


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module's tests: tiny models gain nothing from threads, and
    on a shared, oversubscribed CPU torch's pool makes them 10-15x slower. Restored after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def nlp_en():
    """spaCy's English pipeline with noun chunks, as the corrupt stage loads it."""
    from paracl.parts.filler.chunks import load_pipeline

    return load_pipeline("en")


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    return _tiny("gpt2", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """A causal LM like SmolLM2 and Gemma: no pad token, no dropout, left padding."""
    return _tiny("llama", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return _tiny("bert", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    return _tiny("t5", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory) -> Path:
    return _tiny("bart", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_marian(tmp_path_factory) -> Path:
    return _tiny("marian", tmp_path_factory)


@pytest.fixture(scope="session")
def tiny_fsmt(tmp_path_factory) -> Path:
    from paracl.testing.standins import build_tiny_fsmt

    return build_tiny_fsmt(tmp_path_factory.mktemp("tiny-fsmt"))


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray with 2 CPUs for every Ray test of the process (start-up costs ~5 s).

    Ray tests are marked `ray`, and `make test` runs them in a pytest process of their own:
    Ray leaves gRPC threads in the process, and a later fork there (the local executor's
    process pool) can segfault it, which under xdist's loadfile also hangs the run."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail(
            "Ray tests run outside pytest-xdist: mark them @pytest.mark.ray (see make test)"
        )
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        # workers import test modules by name (functions defined in tests travel by pickle)
        tests = [str(Path(__file__).parent / d) for d in TEST_DIRS]
        env = {
            "env_vars": {"PYTHONPATH": os.pathsep.join([*tests, os.environ.get("PYTHONPATH", "")])},
            "worker_process_setup_hook": REGISTER,  # the stand-ins, in every worker
        }
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env=env)
    yield ray
    ray.shutdown()


LONGEST_FIRST = ("test_smoke_pipeline.py",)  # its module fixture runs `dvc repro`: ~6 min


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make test` runs the files on two workers (pytest-xdist, `--dist loadfile`: a file's
    module fixtures run once). The longest file goes first: started last, it would end
    last, with the other worker idle."""
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)
