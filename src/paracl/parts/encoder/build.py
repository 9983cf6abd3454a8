"""Build the sentence encoder to train, and save the encoder that the evaluation scores.

A saved encoder folder is the inference model: what `SentenceTransformer(path)` loads is
exactly what the evaluate stage encodes with and what the training dev score measured.

- Base model: a sentence-transformers folder (one with modules.json) keeps its whole
  module stack (Pooling, Normalize, Dense, …), its prompts and its inference
  `max_seq_length`; a plain transformers folder gets Transformer + Pooling and
  sentence-transformers' default length, min(tokenizer max length, position embeddings),
  i.e. what `SentenceTransformer(base)` would give.
- Length: training truncates at train_contrastive.max_seq_length (SimCSE trains at 32);
  the dev score and the saved model use the inference length (`truncation`), so a user's
  `SentenceTransformer(path)` does not silently truncate at the training length.
- Pooling: `mean` is mean pooling in training and in the saved model (all-MiniLM-L6-v2's
  and EBSIM's); `weighted_mean` weights token i by i (SGPT's position-weighted mean, for
  causal LMs, whose later tokens have seen more of the sentence); `last` is the last
  token's state (causal LMs); `cls` is the first token's state; `cls_mlp` is SimCSE's
  recipe, [CLS] followed by an MLP (dense + tanh) during training, saved as [CLS]
  without the MLP (as SimCSE evaluates its unsupervised models), the MLP's weights kept as
  the transformer's pooler (as SimCSE converts every checkpoint: `mlp_into_pooler`);
  `cls_mlp_always` keeps the MLP in the saved embedding too (a Dense module after the
  Pooling), as SimCSE trains and evaluates its supervised models. An MLP that no step
  trained (the `none` method, EBSIM's cross-encoder heads, any loss that never reads the
  sentence embedding) is dropped whole: the saved encoder keeps the base's own pooler and
  carries no weights nobody trained (`trained_mlp`). All are sentence-transformers
  Pooling modes, so a saved folder needs no code of ours. `None` keeps the base's own
  pooling (the `none` method: the base as published). A base whose Pooling differs from
  the asked one gets the asked one (logged).
- Plain text: sentence-transformers renders every input through the tokenizer's chat
  template when it has one (SmolLM2-Instruct's adds a system prompt and role markers: 34
  tokens for a 7-word sentence, and mean pooling averages all of them). The Transformer's
  `message` modality is dropped, so it tokenizes the sentence as `tokenizer(text)` does;
  its modality_config is saved (sentence_bert_config.json) and read back by
  `SentenceTransformer(path)`, so the saved encoder reads plain text too.
- Prompt: `prompt` (train_contrastive.prompt, off by default) is text put before every
  sentence, e.g. an instruction. It becomes the model's default prompt ("sentence"), which
  training, the dev score, the evaluation and a user's `encode` all apply; its tokens are
  pooled with the sentence's. sentence-transformers can only prepend, so a template with
  the sentence inside (PromptEOL's `This sentence : "{}" means in one word:"`) is refused.
- Padding: a causal LM's tokenizer often has no pad token (SmolLM2); its EOS token pads
  (masked out by every pooling). Left padding (Gemma's default) is kept: sentence-
  transformers' pooling counts positions from the first real token, so an embedding
  does not depend on its batch either way (tested).
- Dropout: `dropout` None keeps the base's config; a number sets every dropout rate the
  config has (BERT: hidden and attention; Llama and Gemma: attention only, default 0) at
  load time through `config_kwargs`. Unsupervised SimCSE needs it: its positive pair is
  the same sentence under two dropout masks, and with no dropout the two are identical.

Saving goes through SentenceTransformer.save into a temporary directory that replaces the
target only when complete; the transformer weights sit at the top level of that directory,
so `transformers.AutoModel.from_pretrained(path)` loads them too.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Dense, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling

from paracl.core.errors import ParamsError
from paracl.core.io import atomic_dir

log = logging.getLogger(__name__)

# train_contrastive.pooling → the sentence-transformers Pooling mode it saves as
POOLING = {
    "mean": "mean",
    "weighted_mean": "weightedmean",
    "last": "lasttoken",
    "cls": "cls",
    "cls_mlp": "cls",
    "cls_mlp_always": "cls",
}
# SimCSE's MLP on [CLS] (dense + tanh): with `cls_mlp` in training only (its unsupervised
# recipe, `--mlp_only_train`), with `cls_mlp_always` in the embedding too (its supervised
# recipe, evaluated with `--pooler cls`)
MLP_POOLINGS = ("cls_mlp", "cls_mlp_always")
SIMCSE_MLP = "paracl_simcse_mlp"  # attribute that marks SimCSE's MLP (mlp_into_pooler)
PROMPT_NAME = "sentence"  # the name train_contrastive.prompt is saved under (prompts)
TRAINING_ONLY = "paracl_training_only"  # attribute that marks SimCSE's MLP: dropped at save
INITIAL = "paracl_initial"  # attribute: the MLP's weights as built (trained_mlp compares)
CARD = "README.md"
# Left out when the base is copied as-is: formats SentenceTransformer(path) (torch) never reads.
OTHER_FORMATS = frozenset(
    {"onnx", "openvino", "tf_model.h5", "flax_model.msgpack", "rust_model.ot", CARD}
)


def is_sentence_transformer_dir(model_path: str | Path) -> bool:
    """A sentence-transformers folder (its module stack is in modules.json)."""
    return (Path(model_path) / "modules.json").is_file()


def dropout_config(model_path: str | Path, dropout: float | None) -> dict[str, float]:
    """The config entries that set every dropout rate `model_path`'s config has to
    `dropout` (empty for None). Why names and not modules: transformers reads these at
    load time (Llama's attention keeps `config.attention_dropout`, not an nn.Dropout)."""
    if dropout is None:
        return {}
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(model_path)).to_dict()
    return {
        key: float(dropout)
        for key, value in config.items()
        if isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (key.endswith(("dropout", "dropout_prob", "pdrop")) or key == "dropout_rate")
        and "classifier" not in key
    }


