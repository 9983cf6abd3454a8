"""Shared fixtures: tiny random models of real architectures, and the data mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from paracl.testing.tiny_models import build_tiny_model

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("PARACL_DATA_MIRROR", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The offline data mirror (../shared/data); tests that need it skip without it."""
    if not MIRROR.is_dir():
        pytest.skip(f"data mirror {MIRROR} not present")
    return MIRROR


def _tiny(arch: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(arch, tmp_path_factory.mktemp(f"tiny-{arch}"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    return _tiny("gpt2", tmp_path_factory)


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
    from paracl.testing.tiny_models import build_tiny_fsmt

    return build_tiny_fsmt(tmp_path_factory.mktemp("tiny-fsmt"))
