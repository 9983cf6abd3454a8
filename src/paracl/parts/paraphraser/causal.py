"""A decoder-only tag-controlled paraphraser: the paper's BART recipe on a causal LM.

No BART weights exist offline, but real causal LMs do (SmolLM2-135M, gemma-3-270m). One
sequence holds both sides:

    [bos] <SIM95><BLEU20> {source} <sep> {paraphrase}<eos>

the tags are new special tokens at the start of the input as in the paper, `<sep>` a new
token that says "the paraphrase starts here". The loss covers the target tokens only
(labels -100 on the prompt and the padding), so the model learns p(paraphrase | tags,
source) as BART does. New tokens start from the mean embedding of the pieces of their
name ("SIM95" → S, IM, 95), so the tags differ from the first step even when the layers
that read them are frozen. Logits are computed at target positions only: gemma's
262k-word head over every position of a batch would take a gigabyte.

Generation prompts with the tags, the source and `<sep>`, and decodes the continuation
up to eos or a newline, by beam search inside the paper's length window. transformers
copies each prompt into its num_beams rows before reading it; `prefill_once` reads each
prompt once and copies its KV cache instead, on CPU (the same floats: a CPU's matmul of
a row does not depend on the rows beside it; tests/parts/test_paraphraser_prefill.py
checks the bytes; a GPU picks its kernels by shape, so it keeps transformers' prefill).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from transformers import LogitsProcessorList

from paracl.core.device import DEFAULT_PRECISION, autocast
from paracl.parts.paraphraser.window import LengthWindow, length_window, special_ids

SEP = "<sep>"


def prompt_ids(tokenizer, tags: str, text: str, limit: int) -> list[int]:
    """[bos] tags source <sep>, the source cut so the prompt has at most `limit` tokens.
    With no tags (the untagged baseline) the source keeps its leading space, so it is
    tokenized as after the tags."""
    ids = tokenizer(f"{tags} {text}", add_special_tokens=True)["input_ids"]
    if ids and ids[-1] == tokenizer.eos_token_id:  # tokenizers that append eos
        ids = ids[:-1]
    return ids[: max(limit - 1, 1)] + [tokenizer.convert_tokens_to_ids(SEP)]


def encode_pair(tokenizer, tags: str, text: str, target: str, max_length: int):
    """(input ids, labels) of one training pair: labels -100 on the prompt. The prompt
    gets at most half of max_length; eos is learned only when the whole target fits."""
    prompt = prompt_ids(tokenizer, tags, text, max_length // 2)
    tgt = tokenizer(f" {target}", add_special_tokens=False)["input_ids"] + [eos_id(tokenizer)]
    tgt = tgt[: max_length - len(prompt)]
    return prompt + tgt, [-100] * len(prompt) + tgt


def eos_id(tokenizer) -> int:
    return tokenizer.eos_token_id


def pad_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_id(tokenizer)


def _target_logits(model, hidden: torch.Tensor) -> torch.Tensor:
    logits = model.get_output_embeddings()(hidden)
    cap = getattr(model.config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits


def batch_loss(
    model,
    tokenizer,
    rows: Sequence[tuple[str, str, str]],
    max_length,
    device,
    precision: str = DEFAULT_PRECISION,
):
    """Mean target-token loss of (tags, source, target) rows, right-padded."""
    pairs = [encode_pair(tokenizer, *row, max_length) for row in rows]
    width = max(len(ids) for ids, _ in pairs)
    pad = pad_id(tokenizer)
    input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in pairs])
    labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in pairs])
    mask = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in pairs])
    input_ids, labels, mask = input_ids.to(device), labels.to(device), mask.to(device)
    with autocast(device, precision):
        hidden = model.base_model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        keep = labels[:, 1:] != -100  # position t predicts token t + 1
        logits = _target_logits(model, hidden[:, :-1][keep])
    return F.cross_entropy(logits.float(), labels[:, 1:][keep])


def newline_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """(tokens that are only line breaks and spaces: they end an output, tokens that mix a
    line break with text: banned). Byte-level BPE writes \\n as 'Ċ', SentencePiece as is."""
    ends, mixed = [], []
    for token, i in tokenizer.get_vocab().items():
        if "\n" in token or "Ċ" in token:
            rest = token.replace("\n", "").replace("Ċ", "").replace("Ġ", "").replace("▁", "")
            (mixed if rest.strip() else ends).append(i)
    return sorted(ends), sorted(mixed)


@contextmanager
def prefill_once(model, num_beams: int) -> Iterator[None]:
    """Within the block, `model.generate`'s prefill reads each prompt once, not once per
    beam: beam search's input holds every prompt num_beams times (rows repeated in
    place), so the prompt's forward runs on every num_beams-th row and its logits and KV
    cache are repeated to the others. Beam search is num_beams × slower to prefill
    otherwise (~a fifth of generate_paraphrases' time at 4 beams). Falls back to
    transformers' own prefill where the rows are not repeats or no cache is kept."""
    if num_beams <= 1:
        yield
        return
    original = model._prefill  # transformers 5's GenerationMixin._prefill

    def prefill(input_ids, generation_config, model_kwargs, *args, **kwargs):
        rows = input_ids.shape[0]
        unique = input_ids[::num_beams]
        if (
            model_kwargs.get("cache") is None
            or rows % num_beams
            or not torch.equal(unique.repeat_interleave(num_beams, dim=0), input_ids)
        ):
            return original(input_ids, generation_config, model_kwargs, *args, **kwargs)
        small = {
            k: v[::num_beams] if torch.is_tensor(v) and v.dim() and v.shape[0] == rows else v
            for k, v in model_kwargs.items()
        }
        out = original(unique, generation_config, small, *args, **kwargs)
        model_kwargs["cache"].batch_repeat_interleave(num_beams)  # filled in place above
        out.logits = out.logits.repeat_interleave(num_beams, dim=0)
        return out

    model._prefill = prefill
    try:
        yield
    finally:
        del model._prefill


@torch.inference_mode()
def generate(
    model,
    tokenizer,
    texts: Sequence[str],
    tags: str,
    *,
    num_beams: int,
    min_ratio: float,
    max_ratio: float,
    batch_size: int,
    max_length: int,
    device: torch.device,
    precision: str = DEFAULT_PRECISION,
) -> tuple[list[str], list[int]]:
    """The continuation after `<sep>` for each text under `tags` ("" = untagged), by beam
    search inside the length window; (outputs, generated token counts)."""
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    outputs, counts = [""] * len(texts), [0] * len(texts)
    eos, pad = eos_id(tokenizer), pad_id(tokenizer)
    ends, mixed = newline_tokens(tokenizer)
    stop = {eos, pad, *ends}
    banned = special_ids(tokenizer) | set(mixed)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        windows = [length_window(min(lengths[i], max_length), min_ratio, max_ratio) for i in idx]
        prompts = [prompt_ids(tokenizer, tags, texts[i], max_length) for i in idx]
        width = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
        processor = LengthWindow(
            [w[0] for w in windows], [w[1] for w in windows], eos, num_beams, width, banned, ends
        )
        once = num_beams if device.type == "cpu" else 1  # a GPU's kernels vary with the rows
        with autocast(device, precision), prefill_once(model, once):
            out = model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                num_beams=num_beams,
                do_sample=False,
                early_stopping=True,
                max_new_tokens=max(w[1] for w in windows) + 1,
                eos_token_id=sorted({eos, *ends}),
                pad_token_id=pad,
                logits_processor=LogitsProcessorList([processor]),
                length_penalty=1.0,
            )
        for row, i in enumerate(idx):
            ids = []
            for t in out[row, width:].tolist():
                if t in stop:
                    break
                ids.append(t)
            counts[i] = len(ids)
            outputs[i] = tokenizer.decode(ids, skip_special_tokens=True).strip()
    return outputs, counts
