"""A Hugging Face cache in which every hub id paracl's params name is a tiny random model.

Why: the paper presets name hub models (bert-base-uncased, t5-base, facebook/bart-base,
the FSMT translators, DeBERTa-v3, rinna's, sonoisa's and cl-tohoku's Japanese models, ...)
that no offline machine has. To run a preset end to end anyway, each id gets a model of the SAME
architecture (config class) with the same kind of tokenizer, stored the way its real
repository stores it (paracl.testing.hub_tokenizers), but with random weights a few
hundred kilobytes big. They sit in the standard cache layout,

    <root>/hub/models--<org>--<name>/refs/main                 (the revision)
    <root>/hub/models--<org>--<name>/snapshots/<revision>/...  (config, weights, tokenizer)

so nothing in paracl changes to use them: with `HF_HOME=<root>` and `HF_HUB_OFFLINE=1`
(`hub_env`) paracl.core.models.resolve_model finds them in the cache, before any packaged
model. Every output of such a run is noise; it proves the plumbing only.

    python -m paracl.testing.hub_cache --params params.yaml --out /tmp/tiny-hub
    export HF_HOME=/tmp/tiny-hub HF_HUB_OFFLINE=1
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from paracl.testing import hub_tokenizers as tokenizers

SIZES = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2}
SIZES["intermediate_size"] = 64
MAX_LEN = 160  # positions; the presets truncate at 128
REVISION_SALT = "paracl-tiny-3"  # change when a builder changes: a new revision

RINNA = {"unk": "<unk>", "bos": "<s>", "eos": "</s>", "pad": "[PAD]", "cls": "[CLS]",
         "sep": "[SEP]", "mask": "[MASK]"}  # fmt: skip
T5 = {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"}
BART = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"}
GPT2 = {"bos": "<|endoftext|>", "eos": "<|endoftext|>", "unk": "<|endoftext|>"}
DEBERTA = {"pad": "[PAD]", "cls": "[CLS]", "sep": "[SEP]", "unk": "[UNK]", "mask": "[MASK]"}
SMOL = {"bos": "<|im_start|>", "eos": "<|im_end|>", "unk": "<|endoftext|>"}


def _save(model, out: Path, seed: int) -> None:
    model.eval().save_pretrained(str(out))


def _seeded(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def _bert(out: Path, seed: int) -> None:
    """bert-base-uncased: BertForMaskedLM, lower-casing WordPiece."""
    from transformers import BertConfig, BertForMaskedLM

    ids = tokenizers.wordpiece(out)
    config = BertConfig(vocab_size=_vocab(out), max_position_embeddings=MAX_LEN, **SIZES, **ids)
    _seeded(seed)
    _save(BertForMaskedLM(config), out, seed)


def _bert_japanese(out: Path, seed: int) -> None:
    """cl-tohoku/bert-base-japanese: BertForMaskedLM, cased; MeCab (IPA dictionary) words,
    then WordPiece (BertJapaneseTokenizer, named in config.json as the repository does)."""
    from transformers import BertConfig, BertForMaskedLM

    ids = tokenizers.wordpiece_mecab(out)
    config = BertConfig(
        vocab_size=_vocab(out), max_position_embeddings=MAX_LEN,
        tokenizer_class="BertJapaneseTokenizer", **SIZES, **ids,
    )  # fmt: skip
    _seeded(seed)
    _save(BertForMaskedLM(config), out, seed)


def _sentence_bert(out: Path, seed: int, pooling: str = "mean", dense: bool = False) -> None:
    """A BERT with the sentence-transformers modules saved beside it: `pooling`, a tanh
    Dense layer where `dense`, and normalisation."""
    from sentence_transformers import SentenceTransformer, models
    from torch import nn
    from transformers import BertConfig, BertModel

    ids = tokenizers.wordpiece(out / "_bert")
    config = BertConfig(
        vocab_size=_vocab(out / "_bert"), max_position_embeddings=MAX_LEN, **SIZES, **ids
    )
    _seeded(seed)
    BertModel(config).eval().save_pretrained(str(out / "_bert"))
    modules = [models.Transformer(str(out / "_bert"), max_seq_length=128)]
    modules.append(models.Pooling(config.hidden_size, pooling))
    if dense:
        modules.append(
            models.Dense(config.hidden_size, config.hidden_size, activation_function=nn.Tanh())
        )
    SentenceTransformer(modules=[*modules, models.Normalize()]).save(str(out))
    _rmtree(out / "_bert")


def _minilm(out: Path, seed: int) -> None:
    """sentence-transformers/all-MiniLM-L6-v2: mean pooling, normalised."""
    _sentence_bert(out, seed)


def _labse(out: Path, seed: int) -> None:
    """sentence-transformers/LaBSE: [CLS] pooling, a tanh Dense layer, normalised."""
    _sentence_bert(out, seed, pooling="cls", dense=True)


def _roberta_rinna(out: Path, seed: int) -> None:
    """rinna/japanese-roberta-base: RoBERTa with a SentencePiece T5Tokenizer."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    ids = tokenizers.sentencepiece(out, "spiece.model", "T5Tokenizer", RINNA, do_lower_case=True)
    # RoBERTa counts positions from pad + 1
    size = MAX_LEN + ids["pad_token_id"] + 1
    config = RobertaConfig(vocab_size=_vocab(out), max_position_embeddings=size, **SIZES, **ids)
    _seeded(seed)
    _save(RobertaForMaskedLM(config), out, seed)


