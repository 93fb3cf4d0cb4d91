"""Build a tiny, randomly initialised causal LM with a locally trained tokenizer, offline.

The model is a real ``transformers`` checkpoint (Llama architecture, about 100k parameters,
a byte-level BPE tokenizer with Qwen2's split rule and a ChatML chat template) that any
code path loading models from a folder can use, with no download. Its outputs are random
but deterministic: it exists to test loading, batching, generation and logprob code.

Run ``python -m jurist.testing.tiny_model OUT_DIR`` to write one (``--reward``: a tiny
scalar reward model instead, the same body under a one-output sequence-classification head,
for the ``hf-reward`` backend).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["build_tiny_model", "build_tiny_reward_model"]

_TEXT = (
    "You are an impartial judge. Rate the answer on a scale of 1 to 5 or 1 to 10. "
    "Score: 1 2 3 4 5 6 7 8 9 10. Rating: [[7]]. [RESULT] 4. Reply Yes or No. "
    "The answer is Correct or Incorrect. I am not sure. "
    "Question: What is the capital of France? Proposed Answer: Paris. Reference: Paris. "
    'Output JSON like {"score": 3, "explanation": "fine"}. '
    "system user assistant The quick brown fox jumps over the lazy dog. "
    "\nYes\nNo\nCorrect\nIncorrect\nA\nB\ntie\n"
)
_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2's pre-tokenizer rule (digits split one by one), so llama.cpp's "qwen2" pre-tokenizer
# reproduces the same tokens from a GGUF conversion.
_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# A hybrid thinker's template, after Qwen3's: enable_thinking=False writes an empty thinking
# block, True opens one for the model to fill (as thinking-only templates do), and left
# unset the prompt is plain ChatML.
_THINKING_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
    "{% if enable_thinking is defined and enable_thinking is false %}"
    "{{ '<think>\n\n</think>\n\n' }}"
    "{% elif enable_thinking is defined %}{{ '<think>\n' }}{% endif %}"
    "{% endif %}"
)


def build_tiny_reward_model(
    out_dir: str | Path, *, seed: int = 0, vocab_size: int = 600, hidden_size: int = 64
) -> Path:
    """Write a tiny random scalar reward model (``LlamaForSequenceClassification`` with
    ``num_labels=1``) and its tokenizer to ``out_dir`` and return the folder."""
    return build_tiny_model(
        out_dir, seed=seed, vocab_size=vocab_size, reward=True, hidden_size=hidden_size
    )


def build_tiny_model(
    out_dir: str | Path,
    *,
    seed: int = 0,
    vocab_size: int = 600,
    thinking: bool = False,
    reward: bool = False,
    hidden_size: int = 64,
) -> Path:
    """Write a tiny model and tokenizer to ``out_dir`` and return the folder
    (``reward=True``: a one-output sequence classifier, a scalar reward model).

    ``thinking``: a hybrid thinker's chat template with an ``enable_thinking`` switch (after
    Qwen3's) and ``<think>`` / ``</think>`` as tokens of their own. Needs the ``hf`` extra
    (torch, transformers, tokenizers); takes a few seconds.
    """
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import (
        GenerationConfig,
        LlamaConfig,
        LlamaForCausalLM,
        LlamaForSequenceClassification,
        PreTrainedTokenizerFast,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIAL,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator([_TEXT * 40], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        chat_template=_THINKING_TEMPLATE if thinking else _CHAT_TEMPLATE,
        model_max_length=2048,
        padding_side="left",
    )
    if thinking:
        tokenizer.add_tokens(["<think>", "</think>"])
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        rms_norm_eps=1e-6,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    if reward:
        config.num_labels = 1
        head = LlamaForSequenceClassification(config).eval()  # type: ignore[no-untyped-call]
        head.save_pretrained(out)
        tokenizer.save_pretrained(out)
        return out
    model = LlamaForCausalLM(config).eval()  # type: ignore[no-untyped-call]
    model.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


if __name__ == "__main__":  # pragma: no cover - command-line entry
    args = sys.argv[1:]
    want_reward = "--reward" in args
    args = [a for a in args if a != "--reward"]
    if len(args) != 1:
        sys.exit("usage: python -m jurist.testing.tiny_model [--reward] OUT_DIR")
    print(build_tiny_model(args[0], reward=want_reward))
