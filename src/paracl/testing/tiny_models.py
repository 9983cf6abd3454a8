"""Tiny random models of the architectures only tests use, on top of paracl.testing.standins.

The seq2seq stand-ins the pipeline itself builds offline (t5, bart, marian, fsmt) live in
paracl.testing.standins; this adds causal LMs (gpt2, llama), encoders (bert, roberta) and the
DeBERTa cross-encoder, with the same byte-level BPE tokenizer trained on the same fixed
text, so tests exercise every architecture without downloading weights. Same arguments
→ same files: weights are drawn under a fixed seed.

    path = build_tiny_model("gpt2", tmp_path / "gpt2")   # then AutoModel*.from_pretrained(path)
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import processors
from transformers import PreTrainedTokenizerFast

from paracl.testing import standins
from paracl.testing.standins import build_tiny_fsmt, train_bpe

__all__ = [
    "build_tiny_deberta_v2",
    "build_tiny_fsmt",
    "build_tiny_model",
    "build_tiny_rinna_roberta",
    "build_tiny_roberta",
    "build_tokenizer",
]

TEST_SPECIALS = {
    "gpt2": {"bos": "<|endoftext|>", "eos": "<|endoftext|>", "unk": "<|endoftext|>"},
    # as SmolLM2's and Gemma's: no pad token, and left padding (Gemma's default)
    "llama": {"bos": "<s>", "eos": "</s>", "unk": "<unk>"},
    "gemma3_text": {"bos": "<bos>", "eos": "<eos>", "pad": "<pad>", "unk": "<unk>"},
    "bert": {"cls": "[CLS]", "sep": "[SEP]", "pad": "[PAD]", "unk": "[UNK]", "mask": "[MASK]"},
}


# Chat templates like SmolLM2-135M-Instruct's (a default system prompt, ChatML roles) and
# gemma-3's (BOS, turns): sentence-transformers renders plain text through a tokenizer's
# template when it has one, so the stand-ins carry one as the real tokenizers do.
_CONTENT = (
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
)
CHAT_TEMPLATES = {
    "llama": (
        "{% for m in messages %}{% if loop.first and m['role'] != 'system' %}"
        "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by "
        "Hugging Face<|im_end|>\\n' }}{% endif %}{{ '<|im_start|>' + m['role'] + '\\n' }}"
        + _CONTENT
        + "{{ '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    ),
    "gemma3_text": (
        "{{ bos_token }}{% for m in messages %}"
        "{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\\n' }}"
        + _CONTENT
        + "{{ '<end_of_turn>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
    ),
}


def build_tokenizer(arch: str, vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer with `arch`'s special tokens and post-processing."""
    if arch not in TEST_SPECIALS:
        return standins.build_tokenizer(arch, vocab_size)
    specials = TEST_SPECIALS[arch]
    tok = train_bpe(list(dict.fromkeys(specials.values())), vocab_size)
    if arch == "bert":
        cls, sep = specials["cls"], specials["sep"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}",
            pair=f"{cls} $A {sep} $B:1 {sep}:1",
            special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))],
        )
    kwargs = {f"{k}_token": v for k, v in specials.items()}
    if arch == "gpt2":
        kwargs["pad_token"] = specials["eos"]
    if arch in ("llama", "gemma3_text"):
        kwargs["padding_side"] = "left"
        kwargs["chat_template"] = CHAT_TEMPLATES[arch]
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def _config(arch: str, tok: PreTrainedTokenizerFast):
    """A small config of the real architecture, sized to the tokenizer."""
    from transformers import BertConfig, GPT2Config, LlamaConfig

    vocab = len(tok)
    decoder = {  # SmolLM2's and gemma-3's shape, scaled down
        "vocab_size": vocab,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 128,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
    }
    if arch == "llama":  # SmolLM2's architecture; attention_dropout 0 as in the real ones
        return LlamaConfig(**decoder, tie_word_embeddings=True)
    if arch == "gemma3_text":  # gemma-3-270m's architecture (sliding and global attention)
        from transformers import Gemma3TextConfig

        return Gemma3TextConfig(
            **decoder, head_dim=16, sliding_window=16, pad_token_id=tok.pad_token_id
        )
    if arch == "gpt2":
        return GPT2Config(
            vocab_size=vocab,
            n_positions=128,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
        )
    return BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=tok.pad_token_id,
    )