def build_encoder(
    model_path: str | Path,
    pooling: str | None = "mean",
    max_seq_length: int | None = 32,
    dropout: float | None = None,
    prompt: str | None = None,
) -> SentenceTransformer:
    """A SentenceTransformer over `model_path` (a transformers or sentence-transformers dir)
    that reads plain text (no chat template).

    `pooling` None keeps the base's pooling; `max_seq_length` None keeps the base's
    inference length (read it from the result before setting a training length);
    `dropout` None keeps the base's dropout rates; `prompt` (text before each sentence)
    becomes the default prompt. What trains is the trainer's choice (paracl.core.freeze)."""
    if pooling is not None and pooling not in POOLING:
        raise ValueError(f"pooling must be one of {tuple(POOLING)}, got {pooling!r}")
    config_kwargs = dropout_config(model_path, dropout)
    if config_kwargs:
        log.info("dropout %s: %s", dropout, ", ".join(sorted(config_kwargs)))
    elif dropout is not None:
        log.warning("%s: its config has no dropout rate to set to %s", model_path, dropout)
    stacked = is_sentence_transformer_dir(model_path)
    if stacked:
        model = SentenceTransformer(str(model_path), device="cpu", config_kwargs=config_kwargs)
    else:  # what SentenceTransformer(plain dir) builds, without its "creating" warning
        transformer = Transformer(str(model_path), config_kwargs=config_kwargs)
        mode = POOLING[pooling or "mean"]
        model = SentenceTransformer(
            modules=[transformer, Pooling(transformer.get_embedding_dimension(), mode)],
            device="cpu",
        )
    transformer = model[0]
    if not isinstance(transformer, Transformer):
        raise ValueError(f"{model_path}: the first module is {type(transformer).__name__}, "
                         "not a transformers Transformer")  # fmt: skip
    plain_text(model, model_path)
    _ensure_pad_token(transformer.tokenizer)
    if prompt:
        set_prompt(model, prompt)
    if pooling is not None:
        model = _with_pooling(model, pooling, model_path)
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model


