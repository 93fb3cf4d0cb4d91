"""GPU benchmark: the ``hf`` backend judging at the prefill bound, on a random 8B Llama.

Weights cannot be fetched, so the model is a Llama-3-8B-shaped ``LlamaConfig`` (hidden 4096,
32 layers, 32 heads, 8 KV heads, MLP 14336, vocabulary 128256: 8.03B parameters) built
with random bfloat16 weights directly on the GPU, and the tokenizer is the one
:func:`jurist.testing.build_tiny_model` trains offline. The FLOPs, memory traffic and
batching of such a model are those of a trained one; its verdicts are noise, so only speed
is measured. The model is handed to jurist in memory (:meth:`HFModel.from_objects`).

The same ``--n`` likert items (answers sized so that each judge prompt is about
``--prompt-tokens`` tokens) go through, one path after the other in this process:

1. ``logprobs``: ``LLMJudge(scoring="logprobs")``: one prefill per judgment scores the five
   verdicts; no token is decoded.
2. ``generate``: ``LLMJudge(scoring="parse", max_tokens=K)`` for short verdicts (K = 2, the
   best case of a bare verdict and its end token, and 8): prefill, then K - 1 decode steps.
   A random model's verdicts rarely parse; that costs nothing extra.
3. ``bare``: the same rendered prompts through a plain transformers loop, no jurist code:
   tokenizer(batch, padding) -> ``model(..., use_cache=False, logits_to_keep=1)`` ->
   log-softmax of the five verdict tokens -> ``.cpu()``, prompts sorted by length, in batches
   of the rows per pass jurist chose (and of half and twice that).

All items are in flight at once (``concurrency=n``). Reported per path: judgments/s, prompt
tokens/s, the share of the **prefill bound** (prompt tokens/s at the GPU's peak:
``peak bf16 FLOP/s / (2 x parameters)``; ``--peak-tflops``, default 989 for an H100/H200 SXM,
dense bf16 by the datasheet; also against the bf16 matrix-product rate measured in the run),
the ratio to the bare loop, the forward passes' shapes and the peak GPU memory
(``torch.cuda.max_memory_allocated``). Run on a GPU machine::

    PYTHONUNBUFFERED=1 python benchmarks/gpu_judging.py --out results.json
    python benchmarks/gpu_judging.py --preset tiny --device cpu --n 16   # smoke run, no GPU

It prints a table and writes the JSON to ``--out`` (default
``benchmarks/results/gpu_judging-<time>.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATASHEET_BF16_TFLOPS = 989.0  # H100 / H200 SXM, dense bf16
PRESETS: dict[str, dict[str, Any]] = {
    # Llama-3-8B's shape
    "8b": {
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "rope_theta": 500000.0,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": False,
    },
    # a CPU smoke run of this script
    "tiny": {
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 4096,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
    },
}
_TEXT = (
    "the answer explains a result step by step with care about the capital of France and "
    "the quick brown fox that jumps over the lazy dog so the judge can rate it on a scale"
)
_WORDS = _TEXT.split(" ")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="8b")
    p.add_argument("--device", default="cuda")
    p.add_argument("--n", type=int, default=512, help="judgments per path (default 512)")
    p.add_argument("--prompt-tokens", type=int, default=500, help="judge prompt size")
    p.add_argument("--reps", type=int, default=2, help="timed runs of the main paths")
    p.add_argument("--generate-caps", default="2,8", help="max_tokens of the generate runs")
    p.add_argument(
        "--budgets",
        default="32768",
        help="extra logprobs runs with these max_batch_tokens (comma-separated; '' for none)",
    )
    p.add_argument("--peak-tflops", type=float, default=DATASHEET_BF16_TFLOPS)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.n < 8:
        p.error("--n must be at least 8")
    args.caps = [int(c) for c in args.generate_caps.split(",") if c.strip()]
    args.extra_budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    return args


def build(args: argparse.Namespace, tmp: Path) -> tuple[Any, Any, float]:
    """The offline tokenizer and a random model of the preset's shape, on the device."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from jurist.testing import build_tiny_model

    tok = AutoTokenizer.from_pretrained(build_tiny_model(tmp / "tok"))
    config = LlamaConfig(
        **PRESETS[args.preset],
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    cuda = args.device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    torch.manual_seed(0)
    start = time.perf_counter()
    attention = {"attn_implementation": "sdpa"} if cuda else {}
    with torch.device(args.device):
        model = LlamaForCausalLM._from_config(config, dtype=dtype, **attention)
    if cuda:
        torch.cuda.synchronize()
    return tok, model.eval(), time.perf_counter() - start


def matmul_tflops(device: str) -> float | None:
    """bf16 8192^3 products on random data: the median of 10 after 3 warm-ups."""
    import torch

    if not device.startswith("cuda"):
        return None
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    times = []
    for i in range(13):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) / 1000)
    del a, b
    torch.cuda.empty_cache()
    return 2 * 8192**3 / statistics.median(times) / 1e12