def build_tiny_model(arch: str, out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny random `arch` model and its tokenizer to out_dir; return the path.

    arch: gpt2, llama and gemma3_text (causal LMs), bert (encoder; saved as BertModel), and the
    stand-ins' t5, bart, marian (seq2seq, saved with their LM heads).
    """
    from transformers import AutoModel, AutoModelForCausalLM

    if arch not in TEST_SPECIALS:
        return standins.build_tiny_model(arch, out_dir, seed=seed)
    out_dir = Path(out_dir)
    tok = build_tokenizer(arch)
    config = _config(arch, tok)
    torch.manual_seed(seed)
    if arch == "bert":
        model = AutoModel.from_config(config)
    else:
        model = AutoModelForCausalLM.from_config(config)
    model.eval()
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


def build_tiny_roberta(out_dir: str | Path, seed: int = 0) -> Path:
    """A tiny random RoBERTa encoder (rinna/japanese-roberta-base's architecture).

    RoBERTa's specials and `<s> A </s>` template are BART's, so it reuses that tokenizer.
    Positions start after the padding index, hence max_position_embeddings = 128 + 2.
    """
    from transformers import RobertaConfig, RobertaModel

    out_dir = Path(out_dir)
    tok = build_tokenizer("bart")
    config = RobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    RobertaModel(config).eval().save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


RINNA_SPECIALS = ["<unk>", "<s>", "</s>", "[PAD]", "[CLS]", "[SEP]", "[MASK]"]  # its ids 0-6


def build_tiny_rinna_roberta(out_dir: str | Path, seed: int = 0) -> Path:
    """A tiny random RoBERTa saved as rinna/japanese-roberta-base is: a masked LM whose
    tokenizer is a T5Tokenizer (SentencePiece Unigram trained on lower-cased text, rinna's
    special tokens and ids: <unk> 0, <s> 1, </s> 2, [PAD] 3, [CLS] 4), `do_lower_case: true`
    in its config (which transformers no longer reads), and positions that its card counts
    from 0 (the weights do not show that: paracl.core.models.convert_rinna_roberta shifts them)."""
    import json

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import RobertaConfig, RobertaForMaskedLM, T5Tokenizer

    out_dir = Path(out_dir)
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=160, special_tokens=RINNA_SPECIALS, unk_token="<unk>", show_progress=False
    )
    unigram.train_from_iterator([t.lower() for t in standins.TRAINING_TEXT], trainer=trainer)
    vocab = json.loads(standins._canonical_unigram(unigram, len(RINNA_SPECIALS)).to_str())
    pieces = [(p, s) for p, s in vocab["model"]["vocab"]]
    names = ("unk", "bos", "eos", "pad", "cls", "sep", "mask")
    specials = {f"{n}_token": t for n, t in zip(names, RINNA_SPECIALS, strict=True)}
    tok = T5Tokenizer(vocab=pieces, extra_ids=0, do_lower_case=True, **specials)
    config = RobertaConfig(
        vocab_size=len(pieces),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64 + 4,  # rinna: 514 (positions 0-513 in its usage)
        pad_token_id=3,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    RobertaForMaskedLM(config).eval().save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


def build_tiny_deberta_v2(out_dir: str | Path, seed: int = 0, num_labels: int = 1) -> Path:
    """A tiny random DeBERTa-v2/v3 (microsoft/deberta-v3-large's architecture) with a
    regression head, saved as a sequence-classification model: the form the STS
    cross-encoder takes. Uses the BERT-style `[CLS] A [SEP] B [SEP]` tokenizer.
    """
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    out_dir = Path(out_dir)
    tok = build_tokenizer("bert")
    config = DebertaV2Config(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        relative_attention=True,
        position_buckets=32,
        pos_att_type=["p2c", "c2p"],
        pad_token_id=tok.pad_token_id,
        num_labels=num_labels,
    )
    torch.manual_seed(seed)
    DebertaV2ForSequenceClassification(config).eval().save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir
