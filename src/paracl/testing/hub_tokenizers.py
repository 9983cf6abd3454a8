"""Tiny tokenizers in the file layouts of the real hub repositories.

Why not one generic tokenizer for every tiny model: how a model's tokenizer is stored
decides which code loads it. rinna's and sonoisa's repositories, and DeBERTa-v3's, ship
only a SentencePiece model (`spiece.model` / `spm.model`), so loading them converts it
and needs the `sentencepiece` package; GPT-2 and BART ship byte-level BPE `vocab.json` +
`merges.txt`; BERT a WordPiece `vocab.txt` (cl-tohoku's Japanese BERT: with MeCab word
splitting, a slow tokenizer). Each writer here saves the same kind of
files under the same names with the real tokenizer class in `tokenizer_config.json`,
trained in well under a second on paracl.testing.standins.TRAINING_TEXT. Each returns the
special-token ids the model's config needs.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from paracl.testing.standins import TRAINING_TEXT, train_bpe


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def sentencepiece(
    out_dir: Path,
    file: str,
    tokenizer_class: str,
    specials: dict[str, str],
    extra_ids: int = 0,
    vocab_size: int = 260,
    **config,
) -> dict[str, int]:
    """A SentencePiece unigram model saved as `file` (no tokenizer.json, as the real
    repositories), with `tokenizer_config.json` naming `tokenizer_class`; specials maps
    role (pad, eos, unk, bos, cls, sep, mask) -> token. Returns {role_id: id}."""
    import sentencepiece as spm

    order = list(dict.fromkeys(specials.values()))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TRAINING_TEXT),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,
        character_coverage=1.0,
        num_threads=1,
        unk_id=order.index(specials["unk"]),
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        control_symbols=[t for t in order if t != specials["unk"]],
        minloglevel=2,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / file).write_bytes(model.getvalue())
    names = {f"{role}_token": tok for role, tok in specials.items()}
    _write_json(out_dir / "special_tokens_map.json", names)
    _write_json(
        out_dir / "tokenizer_config.json",
        {"tokenizer_class": tokenizer_class, "extra_ids": extra_ids, **names, **config},
    )
    ids = {token: order.index(token) for token in order}
    return {f"{role}_token_id": ids[tok] for role, tok in specials.items()}


def byte_level(
    out_dir: Path, tokenizer_class: str, specials: dict[str, str], vocab_size: int = 400
) -> dict[str, int]:
    """Byte-level BPE as GPT-2 / BART / SmolLM2 store it: vocab.json + merges.txt."""
    from transformers import AutoTokenizer

    order = list(dict.fromkeys(specials.values()))
    tok = train_bpe(order, vocab_size)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.model.save(str(out_dir))  # vocab.json, merges.txt
    names = {f"{role}_token": t for role, t in specials.items()}
    _write_json(out_dir / "special_tokens_map.json", names)
    _write_json(out_dir / "tokenizer_config.json", {"tokenizer_class": tokenizer_class, **names})
    loaded = AutoTokenizer.from_pretrained(str(out_dir))
    return {f"{role}_token_id": loaded.convert_tokens_to_ids(t) for role, t in specials.items()}


def _wordpiece_vocab(out_dir: Path, words, lowercase: bool, vocab_size: int) -> Path:
    """`vocab.txt` of the words (a Counter) as BERT's WordPiece reads it.

    The vocabulary is built here, not by tokenizers' WordPiece trainer, whose choice among
    tokens of equal count changes from run to run (three builds gave three vocabularies, so
    two fresh caches trained different models): the specials, every character of the text
    and of ASCII, each also as a `##` continuation (so that every word tokenizes), then
    whole words by count, ties in alphabetical order, up to `vocab_size`."""
    import string

    ascii_ = (string.ascii_lowercase if lowercase else string.ascii_letters) + string.digits
    chars = sorted({c for w in words for c in w} | set(ascii_ + string.punctuation))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars)]
    ranked = sorted((w for w in words if len(w) > 1), key=lambda w: (-words[w], w))
    vocab += ranked[: max(0, vocab_size - len(vocab))]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return out_dir / "vocab.txt"


def wordpiece(out_dir: Path, lowercase: bool = True, vocab_size: int = 400) -> dict[str, int]:
    """BERT's WordPiece `vocab.txt` (+ tokenizer.json), [CLS] A [SEP] B [SEP]."""
    from collections import Counter

    from tokenizers.pre_tokenizers import BertPreTokenizer
    from transformers import BertTokenizer

    split = BertPreTokenizer().pre_tokenize_str
    words = Counter(
        w for line in TRAINING_TEXT for w, _ in split(line.lower() if lowercase else line)
    )
    vocab = _wordpiece_vocab(out_dir, words, lowercase, vocab_size)
    tok = BertTokenizer(vocab=str(vocab), do_lower_case=lowercase)
    tok.save_pretrained(str(out_dir))
    return {"pad_token_id": tok.pad_token_id}


# cl-tohoku/bert-base-japanese's word splitter: MeCab with the IPA dictionary
MECAB = {"word_tokenizer_type": "mecab", "subword_tokenizer_type": "wordpiece",
         "mecab_kwargs": {"mecab_dic": "ipadic"}}  # fmt: skip


def wordpiece_mecab(out_dir: Path, vocab_size: int = 400) -> dict[str, int]:
    """cl-tohoku/bert-base-japanese's tokenizer: transformers' BertJapaneseTokenizer, words
    split by MeCab with the IPA dictionary (the `fugashi` and `ipadic` packages), then
    WordPiece, cased; a slow tokenizer (`vocab.txt` + `tokenizer_config.json`, no
    tokenizer.json), as its repository stores it."""
    from collections import Counter

    from transformers import BertJapaneseTokenizer
    from transformers.models.bert_japanese.tokenization_bert_japanese import MecabTokenizer

    split = MecabTokenizer(do_lower_case=False, **MECAB["mecab_kwargs"]).tokenize
    words = Counter(w for line in TRAINING_TEXT for w in split(line))
    vocab = _wordpiece_vocab(out_dir, words, False, vocab_size)
    tok = BertJapaneseTokenizer(vocab_file=str(vocab), do_lower_case=False, **MECAB)
    tok.save_pretrained(str(out_dir))
    return {"pad_token_id": tok.pad_token_id}