def make_items(n: int, words: int) -> list[dict[str, str]]:
    return [
        {
            "prompt": f"Question {i}: what is the capital of France, and why? (case {i % 97})",
            "response": " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(words))
            + f" (answer {i})",
        }
        for i in range(n)
    ]


def render(judge: Any, tok: Any, data: list[dict[str, str]]) -> list[str]:
    return [
        tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in judge.messages(item)],
            tokenize=False,
            add_generation_prompt=True,
        )
        for item in data
    ]


def sized_items(judge: Any, tok: Any, n: int, target: int) -> list[dict[str, str]]:
    """Items whose judge prompts are about ``target`` tokens."""
    words = 100
    for _ in range(3):
        probe = render(judge, tok, make_items(8, words))
        mean = statistics.mean(len(tok(t, add_special_tokens=False)["input_ids"]) for t in probe)
        words = max(1, round(words * target / mean))
    return make_items(n, words)


class PassLog:
    """Shapes of the model's forward passes (a pre-hook: no sync, no copy)."""

    def __init__(self, model: Any) -> None:
        self.shapes: list[tuple[int, int]] = []
        self.real = 0
        self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, _module: Any, args: Any, kwargs: Any) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None:
            self.shapes.append((int(ids.shape[0]), int(ids.shape[1])))

    def take(self) -> dict[str, Any]:
        prefill = [s for s in self.shapes if s[1] > 1]
        self.shapes = []
        if not prefill:
            return {}
        return {
            "prefill_passes": len(prefill),
            "decode_steps": 0,
            "rows_per_pass_mean": statistics.mean(r for r, _ in prefill),
            "rows_per_pass_max": max(r for r, _ in prefill),
            "padded_tokens_per_pass_mean": statistics.mean(r * w for r, w in prefill),
        }


def run_judge(judge: Any, data: list[dict[str, str]], torch: Any, cuda: bool) -> dict[str, Any]:
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    res = judge.judge_sync(data, concurrency=len(data))
    wall = time.perf_counter() - start
    judgments = list(res)
    prompt = sum(j.usage.prompt_tokens for j in judgments)
    return {
        "wall_s": wall,
        "judgments": len(judgments),
        "failed": res.n_failed,
        "calls": sum(j.usage.calls for j in judgments),
        "prompt_tokens": prompt,
        "completion_tokens": sum(j.usage.completion_tokens for j in judgments),
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
    }


def run_bare(
    model: Any, tok: Any, texts: list[str], rows: int, verdicts: list[int], torch: Any, cuda: bool
) -> dict[str, Any]:
    ordered = sorted(texts, key=len, reverse=True)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    prompt = 0
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(ordered), rows):
            enc = tok(
                ordered[i : i + rows], return_tensors="pt", padding=True, add_special_tokens=False
            )
            prompt += int(enc["attention_mask"].sum())
            enc = enc.to(model.device)
            logits = model(**enc, use_cache=False, logits_to_keep=1).logits
            torch.log_softmax(logits[:, -1].float(), dim=-1)[:, verdicts].cpu()
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "judgments": len(texts),
        "rows": rows,
        "prompt_tokens": prompt,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
    }


def rates(row: dict[str, Any], bound: float) -> dict[str, Any]:
    row["judgments_per_s"] = row["judgments"] / row["wall_s"]
    row["prompt_tokens_per_s"] = row["prompt_tokens"] / row["wall_s"]
    row["share_of_prefill_bound"] = row["prompt_tokens_per_s"] / bound
    return row


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    top = dict(min(runs, key=lambda r: r["wall_s"]))
    top["walls_s"] = [r["wall_s"] for r in runs]
    return top


def save(report: dict[str, Any], paths: dict[str, Any], out: Path | None) -> Path:
    """Write what was measured so far (a run cut short still leaves its numbers)."""
    out = out or HERE / "results" / f"gpu_judging-{STARTED}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**report, "paths": paths}, indent=2) + "\n", encoding="utf-8")
    if paths:
        name, row = next(reversed(paths.items()))
        print(f"{name}: {row['judgments_per_s']:.1f} judgments/s", flush=True)
    return out


