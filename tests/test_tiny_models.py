"""The tiny-model builder gives loadable, deterministic models of each architecture."""

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl.testing.tiny_models import build_tiny_model


def test_t5_tokenizer_has_unique_sentinels(tiny_t5):
    tok = AutoTokenizer.from_pretrained(tiny_t5)
    ids = [tok.convert_tokens_to_ids(f"<extra_id_{i}>") for i in range(5)]
    assert len(set(ids)) == 5 and tok.unk_token_id not in ids
    encoded = tok("a <extra_id_0> sat on <extra_id_1> .").input_ids
    assert ids[0] in encoded and ids[1] in encoded


def test_seq2seq_generates_and_builder_is_deterministic(tmp_path, tiny_bart):
    again = build_tiny_model("bart", tmp_path / "b")
    a = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    b = AutoModelForSeq2SeqLM.from_pretrained(again)
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    out = a.generate(**tok(["the cat sat ."], return_tensors="pt"), max_new_tokens=4)
    assert out.shape[0] == 1


def test_bert_tokenizer_encodes_pairs_with_cls_and_sep(tiny_bert):
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    enc = tok("a man .", "猫 。")
    assert enc.input_ids[0] == tok.cls_token_id
    assert enc.input_ids.count(tok.sep_token_id) == 2