def _t5(out: Path, seed: int, v1_1: bool = False) -> None:
    """t5-base (ReLU, tied head) or sonoisa/t5-base-japanese-v1.1 (gated GELU, untied)."""
    from transformers import T5Config, T5ForConditionalGeneration

    ids = tokenizers.sentencepiece(out, "spiece.model", "T5Tokenizer", T5, extra_ids=100)
    extra = {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False} if v1_1 else {}
    config = T5Config(
        vocab_size=_vocab(out), d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
        decoder_start_token_id=ids["pad_token_id"], **ids, **extra,
    )  # fmt: skip
    _seeded(seed)
    _save(T5ForConditionalGeneration(config), out, seed)


def _bart(out: Path, seed: int) -> None:
    """facebook/bart-base: BART with byte-level BPE (vocab.json + merges.txt)."""
    from transformers import BartConfig, BartForConditionalGeneration

    from paracl.testing.standins import SEQ2SEQ_SIZES

    ids = tokenizers.byte_level(out, "BartTokenizer", BART)
    sizes = {**SEQ2SEQ_SIZES, "max_position_embeddings": MAX_LEN}
    config = BartConfig(
        vocab_size=_vocab(out), **sizes, **ids,
        decoder_start_token_id=ids["eos_token_id"], forced_eos_token_id=ids["eos_token_id"],
    )  # fmt: skip
    _seeded(seed)
    _save(BartForConditionalGeneration(config), out, seed)


def _fsmt(out: Path, seed: int, langs: tuple[str, str]) -> None:
    """facebook/wmt19-<src>-<tgt>: FSMT (Moses + fairseq BPE), as paracl.testing.standins builds
    it, with the direction's languages in its config and tokenizer config."""
    from paracl.testing.standins import build_tiny_fsmt

    build_tiny_fsmt(out, seed=seed)
    for name in ("config.json", "tokenizer_config.json"):
        data = json.loads((out / name).read_text(encoding="utf-8"))
        data["langs"] = list(langs)
        tokenizers._write_json(out / name, data)


def _deberta_v3(out: Path, seed: int) -> None:
    """microsoft/deberta-v3-large: DeBERTa-v2 with relative attention, SentencePiece
    spm.model, saved with the one-output head a cross-encoder puts on it.

    The hub's copy is the bare encoder (the cross-encoder draws its head). Here the head is
    saved, with its bias at +3 (sigmoid 0.95): a random head scores every pair about the
    same, and below 0.7 no round-trip pair would pass tag's SIM > 70, leaving the
    round-trip and paraphraser methods nothing to train on. Noise either way."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    ids = tokenizers.sentencepiece(
        out, "spm.model", "DebertaV2Tokenizer", DEBERTA, do_lower_case=False, vocab_type="spm"
    )
    config = DebertaV2Config(
        vocab_size=_vocab(out), max_position_embeddings=512, relative_attention=True,
        position_buckets=32, pos_att_type=["p2c", "c2p"], position_biased_input=False,
        norm_rel_ebd="layer_norm", share_att_key=True, max_relative_positions=-1,
        num_labels=1, **SIZES, **ids,
    )  # fmt: skip
    _seeded(seed)
    model = DebertaV2ForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.bias.fill_(3.0)
    _save(model, out, seed)


def _gpt2(out: Path, seed: int, sentencepiece: bool = False) -> None:
    """gpt2 (byte-level BPE, no pad token) or rinna/japanese-gpt2-medium (GPT-2 with a
    SentencePiece T5Tokenizer)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    if sentencepiece:
        ids = tokenizers.sentencepiece(
            out, "spiece.model", "T5Tokenizer", RINNA, do_lower_case=True
        )
    else:
        ids = tokenizers.byte_level(out, "GPT2Tokenizer", GPT2)
    config = GPT2Config(
        vocab_size=_vocab(out), n_positions=MAX_LEN, n_embd=32, n_layer=2, n_head=2,
        **{k: v for k, v in ids.items() if k in ("bos_token_id", "eos_token_id")},
    )  # fmt: skip
    _seeded(seed)
    _save(GPT2LMHeadModel(config), out, seed)


