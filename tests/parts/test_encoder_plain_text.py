"""A sentence is embedded as the sentence: sentence-transformers renders plain text through
a tokenizer's chat template when it has one (SmolLM2-Instruct's adds a system prompt and
role markers), and the encoders here must not. The tiny Llama and Gemma carry templates
like the real ones (paracl.testing.tiny_models.CHAT_TEMPLATES)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from transformers import AutoModel, AutoTokenizer

from paracl.core.params import ParamsError
from paracl.parts.encoder.build import build_encoder, save_encoder
from paracl.parts.encoder.embed import load_encoder
from paracl.parts.encoder.forward import embed
from paracl.testing.tiny_models import build_tiny_model

CPU = torch.device("cpu")
TEXT = "a girl is styling her hair ."
TEXTS = [TEXT, "the cat sat on the mat in the afternoon sun .", "two dogs run ."]

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models on shared cores


@pytest.fixture(scope="module", params=["llama", "gemma3_text"])
def causal_lm(request, tiny_llama, tmp_path_factory) -> Path:
    """SmolLM2's architecture and template, and gemma-3's."""
    if request.param == "llama":
        return tiny_llama
    return build_tiny_model("gemma3_text", tmp_path_factory.mktemp("tiny-gemma"))


def _fed_ids(model: SentenceTransformer, texts: list[str]) -> list[list[int]]:
    """The token ids the Transformer module gets when `model.encode(texts)` runs (each
    text's real tokens, without padding). It calls the model's forward method itself, so
    the hook sits on the module, not on the transformers model."""
    seen = []

    def hook(module, args):
        ids, mask = args[0]["input_ids"], args[0]["attention_mask"]
        seen.extend(row[m.bool()].tolist() for row, m in zip(ids, mask, strict=True))

    handle = model[0].register_forward_pre_hook(hook)
    try:
        model.encode(texts, batch_size=len(texts))
    finally:
        handle.remove()
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # encode sorts by length
    return [seen[order.index(i)] for i in range(len(texts))]


def test_the_encoder_feeds_the_model_the_tokenized_sentence(causal_lm):
    tok = AutoTokenizer.from_pretrained(causal_lm)
    assert tok.chat_template  # as SmolLM2-Instruct's and gemma's tokenizers
    plain = [tok(t)["input_ids"] for t in TEXTS]
    transformer = Transformer(str(causal_lm))
    stock = SentenceTransformer(
        modules=[transformer, Pooling(transformer.get_embedding_dimension())]
    )
    stock.tokenizer.pad_token = stock.tokenizer.eos_token
    assert _fed_ids(stock, [TEXT])[0] != plain[0]  # what sentence-transformers does by itself
    model = build_encoder(causal_lm, "mean", None)
    assert _fed_ids(model, TEXTS) == plain
    model.train()
    features = model.preprocess(TEXTS)  # training's path (training.encoder.embed)
    rows = zip(features["input_ids"], features["attention_mask"], strict=True)
    assert [r[m.bool()].tolist() for r, m in rows] == plain


def _plain_mean_pooling(path: Path, texts: list[str]) -> np.ndarray:
    """Mean pooling with transformers alone: AutoModel + the tokenizer + a masked mean."""
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            enc = tok(text, return_tensors="pt")
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            out.append(((hidden * mask).sum(1) / mask.sum(1))[0].numpy())
    return np.stack(out)


def test_the_saved_encoder_is_plain_mean_pooling(causal_lm, tmp_path):
    save_encoder(build_encoder(causal_lm, "mean", None), tmp_path / "enc")
    config = json.loads((tmp_path / "enc" / "sentence_bert_config.json").read_text())
    assert set(config["modality_config"]) == {"text"}  # what reloading reads
    assert AutoTokenizer.from_pretrained(tmp_path / "enc").chat_template  # kept, not used
    loaded = SentenceTransformer(str(tmp_path / "enc"), device="cpu")
    got = loaded.encode(TEXTS, batch_size=len(TEXTS))  # padded together
    np.testing.assert_allclose(got, _plain_mean_pooling(tmp_path / "enc", TEXTS), atol=1e-5)


def test_evaluation_reads_plain_text_from_a_folder_saved_without_it(tiny_llama, tmp_path):
    transformer = Transformer(str(tiny_llama))
    old = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension())])
    old.tokenizer.pad_token = old.tokenizer.eos_token
    old.save(str(tmp_path / "old"), create_model_card=False)  # saved with the template on
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    assert _fed_ids(load_encoder(tmp_path / "old", CPU), TEXTS) == [
        tok(t)["input_ids"] for t in TEXTS
    ]


def test_a_prompt_is_the_default_prompt_in_training_dev_and_the_saved_encoder(tiny_llama, tmp_path):
    prompt = "Represent the meaning: "
    model = build_encoder(tiny_llama, "mean", None, prompt=prompt).eval()
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    assert _fed_ids(model, TEXTS) == [tok(prompt + t)["input_ids"] for t in TEXTS]
    with torch.no_grad():
        trained_on = embed(model, TEXTS).numpy()  # what the loss sees
    np.testing.assert_allclose(trained_on, model.encode(TEXTS), atol=1e-5)  # the dev score's
    save_encoder(model, tmp_path / "enc")
    loaded = SentenceTransformer(str(tmp_path / "enc"), device="cpu")
    assert loaded.prompts[loaded.default_prompt_name] == prompt
    np.testing.assert_allclose(loaded.encode(TEXTS), trained_on, atol=1e-5)
    assert _fed_ids(build_encoder(tiny_llama, "mean", None), [TEXT]) == [tok(TEXT)["input_ids"]]


def test_a_template_with_the_sentence_inside_is_refused(tiny_llama):
    with pytest.raises(ParamsError, match="train_contrastive.prompt"):
        build_encoder(tiny_llama, "last", None, prompt='This sentence : "{}" means in one word:"')


@pytest.mark.slow
@pytest.mark.parametrize("model_id", ["HuggingFaceTB/SmolLM2-135M-Instruct", "google/gemma-3-270m"])
def test_the_packaged_causal_lms_embed_the_tokenized_sentence(model_id):
    """The real tokenizers (converted once from the packaged GGUF files): SmolLM2's carries
    its chat template; either way the encoder feeds the model tokenizer(text)."""
    from paracl.core.models import ModelNotFoundError, resolve_model

    try:
        path = resolve_model(model_id).path
    except ModelNotFoundError as err:
        pytest.skip(str(err))
    tok = AutoTokenizer.from_pretrained(path)
    assert _fed_ids(build_encoder(path, "mean", None), [TEXT]) == [tok(TEXT)["input_ids"]]
