"""Tiny random stand-ins for the seq2seq models whose weights this project cannot get offline.

MT (Marian, FSMT), BART and T5 weights come only from the Hugging Face hub, which offline
runs cannot reach, and no package on the registries this project can use ships any. The
default params run real packaged causal LMs in those roles instead (gemma-3-270m, SmolLM2;
`"stand_in": false, "paper_model": false` in their metrics); the tests name
`tiny-random:<arch>` ids where a stage needs a seq2seq model, built here on the fly: models
of the real architecture with random weights under a fixed seed. They exercise every code
path but produce noise (the T5 one is then trained on the corpus by adapt_filler), so every
metric of a run that used one says `"stand_in": true`.

Production code never imports this module: `register()` hands `describe`, `build` and
`build_on_texts` to paracl.core.models' one hook (`register_builder`), and the stages ask
that module (`describe_model`, `local_path`, `model_dir`, `build_on_texts`); any id no
builder claims goes through paracl.core.models.resolve_model.

Two families share the tokenizer and config helpers below:

- round trip (`describe`, `build`): tiny marian / fsmt / bart / t5 with a byte-level BPE
  tokenizer trained, in well under a second, on a fixed bilingual text (as transformers'
  own tests do);
- negatives (`build_standin_t5`): a larger T5 with a Unigram tokenizer trained on the
  corpus itself and T5's 100 `<extra_id_N>` sentinels.

Same arguments → same bytes: weights are drawn under a fixed seed and the tokenizers are
trained on fixed text (the Unigram one put in a canonical order). Sharded stages load the
model inside each worker (paracl.core.models.local_path), never on the driver, so each
worker process builds the stand-in itself, and every worker holds the same weights; the
tests check it byte for byte. paracl.testing.tiny_models adds the architectures only tests
use.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from paracl.core.models import Builder, register_builder

if TYPE_CHECKING:  # torch, tokenizers and transformers load only when a stand-in is built
    from tokenizers import Tokenizer
    from transformers import PretrainedConfig, PreTrainedTokenizerFast

log = logging.getLogger(__name__)

PREFIX = "tiny-random:"
STAND_INS = ("marian", "fsmt", "bart", "t5")  # the round-trip stand-ins
STANDIN_ID = "tiny-random:t5"  # the negatives' stand-in for t5-base
T5_SENTINELS = 100  # as t5-base
TINY_SENTINELS = 20  # the tiny T5's <extra_id_0> … <extra_id_19>

# A fixed text the tiny tokenizers are trained on: English, German and Japanese sentences.
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
    "bart": {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"},
    "t5": {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
    "marian": {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
}

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


# --- shared by both families -------------------------------------------------------------


def _sentinels(n: int) -> list[str]:
    """T5's first n sentinels, named as paracl.parts.filler.masking.sentinel names them (not
    imported from there: the round-trip stages would then depend on paracl.parts.filler)."""
    return [f"<extra_id_{i}>" for i in range(n)]


def eos_template(tok: Tokenizer, eos: str = "</s>"):
    """T5's and Marian's post-processing: `A </s>`, pairs `A </s> B </s>`."""
    from tokenizers import processors

    return processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A {eos} $B {eos}", special_tokens=[(eos, tok.token_to_id(eos))]
    )


def _t5_config(tok: PreTrainedTokenizerFast, **sizes):
    """A T5Config sized to the tokenizer, decoding from <pad> as T5 does."""
    from transformers import T5Config

    return T5Config(
        vocab_size=len(tok),
        **sizes,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id,
    )


def _save_seq2seq(config: PretrainedConfig, tok, out_dir: Path, seed: int):
    """Draw the model's weights under `seed` and save it with its tokenizer; return it."""
    import torch
    from transformers import AutoModelForSeq2SeqLM

    torch.manual_seed(seed)
    model = AutoModelForSeq2SeqLM.from_config(config).eval()
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return model


# --- the tiny round-trip models ----------------------------------------------------------


