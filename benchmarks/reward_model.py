"""The ``hf-reward`` backend against a bare forward loop over the same pairs, in one run.

A random sequence-classification reward model is built locally (Llama body, one output,
the tokenizer of ``jurist.testing.build_tiny_model``; the size set by ``--hidden`` /
``--layers``) and the same ``N`` pairs (a prompt and two responses of mixed lengths) are
scored by:

1. ``jurist``: ``RewardModelJudge(pairwise=True)`` over ``hf-reward:`` with the default
   batching (32 rows per pass on the CPU, length bucketing): ``judge_sync(items)``, the
   whole path (items checked, both responses' conversations rendered with the chat
   template, queued, batched, forwarded, mapped to a probability);
2. ``bare``: what a user writes with transformers alone: the same 2N chat-templated
   conversations tokenized, cut into batches of 32 in input order, left-padded, one
   ``model(input_ids, attention_mask)`` each, ``logits[:, 0]`` read;
3. ``bare-sorted``: the same with the conversations sorted by length first (the bare
   loop given jurist's bucketing by hand: the prefill floor on this machine).

Reported: pairs per second for each, jurist / bare and jurist / bare-sorted, and the
largest reward difference between jurist's and the bare loop's (they must agree). Run::

    python benchmarks/reward_model.py             # N=256 pairs, hidden 256, 4 layers
    python benchmarks/reward_model.py --quick     # N=32, smoke run
    python benchmarks/reward_model.py --gpu-8b    # an 8B-shaped random bf16 classifier (GPU)

Results go to the terminal and ``benchmarks/results/reward_model-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORDS = tuple(
    [
        "the",
        "answer",
        "is",
        "correct",
        "because",
        "the",
        "capital",
        "of",
        "france",
        "is",
        "paris",
        "and",
        "two",
        "plus",
        "two",
        "is",
        "four",
        "a",
        "judge",
        "reads",
        "the",
        "response",
        "and",
        "the",
        "reference",
        "then",
        "gives",
        "a",
        "score",
        "between",
        "one",
        "and",
        "ten",
    ]
)


def build_model(out: Path, hidden: int, layers: int, *, shape_8b: bool = False) -> Path:
    """A random one-output Llama sequence classifier with the tiny model's tokenizer."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForSequenceClassification

    from jurist.testing import build_tiny_model

    build_tiny_model(out)
    tok = AutoTokenizer.from_pretrained(out)
    torch.manual_seed(0)
    if shape_8b:  # Llama-3.1-8B's shape (Skywork-Reward-V2-Llama-3.1-8B's body)
        dims = {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
        }
    else:
        dims = {
            "hidden_size": hidden,
            "intermediate_size": hidden * 8 // 3 // 64 * 64 or 128,
            "num_hidden_layers": layers,
            "num_attention_heads": max(1, hidden // 64),
            "num_key_value_heads": max(1, hidden // 128),
        }
    config = LlamaConfig(
        vocab_size=len(tok),
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        num_labels=1,
        **dims,
    )
    dtype = torch.bfloat16 if shape_8b else torch.float32
    with torch.device("cuda" if shape_8b else "cpu"):
        model = LlamaForSequenceClassification(config).to(dtype).eval()
    model.save_pretrained(out)
    return out


def make_pairs(n: int, seed: int = 0, scale: int = 1) -> list[dict[str, str]]:
    rng = random.Random(seed)

    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo * scale, hi * scale)))

    return [
        {"prompt": text(5, 40), "response_a": text(3, 120), "response_b": text(3, 120)}
        for _ in range(n)
    ]


def bare_loop(
    model_dir: Path, pairs: list[dict[str, str]], *, sort: bool, device: str, batch: int
) -> tuple[float, list[float]]:
    """Seconds for the bare transformers loop, and its rewards (A, B per pair)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=dtype)
    model = model.to(device).eval()
    tok.padding_side = "left"
    start = time.perf_counter()
    texts = [
        tok.apply_chat_template(
            [{"role": "user", "content": p["prompt"]}, {"role": "assistant", "content": p[k]}],
            tokenize=False,
        )
        for p in pairs
        for k in ("response_a", "response_b")
    ]
    order = list(range(len(texts)))
    if sort:
        lengths = [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]
        order.sort(key=lambda i: -lengths[i])
    rewards = [0.0] * len(texts)
    with torch.inference_mode():
        for s in range(0, len(order), batch):
            rows = order[s : s + batch]
            enc = tok(
                [texts[i] for i in rows],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            ).to(device)
            values = model(**enc).logits[:, 0].float().cpu().tolist()
            for i, v in zip(rows, values, strict=True):
                rewards[i] = v
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, rewards


def jurist_run(
    model_dir: Path, pairs: list[dict[str, str]], *, device: str
) -> tuple[float, list[float]]:
    from jurist.judges import RewardModelJudge
    from jurist.models._hf_reward import HFRewardModel

    model = HFRewardModel(str(model_dir), device=device)
    model.load_sync()
    judge = RewardModelJudge(model, pairwise=True, concurrency=len(pairs))
    judge.judge_sync(pairs[:4])  # warm-up: threads, kernels
    start = time.perf_counter()
    results = judge.judge_sync(pairs)
    seconds = time.perf_counter() - start
    assert results.summary().n_failed == 0, results.summary()
    # the rewards themselves, for the agreement check (after the timing)
    from jurist._sync import run_sync
    from jurist.types import Message, Request

    requests = [
        Request(
            messages=(
                Message(role="user", content=p["prompt"]),
                Message(role="assistant", content=p[k]),
            )
        )
        for p in pairs
        for k in ("response_a", "response_b")
    ]
    done = run_sync(model.complete_many(requests))
    return seconds, [float(c.score or 0.0) for c in done]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--gpu-8b", action="store_true")
    args = parser.parse_args(argv)
    n = 32 if args.quick else args.n
    device = "cuda" if args.gpu_8b else "cpu"
    batch = 256 if args.gpu_8b else 32
    pairs = make_pairs(n, scale=8 if args.gpu_8b else 1)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model(Path(tmp), args.hidden, args.layers, shape_8b=args.gpu_8b)
        bare_s, bare_r = bare_loop(model_dir, pairs, sort=False, device=device, batch=batch)
        sorted_s, _ = bare_loop(model_dir, pairs, sort=True, device=device, batch=batch)
        jurist_s, jurist_r = jurist_run(model_dir, pairs, device=device)
    diff = max(abs(a - b) for a, b in zip(jurist_r, bare_r, strict=True))
    out: dict[str, Any] = {
        "pairs": n,
        "device": device,
        "model": "llama-8b-shape bf16"
        if args.gpu_8b
        else f"hidden {args.hidden}, {args.layers} layers",
        "pairs_per_s": {"jurist": n / jurist_s, "bare": n / bare_s, "bare_sorted": n / sorted_s},
        "jurist_over_bare": bare_s / jurist_s,
        "jurist_over_bare_sorted": sorted_s / jurist_s,
        "max_reward_difference": diff,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }
    for k, v in out["pairs_per_s"].items():
        print(f"{k:>12}: {v:9.1f} pairs/s")
    print(
        f"jurist / bare: {out['jurist_over_bare']:.2f}x; jurist / bare-sorted: "
        f"{out['jurist_over_bare_sorted']:.2f}x; largest reward difference {diff:.2e}"
    )
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (results / f"reward_model-{stamp}.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