def plain_text(model: SentenceTransformer, where: str | Path = "") -> SentenceTransformer:
    """`model` reading each sentence as plain text: its Transformer's `message` (chat
    template) modality removed, so that inputs are tokenized as `tokenizer(text)` does, with
    no system prompt or role tokens. A no-op for a tokenizer without a chat template."""
    transformer = model[0]
    modalities = dict(getattr(transformer, "modality_config", {}))
    if "message" not in modalities:
        return model
    if "text" not in modalities:
        raise ValueError(f"{where}: the model reads chat messages only, not plain text")
    del modalities["message"]
    transformer.modality_config = modalities
    transformer.input_formatter.supported_modalities = list(modalities)
    log.info("%s: plain text, not the tokenizer's chat template", where or "encoder")
    return model


def set_prompt(model: SentenceTransformer, prompt: str) -> None:
    """Make `prompt` the text put before every sentence: the default prompt, saved with the
    model (config_sentence_transformers.json), so `encode` applies it as training does."""
    if "{}" in prompt:
        raise ParamsError(
            "train_contrastive.prompt: a sentence-transformers prompt goes before the sentence;"
            " a template with {} in it (the sentence inside) cannot be saved with the encoder"
        )
    model.prompts[PROMPT_NAME] = prompt
    model.default_prompt_name = PROMPT_NAME


