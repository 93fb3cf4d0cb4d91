"""Logprob scoring against generate-then-parse on the ``hf`` backend, in one run.

A random Llama-architecture model is built locally (no download; the tokenizer of
``jurist.testing.build_tiny_model``, the size set by ``--hidden`` / ``--layers``) and the
same ``N`` likert items are judged by:

1. ``generate``: ``LLMJudge(scoring="parse")``, greedy generation then parsing. A random
   model never stops by itself, so generation runs to ``max_tokens``; two caps are shown:
   2 tokens (the best case of a real judge answering a bare verdict and its end token)
   and the template's default cap.
2. ``logprobs``: ``LLMJudge(scoring="logprobs")``: the answer is the bare verdict, so no
   text is generated; one forward pass scores the five verdicts of every item.
3. ``bound``: the same prompts' bare forward passes (``model(input_ids)`` over left-padded
   batches of the judge's batch size, last position's logits only, no jurist code), the
   floor for any method that reads the prompt, on this machine.

Reported: judgments per second for each, the logprobs / generate ratios, and logprobs /
bound (how close jurist's scoring gets to the bare forward pass). The random model's
verdicts are noise: only the speed is measured (generate-then-parse mostly fails to
parse, which costs nothing extra). Run::

    python benchmarks/logprobs.py            # N=256, hidden 256, 4 layers
    python benchmarks/logprobs.py --quick    # N=32, smoke run

Results go to the terminal and ``benchmarks/results/logprobs-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def build_model(out: Path, hidden: int, layers: int) -> Path:
    """The tiny model's tokenizer with a larger random Llama body."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from jurist.testing import build_tiny_model

    build_tiny_model(out)
    tok = AutoTokenizer.from_pretrained(out)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3 // 64 * 64 or 128,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 128),
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = LlamaForCausalLM(config).eval()
    model.save_pretrained(out)
    return out


def items(n: int) -> list[dict[str, str]]:
    topics = ["France", "Peru", "Japan", "Kenya", "Norway", "Chile", "Egypt", "India"]
    return [
        {
            "prompt": f"What is the capital of {topics[i % len(topics)]}? (question {i})",
            "response": f"I believe the answer is city number {i}, a large and old capital.",
        }
        for i in range(n)
    ]


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def bound_seconds(model_dir: Path, judge: Any, data: list[dict[str, str]], batch: int) -> float:
    """Bare forward passes over the judge's prompts, batched like the backend batches."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    lm = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    texts = [
        tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in judge.messages(item)],
            tokenize=False,
            add_generation_prompt=True,
        )
        for item in data
    ]
    with torch.inference_mode():  # warm up, as the judges are
        lm(**tok(texts[:batch], return_tensors="pt", padding=True), use_cache=False)
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch):
            enc = tok(texts[i : i + batch], return_tensors="pt", padding=True)
            lm(**enc, use_cache=False, logits_to_keep=1)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    n = 32 if args.quick else args.n
    if args.quick:
        args.reps = 1

    import torch

    import jurist

    data = items(n)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model(Path(tmp) / "model", args.hidden, args.layers)
        params = sum(
            p.numel()
            for p in __import__("transformers")
            .AutoModelForCausalLM.from_pretrained(model_dir)
            .parameters()
        )
        model = jurist.get_model(f"hf:{model_dir}", max_batch_size=args.batch)
        jurist.LLMJudge(model, template="likert").judge_sync(data[:4])  # load, warm up
        default_cap = jurist.get_template("likert").max_tokens
        judges = {
            "generate, 2 tokens": jurist.LLMJudge(
                model, template="likert", max_tokens=2, concurrency=args.batch
            ),
            f"generate, {default_cap} tokens": jurist.LLMJudge(
                model, template="likert", concurrency=args.batch
            ),
            # a random model puts little mass on the verdicts: flagged, not failed, so
            # "scored" still counts the items weighed (see docs/scoring.md, coverage)
            "logprobs (one pass)": jurist.LLMJudge(
                model,
                template="likert",
                scoring="logprobs",
                low_coverage="flag",
                concurrency=args.batch,
            ),
        }
        # the modes take turns, each run --reps times; the best time of each is kept (the
        # machine may be shared: the minimum is the least disturbed run)
        best: dict[str, float] = {}
        scored: dict[str, int] = {}
        for _ in range(args.reps):
            for label, judge in judges.items():
                secs, res = timed(lambda j=judge: j.judge_sync(data))
                best[label] = min(best.get(label, float("inf")), secs)
                scored[label] = n - res.n_failed
                if label.startswith("logprobs"):
                    assert all(j.scoring == "logprobs" and j.distribution for j in res)
            bound = bound_seconds(model_dir, judges["logprobs (one pass)"], data, args.batch)
            best["bound (bare forward)"] = min(best.get("bound (bare forward)", 1e9), bound)
        rows: dict[str, dict[str, Any]] = {
            k: {"seconds": v, "jps": n / v, "scored": scored.get(k)} for k, v in best.items()
        }

    lp = rows["logprobs (one pass)"]["jps"]
    ratios = {f"logprobs / {k}": lp / v["jps"] for k, v in rows.items() if k.startswith("generate")}
    ratios["logprobs / bound"] = lp / rows["bound (bare forward)"]["jps"]
    print(
        f"hf backend, random Llama {params / 1e6:.1f}M params, N={n}, batch {args.batch}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    print(f"{'mode':<24}{'seconds':>10}{'judgments/s':>14}")
    for k, v in rows.items():
        print(f"{k:<24}{v['seconds']:>10.2f}{v['jps']:>14.1f}")
    for k, v in ratios.items():
        print(f"{k:<40}{v:>8.2f}x")
    out = HERE / "results" / f"logprobs-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "n": n,
                "params": params,
                "hidden": args.hidden,
                "layers": args.layers,
                "batch": args.batch,
                "rows": rows,
                "ratios": ratios,
                "python": sys.version.split()[0],
                "machine": platform.platform(),
            },
            indent=2,
        )
    )
    print(f"results: {out.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