def _llama(out: Path, seed: int) -> None:
    """HuggingFaceTB/SmolLM2-135M-Instruct: Llama with a byte-level GPT2Tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = tokenizers.byte_level(out, "GPT2Tokenizer", SMOL)
    config = LlamaConfig(
        vocab_size=_vocab(out), max_position_embeddings=MAX_LEN, num_key_value_heads=1,
        tie_word_embeddings=True, **SIZES,
        **{k: v for k, v in ids.items() if k in ("bos_token_id", "eos_token_id")},
    )  # fmt: skip
    _seeded(seed)
    _save(LlamaForCausalLM(config), out, seed)


def _gemma3(out: Path, seed: int) -> None:
    """google/gemma-3-270m: Gemma3ForCausalLM (gemma3_text). Its tokenizer is the
    test one of paracl.testing.tiny_models (Gemma's specials, left padding), not
    Gemma's SentencePiece BPE."""
    from paracl.testing.tiny_models import build_tiny_model

    build_tiny_model("gemma3_text", out, seed=seed)


def _vocab(out: Path) -> int:
    from transformers import AutoTokenizer

    return len(AutoTokenizer.from_pretrained(str(out)))


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


# hub id -> builder of a tiny random model of its architecture
BUILDERS: dict[str, Callable[[Path, int], None]] = {
    "bert-base-uncased": _bert,
    "bert-large-uncased": _bert,  # the round-trip paper's STILTs base (paper-en, §6)
    "sentence-transformers/all-MiniLM-L6-v2": _minilm,
    "sentence-transformers/LaBSE": _labse,
    "rinna/japanese-roberta-base": _roberta_rinna,
    "cl-tohoku/bert-base-japanese": _bert_japanese,  # JCSE's base (paper-ja's jcse rows)
    "t5-base": _t5,
    "sonoisa/t5-base-japanese-v1.1": lambda out, seed: _t5(out, seed, v1_1=True),
    "facebook/bart-base": _bart,
    "facebook/wmt19-en-de": lambda out, seed: _fsmt(out, seed, ("en", "de")),
    "facebook/wmt19-de-en": lambda out, seed: _fsmt(out, seed, ("de", "en")),
    "microsoft/deberta-v3-large": _deberta_v3,
    "gpt2": _gpt2,
    "rinna/japanese-gpt2-medium": lambda out, seed: _gpt2(out, seed, sentencepiece=True),
    "HuggingFaceTB/SmolLM2-135M-Instruct": _llama,
    "google/gemma-3-270m": _gemma3,
}

# where params.yaml names a model: dotted key -> value (a hub id, or {lang: hub id})
MODEL_KEYS = (
    "rank_fluency.model",
    "adapt_filler.model",
    "roundtrip.forward_model",
    "roundtrip.backward_model",
    "train_sts_scorer.base_model",
    "train_paraphraser.base_model",
    "train_contrastive.base_model",
)


def model_ids(params: dict) -> set[str]:
    """Every model id the params name (both languages), local paths and stand-ins too."""
    found: set[str] = set()
    for key in MODEL_KEYS:
        value: object = params
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        values = value.values() if isinstance(value, dict) else [value]
        found.update(v for v in values if isinstance(v, str))
    methods = (params.get("train_contrastive") or {}).get("methods") or {}
    found.update(
        m["base_model"] for m in methods.values() if isinstance(m, dict) and m.get("base_model")
    )
    return found


def hub_ids(params: dict) -> set[str]:
    """The ids of `model_ids` that name hub repositories (org/name or a bare hub name),
    not local directories (models/...) or paracl's own tiny-random: stand-ins."""
    return {
        i for i in model_ids(params)
        if not i.startswith(("tiny-random:", "models/", "/", ".")) and ":" not in i
    }  # fmt: skip


def revision(model_id: str) -> str:
    """A fixed 40-hex revision per id (the cache's snapshot name)."""
    return hashlib.sha1(f"{REVISION_SALT}:{model_id}".encode()).hexdigest()


def repo_dir(hub: Path, model_id: str) -> Path:
    return Path(hub) / ("models--" + model_id.replace("/", "--"))


def build_hub_cache(ids: Iterable[str], root: str | Path, seed: int = 0) -> Path:
    """Build (or keep) a tiny model for each id under <root>/hub; return <root>.

    An id with no builder is an error naming the known ones. A snapshot already built
    at the current revision is kept, so a shared cache is built once."""
    from paracl.core.io import atomic_dir

    root = Path(root)
    unknown = sorted(set(ids) - set(BUILDERS))
    if unknown:
        raise KeyError(
            f"no tiny builder for hub id {unknown[0]!r} (have: {', '.join(sorted(BUILDERS))})"
        )
    for model_id in sorted(set(ids)):
        repo, rev = repo_dir(root / "hub", model_id), revision(model_id)
        snapshot = repo / "snapshots" / rev
        if not snapshot.is_dir():
            with atomic_dir(snapshot) as tmp:
                BUILDERS[model_id](Path(tmp), seed)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(rev, encoding="utf-8")
    return root


def hub_env(root: str | Path) -> dict[str, str]:
    """The environment that makes paracl (and transformers) read only this cache."""
    root = Path(root).resolve()
    return {
        "HF_HOME": str(root),
        "HF_HUB_CACHE": str(root / "hub"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--params", default="params.yaml", help="ids named in this params file")
    parser.add_argument("--out", required=True, help="cache root (use as HF_HOME)")
    args = parser.parse_args(argv)
    import yaml

    params = yaml.safe_load(Path(args.params).read_text(encoding="utf-8"))
    ids = hub_ids(params)
    root = build_hub_cache(ids, args.out)
    for key, value in hub_env(root).items():
        print(f"export {key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
