"""Tiny random models of real architectures, with a small tokenizer built locally.

No T5, BART or MT weights can be downloaded here, so tests exercise those code paths
on models of the same architecture with random weights and a byte-level BPE tokenizer
trained in well under a second on a fixed bilingual text (as transformers' own tests
do). Same arguments → same files: weights are drawn under a fixed seed.

    path = build_tiny_model("t5", tmp_path / "t5")   # then AutoModel*.from_pretrained(path)
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

# A fixed text the tokenizer is trained on: English, German and Japanese sentences.
TRAINING_TEXT = [
    "a man is playing a guitar on the stage .",
    "the cat sat on the mat in the afternoon sun .",
    "two dogs are running through the green field .",
    "a woman is slicing an onion in the kitchen .",
    "the city council approved the new budget on monday .",
    "he was born in london and studied physics at oxford .",
    "the river flows into the sea near the old harbour .",
    "ein mann spielt gitarre auf der bühne .",
    "die katze sitzt auf der matte in der sonne .",
    "猫は午後の日差しの中でマットの上に座っていた。",
    "男性がステージでギターを弾いている。",
    "二匹の犬が緑の野原を走っている。",
    "東京は日本の首都であり、人口が最も多い都市である。",
]

SPECIALS = {
    "gpt2": {"bos": "<|endoftext|>", "eos": "<|endoftext|>", "unk": "<|endoftext|>"},
    # as SmolLM2's and Gemma's: no pad token, and left padding (Gemma's default)
    "llama": {"bos": "<s>", "eos": "</s>", "unk": "<unk>"},
    "bert": {"cls": "[CLS]", "sep": "[SEP]", "pad": "[PAD]", "unk": "[UNK]", "mask": "[MASK]"},
    "bart": {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"},
    "t5": {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
    "marian": {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
}
N_SENTINELS = 20  # T5's <extra_id_0> … <extra_id_19>


def build_tokenizer(arch: str, vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer with `arch`'s special tokens and post-processing."""
    specials = SPECIALS[arch]
    ordered = list(dict.fromkeys(specials.values()))
    if arch == "t5":
        ordered += [f"<extra_id_{i}>" for i in range(N_SENTINELS)]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=ordered,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    if arch == "bert":
        cls, sep = specials["cls"], specials["sep"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}",
            pair=f"{cls} $A {sep} $B:1 {sep}:1",
            special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))],
        )
    elif arch == "bart":
        bos, eos = specials["bos"], specials["eos"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}",
            pair=f"{bos} $A {eos} {eos} $B {eos}",
            special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))],
        )
    elif arch in ("t5", "marian"):
        eos = specials["eos"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"$A {eos}",
            pair=f"$A {eos} $B {eos}",
            special_tokens=[(eos, tok.token_to_id(eos))],
        )
    kwargs = {f"{k}_token": v for k, v in specials.items()}
    if arch == "t5":
        kwargs["additional_special_tokens"] = [f"<extra_id_{i}>" for i in range(N_SENTINELS)]
    if arch == "gpt2":
        kwargs["pad_token"] = specials["eos"]
    if arch == "llama":
        kwargs["padding_side"] = "left"
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


# BART and Marian share one encoder-decoder layout; only their special-token ids differ.
SEQ2SEQ_SIZES = {
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "max_position_embeddings": 128,
}


def _config(arch: str, tok: PreTrainedTokenizerFast):
    """A small config of the real architecture, sized to the tokenizer."""
    from transformers import (
        BartConfig,
        BertConfig,
        GPT2Config,
        LlamaConfig,
        MarianConfig,
        T5Config,
    )

    vocab = len(tok)
    if arch == "llama":  # SmolLM2's architecture; attention_dropout 0 as in the real ones
        return LlamaConfig(
            vocab_size=vocab,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=128,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            tie_word_embeddings=True,
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
    if arch == "bert":
        return BertConfig(
            vocab_size=vocab,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
            pad_token_id=tok.pad_token_id,
        )
    if arch == "t5":
        return T5Config(
            vocab_size=vocab,
            d_model=32,
            d_kv=16,
            d_ff=64,
            num_layers=2,
            num_heads=2,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.pad_token_id,
        )
    if arch == "bart":
        return BartConfig(
            vocab_size=vocab,
            **SEQ2SEQ_SIZES,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.eos_token_id,
            forced_eos_token_id=tok.eos_token_id,
        )
    if arch == "marian":
        return MarianConfig(
            vocab_size=vocab,
            **SEQ2SEQ_SIZES,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.pad_token_id,
            forced_eos_token_id=tok.eos_token_id,
        )
    raise ValueError(f"no tiny builder for architecture {arch!r} (have: {', '.join(SPECIALS)})")


def build_tiny_model(arch: str, out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny random `arch` model and its tokenizer to out_dir; return the path.

    arch: gpt2 and llama (causal LMs), bert (encoder; saved as BertModel), t5, bart,
    marian (seq2seq, saved with their LM heads).
    """
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForSeq2SeqLM,
    )

    out_dir = Path(out_dir)
    tok = build_tokenizer(arch)
    config = _config(arch, tok)
    torch.manual_seed(seed)
    if arch in ("gpt2", "llama"):
        model = AutoModelForCausalLM.from_config(config)
    elif arch == "bert":
        model = AutoModel.from_config(config)
    else:
        model = AutoModelForSeq2SeqLM.from_config(config)
    model.eval()
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir


def build_tiny_fsmt(out_dir: str | Path, seed: int = 0) -> Path:
    """A tiny random FSMT (the facebook/wmt19-en-de architecture) with a char-level vocab.

    FSMTTokenizer is a slow Moses + fairseq-BPE tokenizer read from vocab/merges files,
    so this writes a vocabulary of the training text's characters (each also as a
    word-final `c</w>`) and no merges: every word is spelled out character by character.
    """
    import json

    from transformers import FSMTConfig, FSMTForConditionalGeneration, FSMTTokenizer

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    chars = sorted({c for line in TRAINING_TEXT for c in line if not c.isspace()})
    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + chars + [c + "</w>" for c in chars]
    vocab = {t: i for i, t in enumerate(tokens)}
    for name in ("vocab-src.json", "vocab-tgt.json"):
        (out_dir / name).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (out_dir / "merges.txt").write_text("", encoding="utf-8")
    tok = FSMTTokenizer(
        langs=["en", "de"],
        src_vocab_file=str(out_dir / "vocab-src.json"),
        tgt_vocab_file=str(out_dir / "vocab-tgt.json"),
        merges_file=str(out_dir / "merges.txt"),
    )
    config = FSMTConfig(
        langs=["en", "de"],
        src_vocab_size=len(vocab),
        tgt_vocab_size=len(vocab),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        forced_eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = FSMTForConditionalGeneration(config).eval()
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
