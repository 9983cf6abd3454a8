"""A tiny random Llama as a GGUF file, for llama.cpp (the default round trip's runtime).

Why: on a CPU the round trip runs the packaged gemma-3 GGUF on llama.cpp, a path the
tiny transformers models cannot take. The `gguf` package writes the same file format
llama.cpp's own converter writes: this saves a transformers Llama (e.g.
`build_tiny_model("llama", ...)`) with its byte-level BPE tokenizer as a GGUF that
llama.cpp loads, tokenizes identically and scores to within float error of transformers
(tests/pipeline/test_paper_presets.py checks both).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _permute(weight: np.ndarray, n_head: int) -> np.ndarray:
    """q/k rows reordered from transformers' rotate-half RoPE layout to GGML's interleaved
    one, as llama.cpp's convert_hf_to_gguf does for Llama."""
    return (
        weight.reshape(n_head, 2, weight.shape[0] // n_head // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def _tokenizer(writer, tok) -> None:
    """The byte-level BPE vocabulary and merges, as llama.cpp's `gpt2` tokenizer model."""
    import gguf

    spec = json.loads(tok.backend_tokenizer.to_str())
    vocab, merges = spec["model"]["vocab"], spec["model"]["merges"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    added = {a["content"] for a in spec["added_tokens"]}
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    kinds = gguf.TokenType
    writer.add_token_types([kinds.CONTROL if t in added else kinds.NORMAL for t in tokens])
    writer.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    writer.add_bos_token_id(tok.bos_token_id)
    writer.add_eos_token_id(tok.eos_token_id)


def write_llama_gguf(model_dir: str | Path, out_file: str | Path) -> Path:
    """Save the (tied-embedding) Llama in model_dir as an fp32 GGUF file; return it."""
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    c = model.config
    writer = gguf.GGUFWriter(str(out_file), "llama")
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_block_count(c.num_hidden_layers)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    writer.add_rope_dimension_count(c.hidden_size // c.num_attention_heads)
    writer.add_rope_freq_base(float((c.rope_parameters or {}).get("rope_theta", 10000.0)))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    _tokenizer(writer, AutoTokenizer.from_pretrained(str(model_dir)))
    sd = {k: v.float().numpy() for k, v in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    writer.add_tensor("output_norm.weight", sd["model.norm.weight"])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}  # fmt: skip
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        for hf, gg in names.items():
            writer.add_tensor(f"blk.{i}.{gg}.weight", sd[f"{p}{hf}.weight"])
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        writer.add_tensor(f"blk.{i}.attn_q.weight", _permute(q, c.num_attention_heads))
        writer.add_tensor(f"blk.{i}.attn_k.weight", _permute(k, c.num_key_value_heads))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(out_file)
