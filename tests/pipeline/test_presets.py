"""Presets: every preset merges into valid params, applying keeps comments, invalid ones are
refused without touching params.yaml, and every model a preset names has its architecture
covered by a tiny random model run through the code path the preset uses it for."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from paracl import presets
from paracl.core.params import ParamsError
from paracl.schema import check_all, validate_all

REPO = Path(__file__).resolve().parents[2]
PRESET_FILES = sorted((REPO / "presets").glob("*.yaml"))
PAPER_PRESETS = [p for p in PRESET_FILES if p.stem.startswith("paper-")]


# Every model a preset can name -> its transformers architecture. The tests below build a
# tiny random model of each architecture and run the code path the preset uses it for,
# and fail when a preset names a model missing from this table.
ARCHITECTURES: dict[str, str] = {
    "bert-base-uncased": "bert",
    "bert-large-uncased": "bert",  # the round-trip paper's STILTs rows (paper-en, §6)
    "sentence-transformers/all-MiniLM-L6-v2": "bert",
    "rinna/japanese-roberta-base": "roberta",
    "gpt2": "gpt2",
    "rinna/japanese-gpt2-medium": "gpt2",
    "t5-base": "t5",
    "sonoisa/t5-base-japanese-v1.1": "t5",
    "facebook/bart-base": "bart",
    "facebook/wmt19-en-de": "fsmt",
    "facebook/wmt19-de-en": "fsmt",
    "microsoft/deberta-v3-large": "deberta-v2",
    "HuggingFaceTB/SmolLM2-135M-Instruct": "llama",  # effect-en's plain base
    "google/gemma-3-270m": "gemma3_text",  # effect-ja's plain base
    "sentence-transformers/LaBSE": "bert",  # the cross-lingual PI paper's base (paper-en)
    # JCSE's base (paper-ja's jcse rows): BERT whose tokenizer splits words with MeCab
    # (BertJapaneseTokenizer, fugashi + ipadic): its own code path, so its own key here
    "cl-tohoku/bert-base-japanese": "bert-japanese",
}

# params keys (dotted) that name a model, and what the pipeline does with that model.
MODEL_KEYS: dict[str, str] = {
    "train_contrastive.base_model": "encoder",  # sentence-transformers bi-encoder
    "rank_fluency.model.en": "causal_lm",  # perplexity (paraphrase.fluency)
    "rank_fluency.model.ja": "causal_lm",
    "adapt_filler.model.en": "t5_filler",  # sentinel blanks filled (negatives.generate)
    "adapt_filler.model.ja": "t5_filler",
    "roundtrip.forward_model": "translation",  # sampled translation (paracl.parts.translate)
    "roundtrip.backward_model": "translation",
    "train_sts_scorer.base_model": "cross_encoder",  # CrossEncoder STS scorer
    "train_paraphraser.base_model.en": "paraphraser",  # tagged generation (roundtrip.paraphraser)
    "train_paraphraser.base_model.ja": "paraphraser",
}


def is_hub_id(value: str) -> bool:
    """A hub id (`gpt2`, `org/name`), not a stand-in (`tiny-random:t5`) or a local directory."""
    local = value.startswith(("/", ".", "~", "models/", "data/")) or Path(value).is_dir()
    return not local and not value.startswith("tiny-random:")


def preset_models(preset: dict) -> list[tuple[str, str, str]]:
    """(params key, hub id, role) for every hub model the preset names, a method's own
    base_model included (an encoder)."""
    out = []
    for key, role in MODEL_KEYS.items():
        node: Any = preset
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, str) and is_hub_id(node):
            out.append((key, node, role))
    methods = (preset.get("train_contrastive") or {}).get("methods") or {}
    for name, entry in methods.items():
        base = entry.get("base_model") if isinstance(entry, dict) else None
        if isinstance(base, str) and is_hub_id(base):
            out.append((f"train_contrastive.methods.{name}.base_model", base, "encoder"))
    return out


@pytest.fixture
def params_copy(tmp_path) -> Path:
    path = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", path)
    return path


def test_paper_presets_exist():
    assert {p.stem for p in PAPER_PRESETS} >= {"paper-en", "paper-ja"}


# Derived presets, with the presets applied before them (as each one's comment says).
ON_TOP = {
    "effect-en-finetune": ["effect-en"],
    "effect-en-roundtrip": ["effect-en"],
    "effect-en-roundtrip-nli": ["effect-en", "effect-en-roundtrip"],
    "effect-en-roundtrip-ab": ["effect-en", "effect-en-roundtrip", "effect-en-roundtrip-nli"],
    "effect-en-theta": ["effect-en"],
    "effect-ja-finetune": ["effect-ja"],
    "effect-ja-ebsim": ["effect-ja"],
    "ebsim-en": ["effect-en"],
    "learning-curve-en": ["effect-en"],
    "learning-curve-en-all": ["effect-en", "learning-curve-en"],
}


@pytest.mark.parametrize("path", PRESET_FILES, ids=lambda p: p.stem)
def test_preset_merges_into_valid_params(path):
    merged = yaml.safe_load((REPO / "params.yaml").read_text())
    for name in [*ON_TOP.get(path.stem, []), path.stem]:  # each one's runs rewritten
        merged = presets.merge_preset(merged, presets.load_preset(name, REPO / "presets"))
    check_all(validate_all(merged))  # raises ParamsError naming the key


def _paper_runs(name: str) -> dict[str, dict]:
    """{method: its run's train_contrastive section} under presets/<name>.yaml."""
    from paracl.stages.train_contrastive.training.methods import method_spec, run_config

    merged = presets.merge_preset(
        yaml.safe_load((REPO / "params.yaml").read_text()),
        presets.load_preset(name, REPO / "presets"),
    )
    tc = merged["train_contrastive"]
    return {
        run["method"]: run_config(method_spec(run["method"], tc["methods"][run["method"]], run), tc)
        for run in tc["runs"].values()
    }


@pytest.mark.parametrize("name", ["paper-en", "paper-ja"])
def test_paper_presets_train_each_method_as_its_paper(name):
    """The shared keys are the PPDB paper's; each other paper's method sets its own."""
    cfg = _paper_runs(name)
    ppdb = {"lr": 5.0e-5, "batch_size": 64, "max_seq_length": 128, "epochs": 20, "patience": 3,
            "freeze_embeddings": False, "pooling": "cls_mlp", "selection": "dev_loss",
            "sts_dev_every": None, "max_grad_norm": None}  # PPDB §4.3, SimCSE's pooling  # fmt: skip

    def settings(method: str) -> dict:
        return {k: cfg[method][k] for k in ppdb}

    assert settings("ppdb") == settings("simcse_unsup") == ppdb
    trainer = {"selection": "sts_dev", "sts_dev_every": 125, "max_grad_norm": 1.0}  # SimCSE's
    jcse = ppdb | trainer | {"lr": 5.0e-5, "batch_size": 512, "max_seq_length": 32, "epochs": 5}
    assert settings("jcse") == jcse  # JCSE §4.4, README; stage one's 5 epochs
    simcse = ppdb | trainer | {"lr": 3.0e-5, "batch_size": 64, "max_seq_length": 32, "epochs": 1}
    for method in ("simcse_unsup_rt", "roundtrip", "roundtrip_greedy", "paraphraser_bleu20"):
        assert settings(method) == simcse, method  # round-trip §5.1: SimCSE's recipe
    assert settings("ams") == ppdb | {"freeze_embeddings": True, "epochs": 50, "selection": "none"}
    assert settings("ebsim") == ppdb | {"lr": 5.0e-6, "batch_size": 32}  # EBSIM §4.1
    if name == "paper-ja":
        assert settings("jcse_two_stage") == jcse | {"epochs": 2}  # run_sup.sh


def test_a_derived_preset_adds_or_removes_a_method_in_one_line(params_copy):
    """A method written once: its seeds' runs follow it in and out of params.yaml."""
    from paracl.schema import load_params

    presets.apply_preset(presets.load_preset("effect-en", REPO / "presets"), params_copy)
    runs = load_params(params_copy)["train_contrastive"]["runs"]
    assert {"ams_s1", "ams_s2", "ams_s3", "none"} <= set(runs) and "ams" not in runs
    sup = {"loss": "infonce", "input": "data/raw/jsnli/dev.tsv", "hard_negatives": True}
    changed = presets.apply_preset(
        {"train_contrastive": {"methods": {"ams": None, "simcse_sup": sup}}}, params_copy
    )
    assert ("train_contrastive.runs", list(runs), ANY_LIST) in changed
    runs = load_params(params_copy)["train_contrastive"]["runs"]
    assert not [r for r in runs if r.startswith("ams")]
    assert [runs[f"simcse_sup_s{s}"]["seed"] for s in (1, 2, 3)] == [1, 2, 3]


def test_paracl_expand_rewrites_stale_runs_and_refuses_bad_seeds(params_copy, capsys):
    from paracl.cli import main

    text = params_copy.read_text()
    stale = text.replace("  seeds: null ", "  seeds: [4, 5]")
    assert stale != text
    params_copy.write_text(stale)
    assert main(["expand", "--params", str(params_copy), "--dry-run"]) == 0
    assert "would be rewritten" in capsys.readouterr().out and params_copy.read_text() == stale
    assert main(["expand", "--params", str(params_copy)]) == 0
    assert "ppdb_s4" in capsys.readouterr().out
    runs = yaml.safe_load(params_copy.read_text())["train_contrastive"]["runs"]
    assert runs["ppdb_s5"] == {"method": "ppdb", "seed": 5, "input": "data/ppdb/pairs.parquet"}
    assert "`paracl expand`" in params_copy.read_text()  # the comments stay
    before = params_copy.read_bytes()
    params_copy.write_text(params_copy.read_text().replace("  seeds: [4, 5]", "  seeds: [4, 4]"))
    bad = params_copy.read_bytes()
    assert main(["expand", "--params", str(params_copy)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'train_contrastive.seeds' must list distinct seeds" in err
    assert params_copy.read_bytes() == bad != before  # nothing written


def test_deep_merge_merges_mappings_and_replaces_lists():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2}
    out = presets.deep_merge(base, {"a": {"y": [3]}, "c": {"z": 1}})
    assert out == {"a": {"x": 1, "y": [3]}, "b": 2, "c": {"z": 1}}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 2}  # input untouched


def test_null_over_a_mapping_removes_it_and_is_a_value_elsewhere(params_copy):
    base = {"methods": {"a": {"loss": "none"}, "b": {"loss": "infonce"}}, "addr": "x"}
    out = presets.deep_merge(base, {"methods": {"b": None}, "addr": None})
    assert out == {"methods": {"a": {"loss": "none"}}, "addr": None}
    assert presets.deep_merge(base, {"methods": {"absent": None}}) == base  # nothing to remove
    # in params.yaml itself: the ja preset drops the default round-trip methods
    changed = presets.apply_preset(presets.load_preset("ja", REPO / "presets"), params_copy)
    assert ("train_contrastive.methods.paraphraser_bleu20", ANY_MAPPING, None) in changed
    methods = yaml.safe_load(params_copy.read_text())["train_contrastive"]["methods"]
    assert "roundtrip" not in methods and "paraphraser_bleu20" not in methods and "ppdb" in methods
    assert "# trains nothing: the base as-is" in params_copy.read_text()  # comments kept


class _AnyMapping:
    def __eq__(self, other) -> bool:
        return isinstance(other, dict)


ANY_MAPPING = _AnyMapping()


class _AnyList:
    def __eq__(self, other) -> bool:
        return isinstance(other, list)


ANY_LIST = _AnyList()


def test_paper_en_sets_the_papers_models():
    merged = presets.deep_merge(
        yaml.safe_load((REPO / "params.yaml").read_text()),
        presets.load_preset(PAPER_PRESETS[0]),
    )
    validate_all(merged)
    assert merged["lang"] == "en"
    assert merged["train_contrastive"]["base_model"] == "bert-base-uncased"
    assert merged["rank_fluency"]["model"]["en"] == "gpt2"
    assert merged["train_sts_scorer"]["n_seeds"] == 10
    assert merged["evaluate"]["seeds"] == [1, 2, 3, 4, 5]
    # a mapping merges: the default methods stay, the preset's are added
    assert {"none", "ppdb", "roundtrip", "ams"} <= set(merged["train_contrastive"]["methods"])


def test_apply_keeps_comments_and_order(params_copy, capsys):
    before = params_copy.read_text()
    order = list(yaml.safe_load(before))
    changed = presets.apply_preset(presets.load_preset("paper-en", REPO / "presets"), params_copy)
    after = params_copy.read_text()
    assert changed and after != before
    for comment in ("# paracl parameters.", "# keep paraphrase rules with p(d|s) >= theta"):
        assert comment in after
    loaded = yaml.safe_load(after)
    assert list(loaded) == order
    assert loaded["train_paraphraser"]["base_model"]["en"] == "facebook/bart-base"
    assert "finetune_tasks: [esci_en, stsb, sickr" in after  # lists stay in flow style
    validate_all(loaded)
    # applying again changes nothing
    assert presets.apply_preset(presets.load_preset(PAPER_PRESETS[0]), params_copy) == []


@pytest.mark.parametrize(
    "bad, key",
    [({"theta": 1.7}, "'theta'"), ({"evaluate": {"sedes": [1]}}, "evaluate.sedes")],
)
def test_invalid_preset_is_refused_and_params_untouched(params_copy, bad, key):
    before = params_copy.read_bytes()
    with pytest.raises(ParamsError, match=key.replace(".", r"\.")):
        presets.apply_preset(bad, params_copy)
    assert params_copy.read_bytes() == before


def test_cli_dry_run_writes_nothing(params_copy, tmp_path, capsys):
    from paracl.cli import main

    before = params_copy.read_bytes()
    args = ["preset", "paper-ja", "--params", str(params_copy), "--presets-dir"]
    assert main([*args, str(REPO / "presets"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert 'lang: "en" -> "ja"' in out and "would change" in out
    assert params_copy.read_bytes() == before
    bad = tmp_path / "bad.yaml"
    bad.write_text("corrupt:\n  num_beams: 0\n")
    assert main(["preset", str(bad), "--params", str(params_copy)]) == 1
    assert "corrupt.num_beams" in capsys.readouterr().err
    assert params_copy.read_bytes() == before
    assert main([*args, str(REPO / "presets")]) == 0
    assert yaml.safe_load(params_copy.read_text())["lang"] == "ja"


# -- every architecture a preset names, on a tiny random model ------------------------------

NAMED = sorted(
    {
        (mid, role)
        for p in PRESET_FILES
        for _, mid, role in preset_models(yaml.safe_load(p.read_text()))
    }
)
USES = sorted({(ARCHITECTURES.get(mid, "?"), role) for mid, role in NAMED})


def test_every_named_model_has_a_known_architecture():
    assert NAMED, "the presets name no model"
    unknown = [mid for mid, _ in NAMED if mid not in ARCHITECTURES]
    assert not unknown, f"add these to paracl.ARCHITECTURES: {unknown}"


def _build(arch: str, request, tmp_path_factory) -> Path:
    from paracl.testing import tiny_models

    if arch in ("bert", "gpt2", "t5", "bart", "fsmt"):
        return request.getfixturevalue(f"tiny_{arch}")
    out = tmp_path_factory.mktemp(f"tiny-{arch}")
    if arch == "roberta":
        return tiny_models.build_tiny_roberta(out)
    if arch == "deberta-v2":
        return tiny_models.build_tiny_deberta_v2(out)
    if arch in ("llama", "gemma3_text"):
        return tiny_models.build_tiny_model(arch, out)
    if arch == "bert-japanese":  # the hub cache's tiny cl-tohoku/bert-base-japanese
        from paracl.testing.hub_cache import BUILDERS

        BUILDERS["cl-tohoku/bert-base-japanese"](out, 0)
        return out
    raise AssertionError(f"no tiny builder for {arch}")


@pytest.mark.parametrize("arch, role", USES, ids=[f"{a}-{r}" for a, r in USES])
def test_architecture_runs_its_code_path(arch, role, request, tmp_path_factory):
    path = _build(arch, request, tmp_path_factory)
    texts = ["a man is playing a guitar .", "猫はマットの上に座っていた。"]
    if role == "encoder":  # as train_contrastive builds it (a causal LM: pad token, dropout)
        from paracl.parts.encoder.build import build_encoder

        emb = build_encoder(path, "mean", dropout=0.1).encode(texts)
        assert emb.shape == (2, 32) and np.isfinite(emb).all()
    elif role == "causal_lm":
        from paracl.stages.rank_fluency import PerplexityScorer

        ppl = PerplexityScorer(path, batch_size=2).score(texts)
        assert np.isfinite(ppl).all() and (ppl > 1).all()
    elif role == "cross_encoder":
        from paracl.parts import sts_scorer

        scores = sts_scorer.predict(sts_scorer.load_scorer(path), [(texts[0], texts[1])] * 2)
        assert scores.shape == (2,) and ((scores >= 0) & (scores <= 1)).all()
        assert scores[0] == pytest.approx(scores[1])
    elif role == "t5_filler":
        import torch

        from paracl.parts.filler.generate import T5Filler

        filler = T5Filler(str(path), torch.device("cpu"))
        out = filler.fill(
            ["a man <extra_id_0> a guitar ."],
            [1],
            num_beams=2,
            num_return_sequences=2,
            max_fill_tokens=3,
        )
        assert len(out) == 1 and len(out[0]) == 2
    elif role == "translation":
        from paracl.parts.translate import Sampling, Translator

        out = Translator(path).translate(texts[:1], Sampling(20, 3.0), seed=0, max_new_tokens=6)
        assert len(out) == 1 and isinstance(out[0], str)
    elif role == "paraphraser":
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        from paracl.parts import paraphraser

        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
        paraphraser.add_tag_tokens(tok, model)
        outs, counts = paraphraser.generate(
            model, tok, texts[:1], "<SIM95><BLEU20>", num_beams=2, min_ratio=0.75, max_ratio=1.5,
            batch_size=1, max_length=64,
        )  # fmt: skip
        assert len(outs) == 1 and counts[0] >= 1
    else:
        raise AssertionError(f"no code path tested for role {role}")


def test_fine_tuned_methods_expand_to_their_runs_and_stay_in_step(params_copy, capsys):
    """evaluate.finetune_methods: a preset or `paracl expand` writes their runs (every
    seed) into evaluate.finetune_runs, which evaluate_finetune crosses with
    evaluate.finetune_tasks; a stale or wrong list is a one-line error naming the key."""
    from paracl.cli import main
    from paracl.core.params import ParamsError
    from paracl.schema import load_params

    presets.apply_preset(presets.load_preset("effect-en", REPO / "presets"), params_copy)
    ft = {"finetune_tasks": ["stsb"], "finetune_methods": ["none", "ppdb"]}
    changed = presets.apply_preset({"evaluate": ft}, params_copy)
    want = ["none", "ppdb_s1", "ppdb_s2", "ppdb_s3"]
    assert ("evaluate.finetune_runs", [], want) in changed
    assert load_params(params_copy)["evaluate"]["finetune_runs"] == want
    # removing a method drops its runs from the fine-tuned column too
    presets.apply_preset({"train_contrastive": {"methods": {"ams": None}}}, params_copy)
    assert load_params(params_copy)["evaluate"]["finetune_runs"] == want
    # a hand edit of the methods leaves the list stale: refused, then `paracl expand` fixes it
    text = params_copy.read_text()
    assert "finetune_methods: [none, ppdb]" in text
    params_copy.write_text(
        text.replace("finetune_methods: [none, ppdb]", "finetune_methods: [ppdb]")
    )
    with pytest.raises(ParamsError, match="'evaluate.finetune_runs' is out of date"):
        load_params(params_copy)
    assert main(["expand", "--params", str(params_copy)]) == 0
    assert "evaluate.finetune_runs" in capsys.readouterr().out
    assert load_params(params_copy)["evaluate"]["finetune_runs"] == want[1:]
    # null: every method's runs (the paper presets fine-tune every method)
    presets.apply_preset({"evaluate": {"finetune_methods": None}}, params_copy)
    every = load_params(params_copy)
    assert every["evaluate"]["finetune_runs"] == list(every["train_contrastive"]["runs"])
    for bad, key in (
        ({"finetune_methods": ["ppbd"]}, "'evaluate.finetune_methods': 'ppbd' is not a method"),
        ({"finetune_tasks": ["unsup_sts_en"]},
         r"'evaluate.finetune_tasks\[0\]': 'unsup_sts_en' is an embedding job"),
        ({"tasks": ["unsup_sts_en", "stsb"]},
         r"'evaluate.tasks\[1\]': 'stsb' is a fine-tuning task: list it in evaluate.finetune_tasks"),
    ):  # fmt: skip
        with pytest.raises(ParamsError, match=key):
            presets.apply_preset({"evaluate": bad}, params_copy)


def test_the_fine_tuned_column_is_a_second_evaluate_stage_over_those_runs(params_copy):
    """dvc.yaml: evaluate_finetune runs evaluate.finetune_runs × evaluate.finetune_tasks
    only, the summary depends on both lists, and no fine-tuning setting or code is a dep
    of the embedding stage: a change to them reruns no embedding score."""
    from stage_helpers import expand_stages

    from paracl.schema import load_params

    presets.apply_preset(presets.load_preset("effect-en", REPO / "presets"), params_copy)
    ft = {"finetune_tasks": ["stsb"], "finetune_methods": ["none", "ppdb"]}
    presets.apply_preset({"evaluate": ft}, params_copy)
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    stages = expand_stages(pipeline, load_params(params_copy))
    tuned = sorted(n for n in stages if n.startswith("evaluate_finetune@"))
    assert tuned == [
        f"evaluate_finetune@{r}-stsb" for r in ("none", "ppdb_s1", "ppdb_s2", "ppdb_s3")
    ]
    job, plain = stages["evaluate_finetune@ppdb_s2-stsb"], stages["evaluate@ppdb_s2-unsup_sts_en"]
    assert job["cmd"].split()[:2] == ["python", "stages/evaluate_finetune.py"]
    assert plain["cmd"].split()[:2] == ["python", "stages/evaluate.py"]
    assert "metrics/eval/ppdb_s2/stsb.json" in job["cmd"]
    tuning = {f"evaluate.{k}" for k in (
        "seeds", "baseline_seeds", "epochs", "lr", "batch_size", "patience", "max_train",
        "max_dev", "max_test", "train_layers", "length_grouping", "mini_batch_size",
        "max_seq_length")}  # fmt: skip
    assert tuning <= set(job["params"]) and not tuning & set(plain["params"])
    assert "precision" in job["params"] and "precision" in plain["params"]  # both encode under it
    # what the stage reads: the keys it indexes, and every field of the config it builds
    # from the section (core.configs.from_section; precision is the run's, not evaluate's)
    from dataclasses import fields

    from paracl.parts.finetune.tuning import FinetuneConfig

    source = (REPO / "src/paracl/stages/evaluate_finetune.py").read_text()
    read = set(re.findall(r'cfg(?:\["|\.get\(")(\w+)"', source))
    read |= {f.name for f in fields(FinetuneConfig)} - {"precision"}
    assert "mini_batch_size" in read and {f"evaluate.{k}" for k in read} <= set(job["params"])
    for code in ("src/paracl/stages/evaluate_finetune.py", "src/paracl/parts/finetune"):
        assert code in job["deps"] and code not in plain["deps"]
    assert {"evaluate.finetune_tasks", "evaluate.finetune_runs"} <= set(
        pipeline["stages"]["summary"]["params"]
    )


FINETUNED = {  # base preset -> (its fine-tuned column's preset, the methods, the tasks)
    "effect-en": ("effect-en-finetune", ("simcse_unsup", "ppdb", "jcse"), ("stsb", "sicke")),
    "effect-ja": (
        "effect-ja-finetune",
        ("simcse_unsup", "ppdb", "jcse", "simcse_sup", "jcse_two_stage"),
        ("jsts", "jsicke"),
    ),
    "effect-ja-ebsim": ("effect-ja-ebsim", ("ebsim", "ebsim_no_aa"), ("jsts", "jsicke")),
}


@pytest.mark.parametrize("base", sorted(FINETUNED))
def test_a_fine_tuned_column_adds_jobs_and_changes_no_unsupervised_evaluation(base, params_copy):
    """The fine-tuned column (none and the ranked methods, every seed × one similarity and
    one classification task) is added by its own preset and leaves each unsupervised
    evaluate stage's params as they were: nothing there reruns."""
    from stage_helpers import expand_stages, lookup

    from paracl.schema import load_params

    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())

    def evaluate_params() -> tuple[dict, dict]:
        params = load_params(params_copy)
        keys = pipeline["stages"]["evaluate"]["params"]
        return {k: lookup(params, k) for k in keys}, expand_stages(pipeline, params)

    column, methods, tasks = FINETUNED[base]
    for name in ON_TOP.get(base, []) + ([base] if column != base else []):
        presets.apply_preset(presets.load_preset(name, REPO / "presets"), params_copy)
    before, stages = evaluate_params()
    if column != base:
        assert not [n for n in stages if n.startswith("evaluate_finetune@")]
    presets.apply_preset(presets.load_preset(column, REPO / "presets"), params_copy)
    after, stages = evaluate_params()
    assert after == before
    tuned = {n.split("@")[1] for n in stages if n.startswith("evaluate_finetune@")}
    runs = ["none"] + [f"{m}_s{s}" for m in methods for s in (1, 2, 3)]
    assert tuned == {f"{r}-{t}" for r in runs for t in tasks}


# params.yaml as other tools write it: `dvc exp run -S` re-dumps it in its own layout, and
# a hand edit may use another indentation or flow style. Each must come out loadable.
LAYOUTS = {
    "safe_dump": lambda d: yaml.safe_dump(d, sort_keys=False, allow_unicode=True),
    "indent4": lambda d: yaml.safe_dump(d, indent=4, sort_keys=False, allow_unicode=True),
    "flow": lambda d: yaml.safe_dump(d, default_flow_style=True, width=10**6),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_preset_and_expand_leave_a_loadable_params_yaml_in_any_layout(layout, params_copy):
    """The one-line flow layout used to come out as two YAML documents (the untouched part
    kept byte for byte around a block dump): what is written is now read back first."""
    from paracl.cli import main
    from paracl.schema import load_params

    values = yaml.safe_load(params_copy.read_text())
    params_copy.write_text(LAYOUTS[layout](values))
    args = ["--params", str(params_copy)]
    assert main(["preset", "ja", *args, "--presets-dir", str(REPO / "presets")]) == 0
    want = presets.merge_preset(values, presets.load_preset("ja", REPO / "presets"))
    assert load_params(params_copy)["train_contrastive"] == validate_all(want)["train_contrastive"]
    edited = yaml.safe_load(params_copy.read_text())
    edited["train_contrastive"]["seeds"] = [4, 5]  # the runs are stale now
    params_copy.write_text(LAYOUTS[layout](edited))
    assert main(["expand", *args]) == 0
    assert "simcse_unsup_s5" in load_params(params_copy)["train_contrastive"]["runs"]


def test_a_rewrite_that_would_not_read_back_writes_nothing(params_copy, capsys):
    """ruamel (YAML 1.2) reads `on` as a string, PyYAML and so every stage (YAML 1.1) as
    true: a file whose rewrite would not load as written is refused, untouched."""
    from paracl.cli import main

    text = params_copy.read_text()
    odd = re.sub(r"(?m)^(  base_model: ).*$", r"\1on", text, count=1)
    assert odd != text
    params_copy.write_text(odd)
    args = ["preset", "ja", "--params", str(params_copy), "--presets-dir", str(REPO / "presets")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{params_copy}: " in err and "Traceback" not in err
    assert params_copy.read_text() == odd
    assert not list(params_copy.parent.glob(".params.yaml.*"))  # no temporary file left


def test_every_preset_says_its_purpose_and_time():
    """`paracl preset --list` reads each preset's `# purpose:` and `# time:` header lines."""
    for path in PRESET_FILES:
        purpose, time = presets.describe(path)
        # a time says where it comes from: a measurement or an estimate
        assert purpose and ("measured" in time or "estimated" in time), path


def test_the_round_trip_nli_presets_expand_to_their_jobs_in_dvc_yaml(params_copy, capsys):
    """paracl preset applies effect-en-roundtrip-nli and -ab on their bases; dvc.yaml's
    foreach then holds each paraphrase job, each run's training and its evaluation, which
    scores no run on SICK-R (the rows train on SICK)."""
    from stage_helpers import expand_stages

    from paracl.cli import main

    where = ["--params", str(params_copy), "--presets-dir", str(REPO / "presets")]
    for name in ("effect-en", "effect-en-roundtrip", "effect-en-roundtrip-nli"):
        assert main(["preset", name, *where]) == 0
    params = yaml.safe_load(params_copy.read_text())
    stages = expand_stages(yaml.safe_load((REPO / "dvc.yaml").read_text()), params)
    jobs = ("sick_roundtrip_greedy", "sick_bleu0_5", "sick_bleu20", "sick_bleu40")
    assert {f"paraphrase_pairs@{j}" for j in jobs} <= set(stages)
    runs = {f"{m}_s{s}" for m in ("simcse_sup_rt", "nli_roundtrip_greedy",
            "nli_paraphraser_bleu0_5", "nli_paraphraser_bleu20", "nli_paraphraser_bleu40")
            for s in (1, 2, 3)}  # fmt: skip
    assert set(params["train_contrastive"]["runs"]) == runs | {"none"}
    assert {f"evaluate@{r}-unsup_sts_en" for r in runs} <= set(stages)
    assert stages["train_contrastive@nli_paraphraser_bleu20_s2"]["deps"].count(
        "data/paraphrased/sick_bleu20.parquet") == 1  # fmt: skip
    assert params["evaluate"]["exclude_sts"] == ["SICKRelatedness"]
    assert "SICKRelatedness" not in params["nli_triplets"]["exclude_sts"]
    assert main(["preset", "effect-en-roundtrip-ab", *where]) == 0
    params = yaml.safe_load(params_copy.read_text())
    stages = expand_stages(yaml.safe_load((REPO / "dvc.yaml").read_text()), params)
    rows = run_groups_of(params)
    assert len(rows) == 1 + 13 + 1 and all(len(r) == 3 for m, r in rows.items() if m != "none")
    assert "evaluate@nli_ab_twice_s2-unsup_sts_en" in stages  # the control: AB for 2 epochs
    assert {f"paraphrase_pairs@{j}" for j in jobs[1:]} <= set(stages)  # Table 3's, reused
    assert "evaluate@nli_ab_apbp_bleu40_s3-unsup_sts_en" in stages


def run_groups_of(params: dict) -> dict[str, list[str]]:
    from paracl.stages.summary import run_groups

    return run_groups(params["train_contrastive"]["runs"])
