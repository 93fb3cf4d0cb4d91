"""Write a GGUF file from the tiny transformers model, offline, with the ``gguf`` package.

llama.cpp's own converter ships only inside the llama-cpp-python source package (a
download); this module writes the same file directly: Llama architecture tensors in
float32 (Q and K rows permuted from Hugging Face's rotate-half layout to llama.cpp's
interleaved rope), and the byte-level BPE tokenizer as ``tokenizer.ggml.model = "gpt2"``
with the ``"qwen2"`` pre-tokenizer, which matches the split rule the tiny tokenizer was
trained with. Served by llama.cpp, it gives the same token ids and logprobs as the
transformers model.

Run ``python -m jurist.testing.gguf MODEL_DIR OUT.gguf`` to convert one.

Needs ``gguf`` and ``numpy`` (the ``dev`` extra) and ``safetensors`` (the ``hf`` extra).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["convert_tiny_to_gguf"]

_LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def _permute(weights: Any, n_head: int) -> Any:
    """Reorder Q/K rows from rotate-half rope (HF) to interleaved rope (llama.cpp)."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def _gguf_name(hf_name: str) -> str | None:
    if hf_name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf_name == "model.norm.weight":
        return "output_norm.weight"
    if hf_name == "lm_head.weight":
        return "output.weight"
    prefix = "model.layers."
    if hf_name.startswith(prefix):
        layer, _, rest = hf_name[len(prefix) :].partition(".")
        if rest in _LAYER_TENSORS:
            return f"blk.{layer}.{_LAYER_TENSORS[rest]}"
    return None


def _chat_template(model_dir: Path) -> str | None:
    jinja = model_dir / "chat_template.jinja"
    if jinja.exists():
        return jinja.read_text(encoding="utf-8")
    config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = config.get("chat_template")
    return template if isinstance(template, str) else None


def convert_tiny_to_gguf(model_dir: str | Path, out_path: str | Path) -> Path:
    """Convert a Llama-architecture model with a byte-level BPE tokenizer to GGUF (f32).

    Made for the model :func:`jurist.testing.build_tiny_model` writes (any small Llama
    checkpoint in one ``model.safetensors`` with a ``tokenizer.json`` of the same kind
    works). Returns ``out_path``.
    """
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    src = Path(model_dir)
    out = Path(out_path)
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "llama":
        raise ValueError(
            f"{src / 'config.json'}: model_type {config.get('model_type')!r} is not 'llama'"
        )
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    tok_config = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))

    n_head = int(config["num_attention_heads"])
    n_kv = int(config.get("num_key_value_heads") or n_head)
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // n_head)
    rope = config.get("rope_parameters") or {}
    rope_theta = float(rope.get("rope_theta", config.get("rope_theta", 10000.0)))

    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name(src.name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(int(config["vocab_size"]))
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(hidden)
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))

    # Tokenizer: every id in order, special added tokens as control tokens.
    vocab: dict[str, int] = dict(tok["model"]["vocab"])
    special: dict[int, bool] = {}
    for added in tok.get("added_tokens", []):
        vocab[added["content"]] = int(added["id"])
        special[int(added["id"])] = bool(added.get("special"))
    by_id = {i: t for t, i in vocab.items()}
    n_vocab = int(config["vocab_size"])
    tokens: list[str] = []
    types: list[int] = []
    for i in range(n_vocab):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif i in special:
            tokens.append(by_id[i])
            types.append(gguf.TokenType.CONTROL if special[i] else gguf.TokenType.USER_DEFINED)
        else:
            tokens.append(by_id[i])
            types.append(gguf.TokenType.NORMAL)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    eos = vocab[tok_config["eos_token"]] if tok_config.get("eos_token") else config["eos_token_id"]
    writer.add_eos_token_id(int(eos))
    pad = tok_config.get("pad_token")
    if pad is not None:
        writer.add_pad_token_id(vocab[pad])
        # Qwen2 convention: <|endoftext|> doubles as BOS, which is never added.
        writer.add_bos_token_id(vocab[pad])
    writer.add_add_bos_token(False)
    template = _chat_template(src)
    if template is not None:
        writer.add_chat_template(template)

    for name, array in load_file(str(src / "model.safetensors")).items():
        target = _gguf_name(name)
        if target is None:
            raise ValueError(f"{src / 'model.safetensors'}: unexpected tensor {name!r}")
        data = array.astype(np.float32)
        if name.endswith("q_proj.weight"):
            data = _permute(data, n_head)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, n_kv)
        writer.add_tensor(target, np.ascontiguousarray(data))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


if __name__ == "__main__":  # pragma: no cover - command-line entry
    if len(sys.argv) != 3:
        sys.exit("usage: python -m jurist.testing.gguf MODEL_DIR OUT.gguf")
    print(convert_tiny_to_gguf(sys.argv[1], sys.argv[2]))
