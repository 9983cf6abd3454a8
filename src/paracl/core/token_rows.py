"""Token rows kept without their padding, padded again per batch, and moved to the device.

Both trainers tokenize their training set once, ahead of the first epoch, instead of at
every step: the contrastive trainer's token cache (paracl.stages.train_contrastive.training.tokens) and
evaluation fine-tuning (paracl.parts.finetune.tuning). Both keep each row's per-token
values (input_ids, attention_mask, ...) as one small int32 tensor without its padding
(`split_rows`), and a step pads its rows to the batch's longest as the tokenizer pads them
(`pad_rows`): the same tensors as tokenizing the batch, so the same losses bit for bit.
On CUDA a batch is pinned and copied without blocking the host (`to_device`).
"""

from __future__ import annotations

import torch


def split_rows(feats: dict, keys: list[str], left: bool) -> list[torch.Tensor]:
    """Each row of the padded batch `feats` as one int32 tensor (len(keys), its tokens),
    its padding (on the left when `left`, else on the right) cut off."""
    mask = feats["attention_mask"]
    width, lengths = mask.shape[1], mask.sum(1).tolist()
    stacked = torch.stack([feats[k] for k in keys]).to(torch.int32)
    cuts = [slice(width - n, width) if left else slice(0, n) for n in lengths]
    return [stacked[:, r, cut].clone() for r, cut in enumerate(cuts)]  # clones: no batch kept


def pad_rows(rows: list[torch.Tensor], keys: dict[str, torch.dtype], tokenizer) -> dict:
    """The rows (from `split_rows`, in `keys`' order) padded to the longest, with the
    tokenizer's pad values and side, each key back in its dtype."""
    side = "left" if getattr(tokenizer, "padding_side", "right") == "left" else "right"
    pad = {"input_ids": tokenizer.pad_token_id, "token_type_ids": tokenizer.pad_token_type_id}
    return {
        key: torch.nn.utils.rnn.pad_sequence(
            [row[k] for row in rows], batch_first=True, padding_value=pad.get(key, 0),
            padding_side=side,
        ).to(dtype)
        for k, (key, dtype) in enumerate(keys.items())
    }  # fmt: skip


def to_device(feats: dict, device: torch.device) -> dict:
    """The features on `device`; on CUDA pinned and copied without blocking the host."""
    cuda = device.type == "cuda"
    return {
        k: (v.pin_memory().to(device, non_blocking=True) if cuda else v.to(device))
        if isinstance(v, torch.Tensor)
        else v
        for k, v in feats.items()
    }
