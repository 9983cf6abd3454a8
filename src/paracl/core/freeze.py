"""What of a transformer trains: the top `train_layers` layers, the rest frozen.

One rule for every model that paracl fine-tunes (the decoder-only paraphraser, the causal
filler, the contrastive encoder), because the reason is the same: on a 2-core CPU a full
step of SmolLM2-135M (30 layers) or gemma-3-270m (18) costs seconds. With only the top
layers (+ the final norm) trainable, autograd records no graph below the first trainable
layer, so the backward pass stops there and the frozen layers keep no activations for it.
The forward pass is unchanged: dropout still acts in every layer in train mode, so
SimCSE's two views of a sentence still differ by dropout everywhere.

- Embeddings: the input embeddings lie below every layer, so they train only when every
  layer trains and `freeze_embeddings` is off. An output head (a causal LM's, often tied
  to the input embeddings) sits above the layers and trains unless `freeze_embeddings`.
- Layers: decoder-only models (Llama, Gemma-3, Mistral, Qwen: `layers`; GPT-2: `h`) and
  encoders (BERT, RoBERTa, DeBERTa, XLM-R, MPNet: `encoder.layer`; DistilBERT:
  `transformer.layer`), found under the model's `base_model`. Another architecture with
  `train_layers` set is refused with a one-line error naming the param.
"""

from __future__ import annotations

import torch

from paracl.core.errors import UserError

# Where the stack of transformer blocks lives, under `model.base_model`.
LAYER_STACKS = ("layers", "encoder.layer", "transformer.layer", "h")


def transformer_layers(model, param: str) -> torch.nn.ModuleList:
    """The model's stack of transformer blocks; `param` names the setting that asked for
    it, so a refusal says what to change."""
    for path in LAYER_STACKS:
        module = model.base_model
        for name in path.split("."):
            module = getattr(module, name, None)
        if isinstance(module, torch.nn.ModuleList) and len(module) > 0:
            return module
    raise UserError(
        f"{param}: no transformer layers found in {type(model.base_model).__name__} "
        f"(looked for {', '.join(LAYER_STACKS)}); set {param}: null to train every layer"
    )


def freeze(model, train_layers: int | None, freeze_embeddings: bool, param: str) -> str:
    """Set requires_grad on a transformers model: the top `train_layers` layers and the
    final norm (None: every layer), the embeddings as the module docstring says. Returns
    what trains ("all" or "4 of 30"), for the run's metrics."""
    layers = None if train_layers is None else transformer_layers(model, param)
    every = layers is None or train_layers >= len(layers)
    for p in model.parameters():
        p.requires_grad = every
    if not every:
        for layer in layers[len(layers) - train_layers :]:
            layer.requires_grad_(True)
        for name, child in model.base_model.named_children():
            if "norm" in name or name == "ln_f":
                child.requires_grad_(True)
    model.get_input_embeddings().weight.requires_grad = every and not freeze_embeddings
    head = model.get_output_embeddings()
    if head is not None:  # above the layers; may share the input embeddings' weight
        head.weight.requires_grad = not freeze_embeddings
    return "all" if every else f"{train_layers} of {len(layers)}"
