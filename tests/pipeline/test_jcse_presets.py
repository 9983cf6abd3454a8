"""JCSE's domain presets (issue 31): jcse-clinic and jcse-edu validate and give DVC the
DAG they describe; the domain stages chain on tiny inputs (a domain corpus, its mix with
the main corpus, the adapted and the unadapted filler's negatives, the fills' domain
vocabulary); the domain vocabulary by hand; and (slow) the clinical preset's whole DAG
under `dvc repro` on smoke sizes with tiny models."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from stage_helpers import run_stage

from paracl.core import schemas
from paracl.core.io import read_parquet
from paracl.parts.filler.domain_vocab import domain_words, vocabulary_use
from paracl.presets import merge_preset
from paracl.schema import check_all, validate_all

REPO = Path(__file__).resolve().parents[2]
DVC = [sys.executable, "-m", "dvc"]

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def preset_params(*names: str, base: dict | None = None) -> dict:
    """params.yaml with presets merged in order (runs rewritten, as `paracl preset`)."""
    params = base or yaml.safe_load((REPO / "params.yaml").read_text())
    for name in names:
        params = merge_preset(
            params, yaml.safe_load((REPO / "presets" / f"{name}.yaml").read_text())
        )
    check_all(validate_all(params))
    return params


def dag_edges(project: Path, params: dict) -> set[tuple[str, str]]:
    """`dvc dag --dot`'s edges for dvc.yaml with these params."""
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copy(REPO / "dvc.yaml", project / "dvc.yaml")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run([*DVC, "init", "-q"], cwd=project, check=True)
    dot = subprocess.run([*DVC, "dag", "--dot"], cwd=project, check=True, capture_output=True,
                         text=True).stdout  # fmt: skip
    edges = set()
    for line in dot.splitlines():
        if "->" in line:
            a, b = line.strip().rstrip(";").split(" -> ")
            edges.add((a.strip('"'), b.strip('"')))
    return edges


@pytest.mark.parametrize(("preset", "domain", "task"), [("jcse-clinic", "clinic", "jacsts"),
                                                         ("jcse-edu", "edu", "qabot")])  # fmt: skip
def test_preset_dag(tmp_path, preset, domain, task):
    params = preset_params(preset)
    assert params["target_corpus"] == f"data/corpus/{domain}.parquet"
    methods = params["train_contrastive"]["methods"]
    assert set(methods) == {"none", "simcse_wiki", "simcse_wiki_domain", "jcse",
                            "jcse_unadapted", "jcse_two_stage"}  # fmt: skip
    assert (
        methods["jcse"]["hard_negative_weight"],
        methods["jcse_two_stage"]["hard_negative_weight"],
    ) == (0.0, 1.0)  # JCSE stage one, stage two (the authors' code)
    runs = params["train_contrastive"]["runs"]
    assert len(runs) == 1 + 5 * 3  # none + five methods x three seeds
    edges = dag_edges(tmp_path, params)
    expected = {
        ("prepare_corpus", f"prepare_domain@{domain}"),
        (f"prepare_domain@{domain}", "adapt_filler"),
        ("adapt_filler", "corrupt"),
        (f"prepare_domain@{domain}", "corrupt_unadapted@unadapted"),
        ("corrupt", "train_contrastive@jcse_s2"),
        ("corrupt_unadapted@unadapted", "train_contrastive@jcse_unadapted_s2"),
        (f"prepare_domain@{domain}", "train_contrastive@simcse_wiki_domain_s3"),
        ("prepare_corpus", "train_contrastive@simcse_wiki_s1"),
        ("train_contrastive@jcse_s3", "train_contrastive@jcse_two_stage_s3"),
        ("train_contrastive@jcse_two_stage_s1", f"evaluate@jcse_two_stage_s1-{task}"),
        (f"evaluate@none-{task}", "summary"),
    }
    assert expected <= edges, expected - edges
    assert ("adapt_filler", "corrupt_unadapted@unadapted") not in edges


def test_default_dag_has_no_domain_stage(tmp_path):
    edges = dag_edges(tmp_path, yaml.safe_load((REPO / "params.yaml").read_text()))
    nodes = {n for e in edges for n in e}
    assert {"adapt_filler", "corrupt"} <= nodes
    assert not any(n.startswith(("prepare_domain", "corrupt_unadapted")) for n in nodes)


def test_domain_words_by_hand():
    target = Counter({"aorta": 5, "patient": 6, "the": 50, "rare": 2, "city": 3})
    reference = Counter({"the": 500, "city": 40, "patient": 1, "river": 459})  # 1000 tokens
    # target: 66 tokens. aorta 5/66 >= 10 * 1/1000; patient 6/66 >= 10 * 2/1000;
    # the 50/66 < 10 * 501/1000; city 3/66 < 10 * 41/1000; rare: only 2 times
    assert domain_words(target, reference) == {"aorta", "patient"}
    negatives = pd.DataFrame({
        "fills": [["aorta", ""], ["river city"], ["the patient"]],
        "chunks": [["the heart", "a man"], ["the aorta"], ["the man"]],
    })  # fmt: skip
    use = vocabulary_use(negatives, frozenset({"aorta", "patient"}), "en")
    assert use["fills"] == {"share_with_domain_word": pytest.approx(0.6667), "share_of_words":
                            pytest.approx(0.4)}  # fmt: skip
    # the replaced chunks only (row 1's "a man" had no fill): the heart / the aorta / the man
    assert use["replaced_chunks"]["share_with_domain_word"] == pytest.approx(0.3333)


