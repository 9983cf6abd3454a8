"""The paper's encoder-decoder paraphraser (BART, §3.3/§4.2): loss and generation.

The tags go at the start of the encoder input; the decoder writes the paraphrase. Kept
beside the decoder-only path (paracl.parts.paraphraser.causal) so that the paper
preset (`facebook/bart-base`) runs the paper's architecture; paracl.parts.paraphraser
picks one by the model config's `is_encoder_decoder`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessorList

from paracl.core.device import DEFAULT_PRECISION, autocast
from paracl.parts.paraphraser.window import LengthWindow, length_window, special_ids


def tagged_input(tags: str, text: str) -> str:
    """The encoder input: the tags first, then the sentence."""
    return f"{tags} {text}"


def batch_loss(
    model,
    tokenizer,
    rows: Sequence[tuple[str, str, str]],
    max_length,
    device,
    precision: str = DEFAULT_PRECISION,
):
    """Mean target-token loss of (tags, source, target) rows; padding labels are -100."""
    enc = tokenizer(
        [tagged_input(tags, text) for tags, text, _ in rows],
        text_target=[target for _, _, target in rows],
        return_tensors="pt",
        padding=True,
        truncation=True,
        max_length=max_length,
    ).to(device)
    labels = enc["labels"].masked_fill(enc["labels"] == tokenizer.pad_token_id, -100)
    with autocast(device, precision):
        return model(
            input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels
        ).loss


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
    """Beam search per sentence, output held to the length window; (outputs, token counts)."""
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    outputs, counts = [""] * len(texts), [0] * len(texts)
    gen_cfg = model.generation_config
    offset = 1 + (gen_cfg.forced_bos_token_id is not None)
    eos = gen_cfg.eos_token_id if isinstance(gen_cfg.eos_token_id, int) else tokenizer.eos_token_id
    specials = special_ids(tokenizer)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        windows = [length_window(min(lengths[i], max_length), min_ratio, max_ratio) for i in idx]
        enc = tokenizer(
            [tagged_input(tags, texts[i]) for i in idx],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
        ).to(device)
        processor = LengthWindow(
            [w[0] for w in windows], [w[1] for w in windows], eos, num_beams, offset, specials
        )
        with autocast(device, precision):
            out = model.generate(
                **enc,
                num_beams=num_beams,
                do_sample=False,
                early_stopping=True,
                max_new_tokens=max(w[1] for w in windows) + offset + 1,
                min_new_tokens=0,
                logits_processor=LogitsProcessorList([processor]),
                length_penalty=1.0,
                no_repeat_ngram_size=0,
            )
        for row, i in enumerate(idx):
            ids = [t for t in out[row].tolist() if t not in specials]
            counts[i] = len(ids)
            outputs[i] = tokenizer.decode(ids, skip_special_tokens=True).strip()
    return outputs, counts