def _ensure_pad_token(tokenizer) -> None:
    """A pad token where a causal LM's tokenizer has none: its EOS (batches need one)."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError("the tokenizer has neither a pad nor an EOS token to pad with")
        tokenizer.pad_token = tokenizer.eos_token


def _with_pooling(
    model: SentenceTransformer, pooling: str, where: str | Path
) -> SentenceTransformer:
    """`model` with its Pooling module set to `pooling` (+ the training-only MLP for cls_mlp)."""
    modules = list(model)
    at = next((i for i, m in enumerate(modules) if isinstance(m, Pooling)), None)
    if at is None:
        raise ValueError(f"{where}: the module stack has no Pooling module to set to {pooling!r}")
    mode = POOLING[pooling]
    changed = modules[at].pooling_mode != mode
    if changed:
        log.warning("%s: pooling %r replaces the base's %r (train_contrastive.pooling)",
                    where, mode, modules[at].pooling_mode)  # fmt: skip
        modules[at] = Pooling(modules[0].get_embedding_dimension(), mode)
    if pooling in MLP_POOLINGS:
        dim = modules[at].get_embedding_dimension()
        mlp = Dense(dim, dim, activation_function=torch.nn.Tanh())
        setattr(mlp, SIMCSE_MLP, True)
        setattr(mlp, TRAINING_ONLY, pooling == "cls_mlp")
        setattr(mlp, INITIAL, [p.detach().clone() for p in mlp.parameters()])
        modules.insert(at + 1, mlp)
        changed = True
    return _with_modules(model, modules) if changed else model


def _with_modules(
    model: SentenceTransformer, modules: list[torch.nn.Module]
) -> SentenceTransformer:
    """A SentenceTransformer over `modules` that keeps `model`'s model-level config (prompts,
    similarity function, truncate_dim), which config_sentence_transformers.json saves."""
    return SentenceTransformer(
        modules=modules,
        device=str(model.device),
        prompts=model.prompts,
        default_prompt_name=model.default_prompt_name,
        similarity_fn_name=model.similarity_fn_name,
        truncate_dim=model.truncate_dim,
    )


def trained_mlp(model: SentenceTransformer) -> Dense | None:
    """SimCSE's MLP if a step has trained it, i.e. its weights moved from those it was
    built with; None where there is none or it is still as built (`none`, EBSIM: their
    losses never read the sentence embedding, so the MLP is random weights)."""
    mlp = next((m for m in model if getattr(m, SIMCSE_MLP, False)), None)
    if mlp is None:
        return None
    built = getattr(mlp, INITIAL)
    moved = any(
        not torch.equal(p.detach().cpu(), b) for p, b in zip(mlp.parameters(), built, strict=True)
    )
    return mlp if moved else None


def inference_model(model: SentenceTransformer) -> SentenceTransformer:
    """The model to score and save: SimCSE's training-only MLP removed, and an MLP nobody
    trained (`trained_mlp`) too (else `model` itself). Shares the modules (and so the
    weights and the tokenizer's length) with `model`."""
    trained = trained_mlp(model)
    kept = [
        m
        for m in model
        if not getattr(m, TRAINING_ONLY, False)
        and not (getattr(m, SIMCSE_MLP, False) and m is not trained)
    ]
    return model if len(kept) == len(model) else _with_modules(model, kept)


@contextmanager
def truncation(model: SentenceTransformer, max_seq_length: int | None) -> Iterator[None]:
    """Truncate at `max_seq_length` inside the block (None: as is); the old length after.
    The length lives in the shared tokenizer, so setting it for good would also change
    the training length of a model being trained."""
    before = model.max_seq_length
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    try:
        yield
    finally:
        model.max_seq_length = before


def mlp_into_pooler(model: SentenceTransformer) -> bool:
    """SimCSE's checkpoint conversion (its simcse_to_huggingface.py renames `mlp` to
    `pooler`): the trained MLP (dense + tanh) becomes the transformer's pooler, so a
    classifier that reads pooler_output (BertForSequenceClassification: the fine-tuned
    tasks) starts from it, as it does on the authors' released models. The sentence
    embedding stays [CLS] without it. False where there is no trained MLP (`trained_mlp`:
    the base's own pooler stays) or no pooler of its shape (causal LMs, mean pooling)."""
    mlp = trained_mlp(model)
    pooler = getattr(getattr(model[0], "auto_model", None), "pooler", None)
    dense = getattr(pooler, "dense", None)
    if mlp is None or dense is None or dense.weight.shape != mlp.linear.weight.shape:
        return False
    with torch.no_grad():
        dense.weight.copy_(mlp.linear.weight)
        dense.bias.copy_(mlp.linear.bias)
    return True


def save_encoder(
    model: SentenceTransformer,
    path: str | Path,
    max_seq_length: int | None = None,
    card: str | None = None,
    also: Callable[[Path], object] | None = None,
) -> None:
    """Save the inference model atomically at `max_seq_length` (None: the model's current
    one), with `card` as README.md; the directory loads with SentenceTransformer and
    AutoModel. SimCSE's MLP, if trained, is saved as the pooler (`mlp_into_pooler`).
    `also(folder)` writes further files into the folder before it replaces the old one,
    so a run killed in between leaves the old folder whole, never one without them."""
    mlp_into_pooler(model)
    inference = inference_model(model)
    with atomic_dir(path) as tmp, truncation(inference, max_seq_length):
        inference.save(str(tmp), create_model_card=False)
        if card is not None:
            (tmp / CARD).write_text(card, encoding="utf-8")
        if also is not None:
            also(tmp)


def copy_base(base: str | Path, path: str | Path, card: str) -> None:
    """Save a sentence-transformers base unchanged: its files copied byte for byte (weights,
    configs, tokenizer, module folders), its README replaced by `card`. Hidden files and
    other frameworks' weights are left out."""
    base = Path(base)
    with atomic_dir(path) as tmp:
        skip = set(OTHER_FORMATS)
        if (base / "model.safetensors").is_file():
            skip.add("pytorch_model.bin")  # transformers reads the safetensors copy
        for src in sorted(base.rglob("*")):
            rel = src.relative_to(base)
            if any(p.startswith(".") for p in rel.parts) or rel.parts[0] in skip:
                continue
            if src.is_dir():
                (tmp / rel).mkdir(parents=True, exist_ok=True)
            else:
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, tmp / rel)  # follows the HF cache's symlinks to blobs
        (tmp / CARD).write_text(card, encoding="utf-8")
