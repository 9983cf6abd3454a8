"""The paper presets, end to end, on tiny models and a small mirror (issue 30).

The slow tests do what a researcher does, `paracl preset paper-en` (or paper-ja) and
`dvc repro`, in a fresh copy of the project, with two substitutions that are plain
configuration, not test hooks: every hub id the params name is a tiny random model of
the same architecture in a Hugging Face cache (paracl.testing.hub_cache; HF_HOME,
HF_HUB_OFFLINE=1), and every dataset comes from a small mirror of files in their
published formats with its own registry (paracl.testing.data_mirror;
PARACL_DATA_MIRROR, PARACL_DATA_REGISTRY). Sizes are capped (`cap_sizes`); no stage,
method or task is dropped. The run must end with the papers' tables in their layout.

The fast tests check, in the default suite, what the slow ones rest on: each preset
validates, every hub id it names has a tiny builder, every file it fetches can be put in
the mirror, and its DAG (methods × tasks) is what dvc sees.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stage_helpers import copy_project, squeezed

from paracl.presets import load_preset, merge_preset
from paracl.schema import validate_all, with_runs
from paracl.stages.fetch.sources.registry import load_registry, select
from paracl.stages.summary import PI_MEASURES, _present
from paracl.testing import data_mirror, hub_cache

REPO = Path(__file__).resolve().parents[2]
PRESETS = ("paper-en", "paper-ja")

# Size caps for a plumbing run: wherever a key of this name appears in params.yaml (a
# stage's section or one method's own settings), a larger value or null ("all") becomes
# the cap. Nothing is switched off; whole evaluation sets stay whole (the mirror is small).
CAPS = {
    "max_sentences": 40, "max_steps": 20, "eval_every": 10, "dev_sentences": 8,
    "max_examples": 32, "dev_max_pairs": 32, "max_train_pairs": 32, "max_train": 32,
    "max_dev": 16, "epochs": 1, "max_epochs": 1, "patience": 1, "batch_size": 8,
    "mega_batch": 2, "n_seeds": 2, "max_length": 32, "max_seq_length": 32,
    "max_new_tokens": 16, "max_fill_tokens": 4, "num_beams": 6, "threads": 1, "workers": 1,
    "heatmap_max_pairs": 200, "dev_per_share": 1, "test_per_share": 1, "train_per_share": 4,
    "min_train_pairs": 1,  # a minimum: lowered so the paraphraser trains on the few pairs
}  # fmt: skip
SEEDS = 2  # every list of seeds: its first two (mean ± sd and the t-tests still shown)


def cap_sizes(node):
    """A copy of params with every CAPS key capped, recursively (methods included)."""
    if isinstance(node, list):
        return [cap_sizes(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        cap = CAPS.get(key)
        if cap is not None and (value is None or isinstance(value, int | float)):
            out[key] = cap if value is None or isinstance(value, bool) else min(value, cap)
        else:
            out[key] = cap_sizes(value)
    return out


def preset_params(name: str) -> dict:
    """params.yaml with the preset merged in, as `paracl preset` writes it."""
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    return merge_preset(params, load_preset(REPO / "presets" / f"{name}.yaml"))


def capped(params: dict) -> dict:
    """Sizes capped, every list of seeds cut to SEEDS, the runs rewritten to match (as
    `paracl preset` writes them)."""

    def seeds(node):
        if isinstance(node, dict):
            return {k: v[:SEEDS] if k == "seeds" and isinstance(v, list) else seeds(v)
                    for k, v in node.items()}  # fmt: skip
        return node

    return with_runs(seeds(cap_sizes(params)))


# --- fast: what the end-to-end run rests on ----------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_preset_and_its_caps_validate(name):
    params = preset_params(name)
    validate_all(params)
    validate_all(capped(params))
    assert capped(params)["train_contrastive"]["methods"].keys() == (
        params["train_contrastive"]["methods"].keys()
    ), "the caps drop no method"


# The papers' claims (paracl.stages.summary.CLAIMS) each preset must be able to test:
# PPDB Table 3 in both languages, the round-trip paper's Table 3 (its NLI half and Table 4 in
# English), EBSIM's ablation, and
# JCSE's two stages in Japanese (JCSE's domain claims belong to presets/jcse-*.yaml).
# The round-trip paper's NLI rows and Table 4 are English (MNLI + SNLI): paper-en alone.
PAPER_CLAIMS = {
    "paper-en": (
        "PPDB Table 3",
        "Round trip Table 3",
        "Round trip Table 4",
        "EBSIM Table 5",
        "Cross-lingual PI",
    ),
    "paper-ja": ("PPDB Table 3", "Round trip Table 3:", "EBSIM Table 5", "JCSE: two-stage"),
}


# Each paper's rows on its paper's base (train_contrastive.base_model, or a method's own):
# BERT for the English rows, the cross-lingual PI paper's LaBSE, JCSE's cl-tohoku BERT
# (§4.4); PPDB's Japanese rows on rinna RoBERTa, with the round-trip and EBSIM rows beside
# them (neither paper names a Japanese base).
BERT, RINNA = "bert-base-uncased", "rinna/japanese-roberta-base"
PAPER_BASES = {
    "paper-en": {"PPDB": BERT, "Round trip": BERT, "EBSIM": BERT,
                 "Cross-lingual PI": "sentence-transformers/LaBSE"},
    "paper-ja": {"PPDB": RINNA, "Round trip": RINNA, "EBSIM": RINNA,
                 "JCSE": "cl-tohoku/bert-base-japanese"},
}  # fmt: skip
MIN_SEEDS = 5  # training seeds of every row a claim rests on (the papers average 5)


def preset_claims(name: str) -> list[tuple[str, str | tuple, str | tuple, str]]:
    """(claim, method, other, measure) of every claim of the preset's papers, as its rows:
    the PI paper's on LaBSE (labse_*), its cross-encoder labse_none fine-tuned."""
    from paracl.stages.summary import CLAIMS, CROSS_ENCODER, PI_CLAIMS

    labse = [(c, *("labse_" + ("none" if m == CROSS_ENCODER else m) for m in pair), on)
             for c, *pair, on in PI_CLAIMS]  # fmt: skip
    return [c for c in (*CLAIMS, *labse) if c[0].startswith(PAPER_CLAIMS[name])]


