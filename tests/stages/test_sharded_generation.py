"""The model stages roundtrip, corrupt and generate_paraphrases on map_shards: a crashed
run resumes with only the missing shards recomputed and the uninterrupted bytes, and
Ray actors write the local bytes (tiny models, a tiny corpus; corrupt and
generate_paraphrases on Ray are marked slow: actors importing torch cost ~10 s CPU each)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from stage_helpers import crash_then_resume, run_stage
from test_paraphraser import _scorer
from test_roundtrip import TEXTS, write_corpus
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl.core import schemas
from paracl.core.io import read_parquet
from paracl.parts import paraphraser, translate
from paracl.schema import load_params
from paracl.stages import corrupt as negatives_sharded
from paracl.stages import generate_paraphrases as generation

REPO = Path(__file__).resolve().parents[2]
RAY = {"executor": "ray", "model_workers": 2, "gpus_per_model_worker": 1.0}
ANCHORS = [
    "The cat sat on the mat in the afternoon sun.",
    "Two dogs are running through the green field.",
    "A man is playing a guitar on the stage.",
    "The river flows into the sea near the old harbour.",
    "He was born in London and studied physics at Oxford.",
]

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def snapshot(out: str | Path) -> dict[str, bytes]:
    """Every file of a shard directory (parts + _manifest.json) by name."""
    return {p.name: p.read_bytes() for p in sorted(Path(out).iterdir())}


def base_params(**sections) -> dict:
    params = load_params(REPO / "params.yaml")
    params.update(device="cpu", lang="en", seed=3, executor="local")
    for name, values in sections.items():
        params[name].update(values)
    return params


def check_stage(
    stage: str, owner, fn_name: str, params: dict, out: str, n_shards: int, ray
) -> dict:
    """Uninterrupted bytes == resumed bytes (== Ray-actor bytes when `ray` is given, the
    local_ray fixture); `owner.fn_name` is the shard work the crash is put into.
    Returns the uninterrupted run's snapshot."""
    run_stage(stage, params)
    local = snapshot(out)
    assert len([n for n in local if n.startswith("part-")]) == n_shards
    shutil.rmtree(out)
    resumed = crash_then_resume(owner, fn_name, lambda: run_stage(stage, params), 1, out)
    assert resumed == list(range(1, n_shards))
    assert snapshot(out) == local
    if ray is not None:
        shutil.rmtree(out)
        run_stage(stage, {**params, **RAY})
        assert snapshot(out) == local
    return local


@pytest.fixture(params=["local", pytest.param("ray", marks=[pytest.mark.slow, pytest.mark.ray])])
def engine(request):
    """local: crash + resume only; ray (slow: two actors load torch + the models, ~10 s
    of CPU each on this machine): also Ray actors write the local bytes."""
    return request.getfixturevalue("local_ray") if request.param == "ray" else None


@pytest.fixture(params=["local", pytest.param("ray", marks=pytest.mark.ray)])
def engine_fast(request):
    """As `engine`, with the Ray case in the default run (one model stage on Ray actors
    is checked by default; the other two only with -m slow)."""
    return request.getfixturevalue("local_ray") if request.param == "ray" else None


def test_roundtrip_resumes_and_ray_writes_the_local_bytes(tmp_path, monkeypatch, engine_fast):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    params = base_params(
        roundtrip={
            "forward_model": "tiny-random:marian",
            "backward_model": "tiny-random:marian",
            "max_sentences": 4,
            "shard_size": 2,
            "batch_size": 2,
            "max_new_tokens": 6,
        }
    )
    out = "data/roundtrip/candidates.parquet"
    check_stage("roundtrip", translate.RoundTripJob, "process", params, out, 2, engine_fast)
    rows = read_parquet(out, schemas.ROUNDTRIP_CANDIDATES)
    assert rows["id"].nunique() == 4 and len(rows) == 16  # the seeded sample, 4 candidates each
    assert json.loads(Path("metrics/roundtrip/roundtrip.json").read_text())["n_sentences"] == 4


def test_corrupt_resumes_and_ray_writes_the_local_bytes(tmp_path, monkeypatch, engine, tiny_t5):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), ANCHORS)
    shutil.copytree(tiny_t5, "models/filler")
    params = base_params(
        corrupt={
            "max_sentences": None,
            "shard_size": 2,
            "num_beams": 3,  # one chunk at a time (the default), ranks 2 and 3 kept
            "num_return_sequences": 2,
            "fill_max_length": 4,
            "batch_size": 2,
        }
    )
    out = "data/negatives/negatives.parquet"
    check_stage("corrupt", negatives_sharded.CorruptJob, "process", params, out, 3, engine)
    sharded = json.loads(Path("metrics/negatives.json").read_text())
    # the per-shard counts, summed, equal one shard's counts over the whole input
    run_stage("corrupt", base_params(corrupt={**params["corrupt"], "shard_size": 100}))
    whole = json.loads(Path("metrics/negatives.json").read_text())
    assert sharded.pop("n_shards") == 3 and whole.pop("n_shards") == 1
    assert sharded == whole and whole["sentences_in"] == 5 and whole["candidates"] > 0


def test_generate_paraphrases_resumes_and_ray_writes_the_local_bytes(
    tmp_path, monkeypatch, engine, tiny_bart, tiny_bert
):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    paraphraser.add_tag_tokens(tok, model)
    tok.save_pretrained("models/paraphraser")
    model.save_pretrained("models/paraphraser")
    info = {"trained": True, "stand_in": True, "n_train": 0}
    Path("models/paraphraser", paraphraser.INFO_FILE).write_text(json.dumps(info))
    _scorer(tiny_bert, Path("models/sts_scorer"))
    params = base_params(
        generate_paraphrases={
            "tags": ["<SIM95><BLEU20>", "<SIM80><BLEU40>"],
            "num_beams": 2,
            "max_sentences": None,
            "batch_size": 2,
            "shard_size": 2,
            "baseline": False,  # the crash counts shards processed: the tagged run only
        }
    )
    out = "data/paraphraser/generated.parquet"
    check_stage("generate_paraphrases", generation.GenerateJob, "process", params, out, 3, engine)
    rows = read_parquet(out, schemas.GENERATED_PARAPHRASES)
    assert len(rows) == 2 * len(TEXTS) and rows["tags"].tolist()[:4] == [
        "<SIM95><BLEU20>",
        "<SIM95><BLEU20>",
        "<SIM80><BLEU40>",
        "<SIM80><BLEU40>",
    ]