CLINIC = [
    "The patient was admitted with acute aortic dissection and severe chest pain.",
    "A computed tomography scan showed a large hematoma in the left kidney.",
    "The patient was treated with intravenous steroids and recovered after two weeks.",
    "Blood tests showed high levels of troponin and creatinine in the serum.",
    "The tumour was removed by laparoscopic surgery and the patient was discharged.",
    "The chest radiograph showed cardiomegaly and a small pleural effusion on the left.",
] * 3


def test_domain_stages_chain_on_tiny_inputs(tmp_path, monkeypatch, tiny_gpt2):
    from test_negatives_stages import SENTENCES, _params

    from paracl.core.io import write_parquet

    monkeypatch.chdir(tmp_path)
    general = SENTENCES * 20  # the main corpus (the reference): 480 general sentences
    write_parquet(pd.DataFrame({
        "id": [f"w{i}-0" for i in range(len(general))], "doc_id": [f"w{i}" for i in range(len(general))],
        "title": "", "text": general, "tokens": [s.rstrip(".!").split() for s in general],
        "n_words": [len(s.split()) for s in general], "lang": "en",
    }).astype({"n_words": "int32"}), "data/corpus/sentences.parquet", schemas.CORPUS)  # fmt: skip
    Path("data/raw/dom").mkdir(parents=True)
    lines = [f"{s[:-1]} number {i}." for i, s in enumerate(CLINIC)]  # no duplicates
    Path("data/raw/dom/clinic.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    params = _params()
    params["prepare_corpus"].update(langdetect_threshold=0.5, workers=1)
    params["prepare_domain"]["corpora"] = {"clinic": {"source": "data/raw/dom/clinic.txt",
                                                      "format": "text"}}  # fmt: skip
    params["target_corpus"] = "data/corpus/clinic.parquet"
    params["adapt_filler"]["model"] = {"en": str(tiny_gpt2), "ja": str(tiny_gpt2)}
    params["adapt_filler"]["causal_lm"].update(max_steps=2, batch_size=4, eval_every=2)
    params["corrupt"].update(num_samples=3, max_blanks=1, max_sentences=6, unadapted=["base"])
    before = torch.get_num_threads()
    try:
        run_stage("prepare_domain@clinic", params)
        corpus = json.loads(Path("metrics/corpus_clinic.json").read_text())
        domain = read_parquet("data/corpus/clinic.parquet", schemas.CORPUS)
        mix = read_parquet("data/corpus/clinic_mix.parquet", schemas.CORPUS)
        assert len(domain) == corpus["kept"] > 0 and len(mix) == 480 + len(domain)
        assert corpus["mix"]["domain_sentences"] == len(domain)
        run_stage("adapt_filler", params)
        run_stage("corrupt", params)
        run_stage("corrupt_unadapted@base", params)
        for name in ("negatives", "negatives_base"):
            vocab = json.loads(Path(f"metrics/{name}.json").read_text())["domain_vocabulary"]
            assert vocab["vocabulary"] > 0 and "patient" in vocab["most_frequent"]
            assert vocab["reference"] == "data/corpus/sentences.parquet"
            assert set(vocab["fills"]) == {"share_with_domain_word", "share_of_words"}
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_clinic_preset_runs_end_to_end_on_smoke_sizes(tmp_path, mirror):
    """`dvc repro` of jcse-clinic's whole DAG with tiny models (smoke sizes): every stage
    runs and the summary has the claims table (the numbers are noise). A tiny byte-level
    LM writes no clean Japanese fill, so the plumbing runs in English: the domain corpus is
    a small English clinical text; JACSTS and JSNLI are scored and read as they are."""
    from smoke_helpers import smoke_project

    project = smoke_project(tmp_path / "p", tmp_path / "models")
    for rel in ("stages", "dvc.yaml", "presets"):  # the work tree's, new files included
        src, dst = REPO / rel, project / rel
        shutil.copytree(src, dst, dirs_exist_ok=True) if src.is_dir() else shutil.copy(src, dst)
    (project / "domain").mkdir()
    lines = [f"{s[:-1]} in case {i}." for i, s in enumerate(CLINIC * 3)]
    (project / "domain" / "clinic.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params = preset_params("jcse-clinic", base=params)
    small = {
        "lang": "en",
        "fetch": {"sources": [*params["fetch"]["sources"], "jcse", "jsnli"]},
        "prepare_corpus": {"max_sentences": 60, "langdetect_threshold": 0.5},
        "prepare_domain": {"corpora": {"clinic": {"source": "domain/clinic.txt"}}},
        "adapt_filler": {"model": {"en": "models/tiny/llama"},
                         "causal_lm": {"max_steps": 2, "eval_every": 2}},
        "corrupt": {"max_sentences": 8, "num_samples": 3, "max_blanks": 1},
        "train_contrastive": {"base_model": "models/tiny/bert", "batch_size": 8,
                              "max_examples": 16, "dev_max_pairs": 16},
        "evaluate": {"max_eval_pairs": 16},
    }  # fmt: skip
    params = merge_preset(params, small)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = os.environ | {"PARACL_DATA_MIRROR": str(mirror)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run([*DVC, "repro"], cwd=project, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = (project / "metrics" / "summary.md").read_text()
    assert "JACSTS" in summary and "JCSE §3.2" in summary  # the claims table
    adapt = json.loads((project / "metrics" / "adapt_filler.json").read_text())
    assert adapt["filler"] == "causal_lm" and adapt["adapted"] is True
    vocab = json.loads((project / "metrics" / "negatives_unadapted.json").read_text())
    assert vocab["domain_vocabulary"]["vocabulary"] > 0