@pytest.mark.parametrize("name", PRESETS)
def test_every_claim_of_the_presets_papers_has_both_its_methods(name):
    methods = preset_params(name)["train_contrastive"]["methods"]
    claims = preset_claims(name)
    assert {p for p in PAPER_CLAIMS[name] if any(c[0].startswith(p) for c in claims)} == set(
        PAPER_CLAIMS[name]
    )
    missing = [(claim, m) for claim, *pair, _ in claims for m in pair if not _present(m, methods)]
    assert not missing, f"{name} cannot test these claims: {missing}"


def _setting(method: str, key: str, params: dict):
    """A method's value of a shared training key: its own, else the shared one (seeds:
    its own, else train_contrastive.seeds; `precision`: else the top-level key). A method
    that continues another's encoder (jcse_two_stage) is on that method's `base_model`."""
    from paracl.parts.runs import ENCODERS

    tc = params["train_contrastive"]
    entry = tc["methods"][method]
    parent = str(entry["input"]).rstrip("/").removeprefix(ENCODERS)
    if key == "base_model" and entry.get("data") is not None and parent in tc["methods"]:
        return _setting(parent, key, params)
    if key in entry:
        return entry[key]
    return params["precision"] if key == "precision" else tc.get(key)


@pytest.mark.parametrize("name", PRESETS)
def test_every_claim_compares_like_with_like(name):
    """The two methods of every claim share every training setting (lr, batch, length,
    epochs, corpus size, seeds, selection, precision, ...) but the one the claim is about
    (summary.VARIES); the message names the setting that differs."""
    from paracl.stages.summary import CLAIMS, VARIES
    from paracl.stages.train_contrastive.training.methods import METHOD_SETTINGS

    params = validate_all(preset_params(name))
    methods = params["train_contrastive"]["methods"]
    unlike = []
    for claim, *pair, _ in CLAIMS:
        a, b = (_present(m, methods) for m in pair)
        if a is None or b is None:
            continue
        for key in (*METHOD_SETTINGS, "seeds"):
            if key in VARIES.get(claim, ()):
                continue
            va, vb = _setting(a, key, params), _setting(b, key, params)
            if va != vb:
                unlike.append(f"{claim}: {key} differs ({a}: {va!r}, {b}: {vb!r})")
    assert not unlike, f"{name}:\n" + "\n".join(unlike)