STARTED = time.strftime("%Y%m%d-%H%M%S")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch
    import transformers

    import jurist
    from jurist.models._hf import HFModel

    cuda = args.device.startswith("cuda")
    report: dict[str, Any] = {
        "argv": sys.argv[1:],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "gpu": torch.cuda.get_device_name() if cuda else None,
    }
    report["measured_matmul_tflops"] = matmul_tflops(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        tok, model, build_s = build(args, Path(tmp))
    params = sum(p.numel() for p in model.parameters())
    bound = args.peak_tflops * 1e12 / (2 * params)
    report.update(
        preset=args.preset,
        params=params,
        build_s=build_s,
        weights_gib=torch.cuda.memory_allocated() / 2**30 if cuda else None,
        peak_tflops=args.peak_tflops,
        prefill_bound_tokens_per_s=bound,
        attn_implementation=model.config._attn_implementation,
        dtype=str(model.dtype),
    )
    if report["measured_matmul_tflops"]:
        report["measured_bound_tokens_per_s"] = (
            report["measured_matmul_tflops"] * 1e12 / (2 * params)
        )
    print(json.dumps(report), flush=True)

    hf = HFModel.from_objects(model, tok, name=f"random-llama-{args.preset}")
    scorer = jurist.LLMJudge(hf, template="likert", scoring="logprobs", low_coverage="flag")
    data = sized_items(scorer, tok, args.n, args.prompt_tokens)
    texts = render(scorer, tok, data)
    widths = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    lm = hf._ensure_loaded()
    budget = hf.limits.token_budget(lm.model, lm.device)
    rows = min(hf.limits.max_rows, (budget or 10**9) // max(widths))
    verdicts = [tok.convert_tokens_to_ids(str(v)) for v in range(1, 6)]
    report.update(
        n=args.n,
        prompt_tokens_mean=statistics.mean(widths),
        prompt_tokens_min=min(widths),
        prompt_tokens_max=max(widths),
        jurist_max_batch_size=hf.limits.max_rows,
        jurist_token_budget=budget,
        jurist_rows_per_pass=rows,
    )
    log = PassLog(model)
    warm = data[: min(len(data), 2 * rows)]
    scorer.judge_sync(warm, concurrency=len(warm))  # warm-up: kernels, allocator, tokenizer
    run_bare(model, tok, texts[: len(warm)], rows, verdicts, torch, cuda)
    log.take()

    paths: dict[str, dict[str, Any]] = {}
    lp_runs, bare_runs = [], []
    for _ in range(args.reps):  # the two main paths take turns
        lp_runs.append(run_judge(scorer, data, torch, cuda))
        lp_runs[-1]["passes"] = log.take()
        bare_runs.append(run_bare(model, tok, texts, rows, verdicts, torch, cuda))
        log.take()
    paths["logprobs"] = rates(best(lp_runs), bound)
    paths[f"bare, {rows} rows"] = rates(best(bare_runs), bound)
    for r in sorted({max(1, rows // 2), rows * 2}):
        paths[f"bare, {r} rows"] = rates(
            run_bare(model, tok, texts, r, verdicts, torch, cuda), bound
        )
        log.take()
    save(report, paths, args.out)
    for extra in args.extra_budgets:
        other = HFModel.from_objects(model, tok, name=hf.name, max_batch_tokens=extra)
        judge = jurist.LLMJudge(other, template="likert", scoring="logprobs", low_coverage="flag")
        judge.judge_sync(warm, concurrency=len(warm))
        log.take()
        run = run_judge(judge, data, torch, cuda)
        run["passes"] = log.take()
        paths[f"logprobs, max_batch_tokens={extra}"] = rates(run, bound)
        save(report, paths, args.out)
        asyncio.run(other.aclose())
    for cap in args.caps:
        gen = jurist.LLMJudge(hf, template="likert", max_tokens=cap, output="text")
        gen.judge_sync(warm[:rows], concurrency=rows)
        log.take()
        run = run_judge(gen, data, torch, cuda)
        shapes = [s for s in log.shapes if s[1] == 1]
        run["passes"] = log.take()
        run["passes"]["decode_steps"] = len(shapes)
        paths[f"generate, max_tokens={cap}"] = rates(run, bound)
        save(report, paths, args.out)
    if cuda:
        report["peak_gib_overall"] = torch.cuda.max_memory_reserved() / 2**30
    lp = paths["logprobs"]
    ref = paths[f"bare, {rows} rows"]
    report["logprobs_over_bare"] = lp["judgments_per_s"] / ref["judgments_per_s"]
    report["logprobs_over_best_bare"] = lp["judgments_per_s"] / max(
        v["judgments_per_s"] for k, v in paths.items() if k.startswith("bare")
    )
    if "measured_bound_tokens_per_s" in report:
        report["logprobs_share_of_measured_bound"] = (
            lp["prompt_tokens_per_s"] / report["measured_bound_tokens_per_s"]
        )

    print(
        f"\n{report['gpu'] or 'cpu'}: random Llama {params / 1e9:.2f}B params, {report['dtype']}, "
        f"{report['attn_implementation']} attention; n={args.n}, prompts "
        f"{report['prompt_tokens_mean']:.0f} tokens (min {min(widths)}, max {max(widths)}); "
        f"prefill bound {bound:,.0f} tokens/s at {args.peak_tflops:g} TFLOP/s"
    )
    print(f"{'path':<34}{'judg/s':>9}{'tok/s':>11}{'bound':>8}{'peak GiB':>10}")
    for name, row in paths.items():
        peak = "-" if row["peak_gib"] is None else f"{row['peak_gib']:.1f}"
        print(
            f"{name:<34}{row['judgments_per_s']:>9.1f}{row['prompt_tokens_per_s']:>11,.0f}"
            f"{row['share_of_prefill_bound']:>8.1%}{peak:>10}"
        )
    print(f"logprobs / bare loop ({rows} rows): {report['logprobs_over_bare']:.3f}")
    print(f"results: {save(report, paths, args.out)}")
    asyncio.run(hf.aclose())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