def train_bpe(special_tokens: list[str], vocab_size: int = 400) -> Tokenizer:
    """A byte-level BPE tokenizer trained on TRAINING_TEXT, special tokens first."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAINING_TEXT, trainer=trainer)
    return tok


def build_tokenizer(arch: str, vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer with `arch`'s (bart, t5, marian) specials and templates."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    if arch not in SPECIALS:
        raise ValueError(f"no tiny tokenizer for {arch!r} (have: {', '.join(SPECIALS)})")
    specials = SPECIALS[arch]
    ordered = list(dict.fromkeys(specials.values()))
    if arch == "t5":
        ordered += _sentinels(TINY_SENTINELS)
    tok = train_bpe(ordered, vocab_size)
    if arch == "bart":
        bos, eos = specials["bos"], specials["eos"]
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}",
            pair=f"{bos} $A {eos} {eos} $B {eos}",
            special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))],
        )
    else:
        tok.post_processor = eos_template(tok, specials["eos"])
    kwargs = {f"{k}_token": v for k, v in specials.items()}
    if arch == "t5":
        kwargs["additional_special_tokens"] = _sentinels(TINY_SENTINELS)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def _seq2seq_config(arch: str, tok: PreTrainedTokenizerFast):
    """A small config of the real architecture, sized to the tokenizer."""
    from transformers import BartConfig, MarianConfig

    if arch == "t5":
        return _t5_config(tok, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2)
    if arch == "bart":
        return BartConfig(
            vocab_size=len(tok),
            **SEQ2SEQ_SIZES,
            pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.eos_token_id,
            forced_eos_token_id=tok.eos_token_id,
        )
    if arch == "marian":
        return MarianConfig(
            vocab_size=len(tok),
            **SEQ2SEQ_SIZES,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
            decoder_start_token_id=tok.pad_token_id,
            forced_eos_token_id=tok.eos_token_id,
        )
    raise ValueError(f"no tiny builder for architecture {arch!r} (have: {', '.join(SPECIALS)})")


def build_tiny_model(arch: str, out_dir: str | Path, seed: int = 0) -> Path:
    """Save a tiny random seq2seq `arch` (t5, bart, marian) with its LM head and tokenizer
    to out_dir; return the path."""
    out_dir = Path(out_dir)
    tok = build_tokenizer(arch)
    _save_seq2seq(_seq2seq_config(arch, tok), tok, out_dir, seed)
    return out_dir


def build_tiny_fsmt(out_dir: str | Path, seed: int = 0) -> Path:
    """A tiny random FSMT (the facebook/wmt19-en-de architecture) with a char-level vocab.

    FSMTTokenizer is a slow Moses + fairseq-BPE tokenizer read from vocab/merges files,
    so this writes a vocabulary of the training text's characters (each also as a
    word-final `c</w>`) and no merges: every word is spelled out character by character.
    """
    import torch
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
        **{**SEQ2SEQ_SIZES, "max_position_embeddings": 256},
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


# --- model ids: the builder paracl.core.models calls -----------------------------------


def _arch(model_id: str) -> str:
    arch = model_id[len(PREFIX) :]
    if arch not in STAND_INS:
        raise ValueError(
            f"model id {model_id!r}: no tiny stand-in for {arch!r} (have: {', '.join(STAND_INS)})"
        )
    return arch


def build(model_id: str, out_dir: Path, seed: int = 0) -> Path:
    """Save the stand-in `model_id` (tiny-random:<arch>) under out_dir/<arch>; return it."""
    arch = _arch(model_id)
    if arch == "fsmt":
        return build_tiny_fsmt(out_dir / arch, seed=seed)
    return build_tiny_model(arch, out_dir / arch, seed=seed)


def describe(model_id: str, seed: int = 0) -> dict:
    """The description that goes into metrics/metadata, without loading anything."""
    arch = _arch(model_id)
    return {
        "id": model_id,
        # the module's old name, kept so that metrics stay byte-identical
        "source": "built: paracl.testing.tiny_models",
        "note": f"STAND-IN: a tiny {arch} with random weights (seed {seed}); outputs are noise",
        "stand_in": True,
    }


def register() -> None:
    """Let the stages run `tiny-random:*` ids in this process (tests/conftest.py calls it;
    its Ray fixture makes every worker call it too)."""
    register_builder(PREFIX, Builder(describe, build, build_on_texts))


# --- the negatives' T5, with a tokenizer of the corpus -----------------------------------


def _canonical_unigram(tok: Tokenizer, n_special: int) -> Tokenizer:
    """The trained Unigram tokenizer with its pieces in an order fixed by the corpus alone.

    The `tokenizers` Unigram trainer walks hash maps: its scores differ between runs in the
    last bits, and the characters it appends at the end get scores stepping down by 1e-4 in
    hash order, so piece order (token ids) and scores change from run to run and nothing
    downstream is byte-identical. Here scores are rounded, then every run of scores less
    than 1e-3 apart gets its pieces in alphabetical order with the same scores, sorted, as
    before. The special tokens stay first (their ids must not move).
    """
    from tokenizers import Tokenizer

    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    pieces = sorted(([p, round(s, 8)] for p, s in vocab[n_special:]), key=lambda v: -v[1])
    groups: list[list[list]] = []
    for piece in pieces:
        if groups and groups[-1][-1][1] - piece[1] < 1e-3:
            groups[-1].append(piece)
        else:
            groups.append([piece])
    ordered = [
        [p, s]
        for g in groups
        for p, s in zip(
            sorted(p for p, _ in g), sorted((s for _, s in g), reverse=True), strict=True
        )
    ]
    spec["model"]["vocab"] = vocab[:n_special] + ordered
    return Tokenizer.from_str(json.dumps(spec))


def _common_chars_only(texts: Sequence[str], max_chars: int) -> tuple[list[str], int]:
    """The texts without their rarest characters when there are more than `max_chars`.

    A Unigram vocabulary must hold every character it was trained on, and a Japanese
    corpus has thousands (3,122 distinct in 10,000 JaQuAD sentences): the trainer fails
    ("The vocabulary is not large enough to contain all chars") when they outnumber the
    pieces. The most frequent characters (ties by code point) are kept, leaving a quarter
    of the pieces for longer ones; the rest are left out of training, so the tokenizer
    maps them to <unk>. Returns the texts and how many characters were left out.
    """
    texts = list(texts)
    counts = Counter(ch for text in texts for ch in text)
    if len(counts) <= max_chars:
        return texts, 0
    keep = {ch for ch, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:max_chars]}
    log.info("stand-in tokenizer: %d of %d characters kept", len(keep), len(counts))
    return ["".join(ch for ch in text if ch in keep) for text in texts], len(counts) - len(keep)


def build_standin_t5(
    texts: Sequence[str],
    out_dir: str | Path,
    seed: int = 0,
    vocab_size: int = 4000,
    d_model: int = 128,
    num_layers: int = 2,
) -> dict:
    """Save a random T5 + a Unigram tokenizer trained on `texts` to out_dir; return its
    description. It knows nothing until adapt_filler trains it by span-corruption denoising."""
    fast, n_rare = _t5_tokenizer(texts, vocab_size)
    config = _t5_config(
        fast,
        d_model=d_model,
        d_kv=d_model // 4,
        d_ff=4 * d_model,
        num_layers=num_layers,
        num_heads=4,
        feed_forward_proj="gated-gelu",  # as T5 v1.1
        tie_word_embeddings=False,
        # T5's default init (factor 1.0) gives the untied LM head logits of std ~sqrt(d_model):
        # a first loss of ~55 nats. With 0.2 the dev loss after 100 denoising steps was 4.8
        # vs 9.6 (0.05: 6.5, 0.01: 6.9), measured on the default corpus sample.
        initializer_factor=0.2,
    )
    model = _save_seq2seq(config, fast, Path(out_dir), seed)
    n_params = sum(p.numel() for p in model.parameters())
    return {
        "id": STANDIN_ID,
        "source": "built",
        "note": (
            f"stand-in for t5-base: random T5 v1.1-style, d_model={d_model}, "
            f"{num_layers}+{num_layers} layers, {n_params / 1e6:.1f}M parameters, "
            f"Unigram tokenizer ({len(fast)} pieces) trained on the corpus"
            + (f"; {n_rare} rare characters outside its alphabet map to <unk>" if n_rare else "")
        ),
    }


def _t5_tokenizer(texts: Sequence[str], vocab_size: int) -> tuple[PreTrainedTokenizerFast, int]:
    """A T5-style Unigram tokenizer (with its sentinels) trained on `texts`, and how many
    rare characters it leaves out of its alphabet (they map to <unk>)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "</s>", "<unk>"]
    sentinels = _sentinels(T5_SENTINELS)
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        special_tokens=specials + sentinels,
        unk_token="<unk>",
        show_progress=False,
    )
    texts, n_rare = _common_chars_only(
        texts, (vocab_size - len(specials) - len(sentinels)) * 3 // 4
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok = _canonical_unigram(tok, len(specials) + len(sentinels))
    tok.post_processor = eos_template(tok)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        additional_special_tokens=sentinels,
    )
    return fast, n_rare


def build_on_texts(model_id: str, texts: Sequence[str], out_dir: Path, seed: int, **sizes) -> dict:
    """build_standin_t5 for any stand-in id (adapt_filler builds the negatives' T5 whatever
    `tiny-random:<arch>` it is given)."""
    return build_standin_t5(texts, out_dir, seed=seed, **sizes)