@pytest.mark.parametrize("name", PRESETS)
def test_each_papers_claims_compare_rows_on_its_papers_base(name):
    """A claim compares two rows on one base, its paper's (PAPER_BASES); the message names
    each row's base (the summary refuses a claim whose rows ran on two: test_summary.py)."""
    params = validate_all(preset_params(name))
    methods = params["train_contrastive"]["methods"]
    wrong = []
    for claim, *pair, _ in preset_claims(name):
        want = next(b for p, b in PAPER_BASES[name].items() if claim.startswith(p))
        for m in (_present(m, methods) for m in pair):
            if _setting(m, "base_model", params) != want:
                wrong.append(f"{claim}: {m} on {_setting(m, 'base_model', params)}, not {want}")
    assert not wrong, f"{name}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", PRESETS)
def test_every_row_a_claim_rests_on_trains_five_seeds(name):
    """Each claim's two rows train >= MIN_SEEDS seeds (train_contrastive.runs, as `paracl
    preset` writes them). `none` trains nothing (one exact value: the PI claims test the
    method's seeds against it); a cross-encoder row's seeds are its fine-tuning seeds."""
    from paracl.parts.runs import expand_runs
    from paracl.stages.summary import run_groups

    params = validate_all(preset_params(name))
    tc = params["train_contrastive"]
    rows = run_groups(expand_runs(tc))
    few = []
    for claim, *pair, measure in preset_claims(name):
        for m in (_present(m, tc["methods"]) for m in pair):
            if tc["methods"][m]["loss"] == "none":
                if measure == "pi_within":  # against its cross-encoder: fine-tuning seeds
                    n = len(params["evaluate"]["seeds"])
                    few += [f"{claim}: {m}'s cross-encoder: {n} seeds"] if n < MIN_SEEDS else []
                continue
            if len(rows[m]) < MIN_SEEDS:
                few.append(f"{claim}: {m} trains {len(rows[m])} seed(s)")
    listed = "\n".join(sorted(set(few)))
    assert not few, f"{name}: fewer than {MIN_SEEDS} training seeds:\n{listed}"


@pytest.mark.parametrize("name", PRESETS)
def test_the_preset_trains_each_method_as_its_authors_scripts(name):
    """Precision (paracl.core.device) and SimCSE's MLP as each paper's released code has them."""
    methods = validate_all(preset_params(name))["train_contrastive"]["methods"]
    own = {m: e.get("precision") for m, e in methods.items()}
    assert own["simcse_unsup_rt"] == own["roundtrip"] == own["paraphraser_bleu20"] == "fp16"
    assert own["jcse"] == "fp32" and own.get("jcse_two_stage", "fp32") == "fp32"
    # no code: the top-level key; PPDB's SimCSE baselines train on its recipe
    assert own["ppdb"] is own["ebsim"] is own["simcse_unsup"] is own["simcse_sup"] is None
    # each paper's model selection, and SimCSE's trainer's clipping (issue 58 item 5)
    tc = validate_all(preset_params(name))["train_contrastive"]
    assert tc["selection"] == "dev_loss" and tc["patience"] == 3  # PPDB §4.3
    for m in ("simcse_unsup_rt", "paraphraser_bleu20", "roundtrip_greedy", "jcse"):
        assert methods[m]["sts_dev_every"] == 125 and methods[m]["max_grad_norm"] == 1.0, m
    assert methods["ams"]["selection"] == "none" and methods["ams"]["epochs"] == 50
    assert methods["ebsim"]["dev_loss_examples"] == 20000
    # supervised SimCSE embeds through its MLP (no --mlp_only_train; --pooler cls)
    assert methods["simcse_sup"]["pooling"] == "cls_mlp_always"


@pytest.mark.parametrize("name", PRESETS)
def test_every_hub_id_of_the_preset_has_a_tiny_model_of_its_architecture(name):
    ids = hub_cache.hub_ids(preset_params(name))
    assert ids, "a paper preset names hub models"
    missing = sorted(ids - set(hub_cache.BUILDERS))
    assert not missing, f"{name}: no tiny builder for {missing}"


