"""rinna/japanese-roberta-base is used as its model card says: lower-cased text, "[CLS]"
before it, position_ids from 0 (and unknown characters to <unk>, which transformers 5
maps to rinna's </s>). paracl.core.models converts it once into a standard RoBERTa that does
all of this itself; checked on a tiny RoBERTa saved as rinna's is (tiny_models)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

from paracl.core import models
from paracl.core.models import resolve_model
from paracl.parts.encoder.build import build_encoder, save_encoder
from paracl.testing.tiny_models import build_tiny_rinna_roberta

RINNA = "rinna/japanese-roberta-base"
TEXTS = ["The Cat sat on the Mat .", "a man is playing a guitar on the stage ."]

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models on shared cores


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return build_tiny_rinna_roberta(tmp_path_factory.mktemp("rinna"))


@pytest.fixture
def converted(raw, tmp_path, monkeypatch):
    """rinna's id resolved with its raw copy in $PARACL_MODELS_DIR."""
    (tmp_path / "models" / "rinna").mkdir(parents=True)
    (tmp_path / "models" / RINNA).symlink_to(raw)
    monkeypatch.setenv("PARACL_MODELS_DIR", str(tmp_path / "models"))
    return resolve_model(RINNA, home=tmp_path / "home")


def _card(raw, text: str) -> tuple[list[int], torch.Tensor]:
    """The model card's recipe on the raw files: lower-case (do_lower_case), "[CLS]" + text,
    position_ids = 0, 1, ...; (token ids, last hidden states)."""
    ids = AutoTokenizer.from_pretrained(raw)("[CLS]" + text.lower())["input_ids"]
    model = AutoModel.from_pretrained(raw).eval()
    with torch.inference_mode():
        x = torch.tensor([ids])
        return ids, model(x, position_ids=torch.arange(len(ids))[None]).last_hidden_state[0]


def test_the_converted_copy_embeds_as_the_card_says(raw, converted):
    assert converted.source == "converted" and "model card" in converted.note
    tok = AutoTokenizer.from_pretrained(converted.path)
    model = AutoModel.from_pretrained(converted.path).eval()
    plain = AutoModel.from_pretrained(raw).eval()
    for text in TEXTS:
        ids, hidden = _card(raw, text)
        assert tok(text)["input_ids"] == ids  # [CLS], lower-cased, </s>
        with torch.inference_mode():
            got = model(torch.tensor([ids])).last_hidden_state[0]  # default position ids
            unfixed = plain(torch.tensor([ids])).last_hidden_state[0]
        torch.testing.assert_close(got, hidden)
        assert not torch.allclose(unfixed, hidden, atol=1e-3)  # the positions matter
    pair = tok(TEXTS[0], TEXTS[1])["input_ids"]
    assert pair[0] == tok.cls_token_id and pair.count(tok.eos_token_id) == 2  # fine-tuning
    assert tok("a § b")["input_ids"][-3] == tok.unk_token_id  # not rinna's </s> (id 2)
    assert tok.model_max_length == 64  # 68 positions less padding_idx + 1


def test_the_saved_encoder_is_the_card_mean_pooled(raw, converted, tmp_path):
    save_encoder(build_encoder(converted.path, "mean", None), tmp_path / "enc")
    loaded = SentenceTransformer(str(tmp_path / "enc"), device="cpu")
    got = loaded.encode(TEXTS, batch_size=len(TEXTS))  # padded together
    want = np.stack([_card(raw, t)[1].mean(0).numpy() for t in TEXTS])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_it_converts_once(converted, monkeypatch):
    def fail(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(models, "convert_rinna_roberta", fail)
    home = converted.path.parents[1]
    assert resolve_model(RINNA, home=home) == converted  # found through $PARACL_MODELS_DIR
    monkeypatch.delenv("PARACL_MODELS_DIR")
    assert resolve_model(RINNA, home=home) == converted  # found under models/hub
