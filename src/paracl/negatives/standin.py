"""The offline stand-in for t5-base: a small random T5 with a tokenizer of the corpus.

No T5 weights can be had on a machine without hub access, and no PyPI package ships
any. The model id `tiny-random:t5` builds, instead, a small T5 of the real architecture
(random weights, seeded) and a SentencePiece-style Unigram tokenizer trained on the
corpus itself, with T5's 100 `<extra_id_N>` sentinels. It knows nothing until the
adapt_t5 stage trains it by span-corruption denoising on the corpus; its negatives are
then real fills by a real (small) T5, not paper-quality ones. Metrics flag it
(`stand_in: true`).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch

from paracl.negatives.masking import sentinel

log = logging.getLogger(__name__)

STANDIN_ID = "tiny-random:t5"
N_SENTINELS = 100  # as t5-base


def is_standin(model_id: str) -> bool:
    return model_id.startswith("tiny-random:")


def _canonical_unigram(tok, n_special: int):
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
    """Save a random T5 + corpus tokenizer to out_dir; return its description."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import AutoModelForSeq2SeqLM, PreTrainedTokenizerFast, T5Config

    specials = ["<pad>", "</s>", "<unk>"]
    sentinels = [sentinel(i) for i in range(N_SENTINELS)]
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
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        additional_special_tokens=sentinels,
    )
    config = T5Config(
        vocab_size=len(fast),
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
        pad_token_id=fast.pad_token_id,
        eos_token_id=fast.eos_token_id,
        decoder_start_token_id=fast.pad_token_id,
    )
    torch.manual_seed(seed)
    model = AutoModelForSeq2SeqLM.from_config(config)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    fast.save_pretrained(out_dir)
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