@pytest.mark.parametrize("name", PRESETS)
def test_every_file_the_preset_fetches_can_be_mirrored(name, mirror):
    """Each registry file of fetch.sources is in the origin mirror or has a writer."""
    sources = preset_params(name)["fetch"]["sources"]
    text = data_mirror.Text(None)
    for entry in select(load_registry(), sources):
        if (mirror / entry.file).is_file():
            continue
        data_mirror.synthesize(entry, text, rows=4)  # raises KeyError naming the file


@pytest.mark.parametrize("name", PRESETS)
def test_every_file_the_preset_fetches_passes_the_registry_checks(name):
    """`PARACL_ALLOW_DOWNLOAD=1 dvc repro` right after `paracl preset`: a source whose
    files have no published checksum must be opted in, or the fetch stops at once."""
    fetch = preset_params(name)["fetch"]
    allowed = fetch.get("allow_unverified") or []
    refused = sorted({e.source for e in select(load_registry(), fetch["sources"])
                      if not e.verified and e.source not in allowed})  # fmt: skip
    assert not refused, f"{name}: fetch refuses {refused} (not in fetch.allow_unverified)"


@pytest.mark.parametrize(
    ("source", "member"),
    [("jsnli-train", "jsnli_1.1/train_w_filtering.tsv"), ("snli", "snli_1.0/snli_1.0_train.jsonl")],
)
def test_synthesised_nli_files_give_supervised_triplets_as_the_real_ones(
    source, member, mirror, tmp_path
):
    """As published, each premise has a hypothesis of every label, so simcse_sup and
    jcse_two_stage find (premise, entailment, contradiction) triplets in them."""
    import io
    import zipfile

    from paracl.stages.train_contrastive.training.data import load_examples

    entry = next(e for e in select(load_registry(), [source]) if e.file.endswith(".zip"))
    text = data_mirror.Text(mirror)  # real sentences: no premise repeats by chance
    archive = zipfile.ZipFile(io.BytesIO(data_mirror.synthesize(entry, text, 12)))
    path = tmp_path / Path(member).name
    path.write_bytes(archive.read(member))
    ex = load_examples(path, None, seed=0)
    assert len(ex) >= 3 and ex["negative"].notna().all()


def test_a_small_mirror_fetches_with_its_own_registry_and_only_with_it(tmp_path, mirror):
    """PARACL_DATA_REGISTRY points fetch at the mirror's own checksums; without it the
    packaged registry still refuses the cut-down files (its checks are not weakened)."""
    from paracl.stages.fetch import REGISTRY_ENV, FetchError, fetch

    small = tmp_path / "mirror"
    registry = data_mirror.build_mirror(["ppdb"], small, mirror)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(REGISTRY_ENV, str(registry))
        metrics = fetch(["ppdb"], tmp_path / "raw", small)
    assert metrics["registry"] == str(registry) and metrics["origin"] == "mirror"
    sample = (tmp_path / "raw/ppdb/ppdb-sample.tsv").read_bytes()
    assert 0 < sample.count(b"\n") <= data_mirror.ROWS + 1  # a cut-down file, same format
    assert sample.split(b"\n")[0] == (mirror / "ppdb/ppdb-sample.tsv").read_bytes().split(b"\n")[0]
    with pytest.raises(FetchError, match="mismatch"):
        fetch(["ppdb"], tmp_path / "raw2", small)
    assert not (tmp_path / "raw2").exists()


def test_hub_cache_resolves_ids_offline_to_the_same_config_class(tmp_path, monkeypatch):
    """Two cheap ids, built into the standard cache layout, resolve through
    paracl.core.models.resolve_model (source hf-cache) with the real config/tokenizer class."""
    from transformers import AutoConfig, AutoTokenizer

    from paracl.core.models import resolve_model

    ids = {
        "bert-base-uncased": ("BertConfig", "BertTokenizer"),  # WordPiece vocab.txt
        "t5-base": ("T5Config", "T5Tokenizer"),
    }  # spiece.model only: needs sentencepiece
    from huggingface_hub import constants

    root = hub_cache.build_hub_cache(ids, tmp_path / "hf")
    env = hub_cache.hub_env(root)
    # huggingface_hub reads these variables once, at import: set its constants as well
    monkeypatch.setattr(constants, "HF_HUB_CACHE", env["HF_HUB_CACHE"])
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    for model_id, (config_cls, tok_cls) in ids.items():
        resolved = resolve_model(model_id)
        assert resolved.source == "hf-cache", resolved
        assert type(AutoConfig.from_pretrained(model_id)).__name__ == config_cls
        assert type(AutoTokenizer.from_pretrained(model_id)).__name__ == tok_cls
    assert AutoTokenizer.from_pretrained("t5-base").convert_tokens_to_ids("<extra_id_99>") > 2
    snapshot = hub_cache.repo_dir(root / "hub", "bert-base-uncased") / "snapshots"
    assert [p.name for p in snapshot.iterdir()] == [hub_cache.revision("bert-base-uncased")]


def test_a_hub_cache_is_the_same_bytes_on_every_build(tmp_path):
    """Same params, same seed, same models: two fresh caches of every id the presets name
    hold the same files (tokenizers' WordPiece trainer gave a new BERT vocabulary each
    build, so two runs of a paper preset on fresh caches trained different models)."""
    import hashlib

    ids = set().union(*(hub_cache.hub_ids(preset_params(n)) for n in PRESETS))

    def files(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    first = hub_cache.build_hub_cache(ids, tmp_path / "a")
    second = hub_cache.build_hub_cache(ids, tmp_path / "b")
    assert files(first) == files(second)


# --- slow: the whole pipeline ------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_hub(tmp_path_factory) -> Path:
    """One cache with a tiny model for every hub id either preset names."""
    ids = set().union(*(hub_cache.hub_ids(preset_params(n)) for n in PRESETS))
    return hub_cache.build_hub_cache(ids, tmp_path_factory.mktemp("hf-home"))


def paper_project(dest: Path, name: str, origin: Path) -> tuple[Path, dict]:
    """A fresh copy of the project with `paracl preset <name>` applied (the CLI, as a
    user runs it), then the size caps; its small mirror beside it. Returns (project, env)."""
    project = copy_project(dest / "project")
    cli = [sys.executable, "-m", "paracl.cli", "preset", name]
    subprocess.run(cli, cwd=project, check=True, capture_output=True, text=True)
    params = capped(yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8")))
    validate_all(params)
    (project / "params.yaml").write_text(
        yaml.safe_dump(params, sort_keys=False, allow_unicode=True)
    )
    registry = data_mirror.build_mirror(params["fetch"]["sources"], dest / "mirror", origin)
    git = ["git", "-c", "user.name=paracl", "-c", "user.email=paracl@localhost"]
    subprocess.run([*git, "add", "-A"], cwd=project, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", name], cwd=project, check=True, capture_output=True)
    env = {"PARACL_DATA_MIRROR": str(dest / "mirror"), "PARACL_DATA_REGISTRY": str(registry)}
    return project, env


def repro(project: Path, env: dict, log: Path) -> subprocess.CompletedProcess:
    run_env = {k: v for k, v in os.environ.items() if k != "PARACL_ALLOW_DOWNLOAD"}
    run_env |= env | {"PYTHONUNBUFFERED": "1"}
    run_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{run_env['PATH']}"
    with open(log, "wb") as out:
        return subprocess.run(
            [sys.executable, "-m", "dvc", "repro"], cwd=project, env=run_env,
            stdout=out, stderr=subprocess.STDOUT, timeout=3 * 3600,
        )  # fmt: skip


def table3_header(summary_md: str) -> tuple[list[str], list[str]]:
    """The groups and titles of the summary's first table ("Group: Title (metric)" cells)."""
    header = next(line for line in summary_md.splitlines() if line.startswith("|"))
    cells = [c.strip() for c in header.strip().strip("|").split("|")]
    split = [c.split(": ", 1) if ": " in c else ["", c] for c in cells]
    return [g for g, _ in split], [t for _, t in split]


# Table 3 of the PPDB paper: six fine-tuned columns in four groups (+ Avg.)
TABLE3 = [("Retrieval", "Shopping Queries"), ("Similarity", "STS-B"), ("Similarity", "SICK-R"),
          ("RTE", "SNLI"), ("RTE", "SICK-E"), ("Paraphrase", "PAWS")]  # fmt: skip
TABLE3_JA = [("Retrieval", "Shopping Queries"), ("Similarity", "JSTS"), ("Similarity", "JSICK"),
             ("RTE", "JNLI"), ("RTE", "JSICK-E"), ("Paraphrase", "PAWS-X")]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_paper_preset_runs_end_to_end(name, tiny_hub, mirror, tmp_path):
    project, env = paper_project(tmp_path, name, mirror)
    log = tmp_path / "repro.log"
    proc = repro(project, env | hub_cache.hub_env(tiny_hub), log)
    assert proc.returncode == 0, log.read_text(errors="replace")[-8000:]
    check_paper_summary(project, name)
    fetched = yaml.safe_load((project / "metrics/fetch.json").read_text())
    assert fetched["registry"] == env["PARACL_DATA_REGISTRY"]
    shutil.rmtree(project / ".dvc" / "cache", ignore_errors=True)


def check_paper_summary(project: Path, name: str) -> None:
    """What a researcher reads after the run: Table 3's columns in the paper's order, a
    score in every measure cell of every method, and each claim of the preset's papers on
    its own measure with >= 2 training seeds a side. (Δ and p cells may be empty or say why
    not, e.g. "n/a (1 seed)" for a one-run method, which no claim rests on.)"""
    params = yaml.safe_load((project / "params.yaml").read_text(encoding="utf-8"))
    summary = squeezed((project / "metrics/summary.md").read_text(encoding="utf-8"))
    groups, columns = table3_header(summary)
    finetuned = [(g, re.sub(r" \(.*\)$", "", c)) for g, c in zip(groups, columns, strict=True) if g]
    expected = TABLE3 if name == "paper-en" else TABLE3_JA
    # unsupervised columns (STS, PI) come after Table 3's, in their own group
    assert finetuned[: len(expected)] == expected, (groups, columns)
    titles = [f"{g}: {c}" if g else c for g, c in zip(groups, columns, strict=True)]
    for method in params["train_contrastive"]["methods"]:
        row = next((r for r in summary.splitlines() if r.startswith(f"| {method} ")), None)
        assert row is not None, f"no row for {method}:\n{summary}"
        cells = [c.strip() for c in row.strip()[1:-1].split(" | ")]
        scores = {t: c for t, c in zip(titles[1:], cells[1:], strict=True)
                  if not t.startswith(("Δ", "p ("))}  # fmt: skip
        empty = [t for t, c in scores.items() if not c or c.startswith("n/a")]
        assert not empty, f"{method} has no score under {empty}:\n{summary}"
    assert " by set (" in summary, "the unsupervised STS breakdown (SimCSE Table 5 layout)"
    found = json.loads((project / "metrics/summary.json").read_text())["claims"]
    ours = [c for c in found if c["claim"].startswith(PAPER_CLAIMS[name])]
    assert all(any(c["claim"].startswith(p) for c in ours) for p in PAPER_CLAIMS[name]), found
    for c in ours:  # against the untrained base: a one-sample test over the method's seeds
        assert "untested" not in c and min(c["n_seeds"]) >= 2, c
        assert "refused" not in c and c["base"], c  # rows on one base, named
        if c["claim"].startswith("Cross-lingual PI"):
            assert c["measure"] in PI_MEASURES, c  # its own accuracies (Table I, II)
        else:
            sts = c["claim"].startswith(("Round trip", "JCSE"))
            assert c["measure"] == ("sts" if sts else "finetune"), c  # STS claims: STS alone


def test_a_tiny_llama_written_as_gguf_runs_on_llama_cpp_as_in_transformers(tiny_llama, tmp_path):
    """The default round trip's runtime (llama.cpp) on a tiny random model: same tokens,
    same next-token logits as transformers."""
    import numpy as np
    import torch
    from llama_cpp import Llama
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from paracl.testing.tiny_gguf import write_llama_gguf

    path = write_llama_gguf(tiny_llama, tmp_path / "tiny.gguf")
    tok = AutoTokenizer.from_pretrained(str(tiny_llama))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_llama)).eval()
    text = "a man is playing a guitar"
    ids = tok(text)["input_ids"]
    llm = Llama(model_path=str(path), n_ctx=64, n_threads=1, seed=0, logits_all=True, verbose=False)
    assert llm.tokenize(text.encode(), add_bos=False) == ids
    llm.eval(ids)
    with torch.no_grad():
        expected = model(torch.tensor([ids])).logits[0].numpy()
    np.testing.assert_allclose(np.array(llm.scores[: len(ids)]), expected, atol=1e-3)
