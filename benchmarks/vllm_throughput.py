"""GPU benchmark: the ``vllm:`` in-process engine against ``openai:`` + a vLLM server.

Both paths judge the same items with the same judge (template, sampling, output format) on
the same model and GPU, one after the other in this process:

1. ``openai:``: a ``vllm serve`` subprocess on 127.0.0.1 (or ``--server-url`` of one already
   running), reached by jurist's OpenAI-compatible backend;
2. ``vllm:``: vLLM's async engine in this process (``jurist.get_model("vllm:MODEL")``).

Every judgment is in flight at once (``--concurrency``, default: all items), so the engine's
continuous batching does the batching on both paths. The server is stopped before the
in-process engine starts: the two never share the GPU's memory.

The in-process engine starts with vLLM's offline-batch defaults (``UsageContext.LLM_CLASS``),
the server with its serving defaults: on an H100 they differ in ``max_num_batched_tokens``
(16384 against 8192). Pass ``--engine-arg max_num_batched_tokens=N`` to give both the same
scheduler budget; the JSON records the engine options used.

Reported per path: judgments/s, prompt tokens/s (every prompt token of every judgment, prefix
cache hits included), uncached prompt tokens/s (what the GPU had to prefill), and the ratio of
prompt tokens/s to the **prefill bound**: the prompt tokens/s the GPU does at its FLOP peak,
``peak FLOP/s / (2 x parameters)`` (a forward pass costs about 2 FLOPs per parameter per
token; attention's quadratic term is left out, so the bound is optimistic for long prompts).
``--peak-tflops`` defaults to 989, an H100 SXM's dense bf16 peak; the parameter count is read
from the checkpoint's safetensors headers (or ``--params``).

Run it on a GPU machine with vLLM installed (``pip install 'jurist[vllm]'``)::

    python benchmarks/vllm_throughput.py --model /models/Qwen2.5-7B-Instruct --items 2000
    python benchmarks/vllm_throughput.py --model DIR --server-url http://127.0.0.1:8000
    python benchmarks/vllm_throughput.py --model DIR --dry-run   # checks arguments, no GPU

It prints one JSON object (also written to ``--out`` when given).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

H100_SXM_BF16_DENSE_TFLOPS = 989.0
_TEXT = (
    "the model answer explains a result step by step with care and detail about numbers "
    "cities rivers history science language code tests proofs and evidence from sources"
)
_WORDS = _TEXT.split()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="vllm: in-process engine vs openai: + vLLM server, against the prefill bound"
    )
    p.add_argument("--model", required=True, help="model folder (or hub id with --params)")
    p.add_argument("--items", type=int, default=2000, help="judgments per path (default 2000)")
    p.add_argument(
        "--server-url",
        default=None,
        help="base URL of a running vLLM server (http://HOST:PORT); default: start one",
    )
    p.add_argument("--served-model-name", default=None, help="the server's model name")
    p.add_argument("--port", type=int, default=0, help="port for the started server (0: free)")
    p.add_argument("--server-timeout", type=float, default=900.0, help="seconds to wait for it")
    p.add_argument("--template", default="likert", help="judge template (default likert)")
    p.add_argument("--output", choices=["text", "json"], default="text", help="verdict format")
    p.add_argument("--max-tokens", type=int, default=None, help="judge max_tokens")
    p.add_argument("--response-words", type=int, default=200, help="words per judged answer")
    p.add_argument("--concurrency", type=int, default=None, help="in flight (default: all)")
    p.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an AsyncEngineArgs field for both paths (repeatable), e.g. max_model_len=4096",
    )
    p.add_argument(
        "--peak-tflops",
        type=float,
        default=H100_SXM_BF16_DENSE_TFLOPS,
        help="the GPU's peak TFLOP/s at the model's dtype (default 989: H100 SXM dense bf16)",
    )
    p.add_argument("--params", type=float, default=None, help="parameter count (default: read)")
    p.add_argument("--skip-server", action="store_true", help="only the in-process path")
    p.add_argument("--skip-inprocess", action="store_true", help="only the server path")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    p.add_argument("--dry-run", action="store_true", help="check arguments; no GPU, no vLLM")
    args = p.parse_args(argv)
    if args.items < 1:
        p.error("--items must be at least 1")
    if args.concurrency is not None and args.concurrency < 1:
        p.error("--concurrency must be at least 1")
    if args.peak_tflops <= 0:
        p.error("--peak-tflops must be positive")
    if args.params is not None and args.params <= 0:
        p.error("--params must be positive")
    if args.skip_server and args.skip_inprocess:
        p.error("--skip-server and --skip-inprocess leave nothing to run")
    try:
        args.engine = engine_options(args.engine_arg)
    except ValueError as exc:
        p.error(str(exc))
    if args.params is None:
        try:
            args.params = float(count_params(Path(args.model)))
        except ValueError as exc:
            p.error(f"{exc}; pass --params")
    return args


def engine_options(pairs: list[str]) -> dict[str, Any]:
    """``["max_model_len=4096", "enforce_eager=true"]`` -> typed engine kwargs."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--engine-arg {pair!r}: write KEY=VALUE")
        value: Any
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip().replace("-", "_")] = value
    return out


def count_params(folder: Path) -> int:
    """Parameters of a checkpoint, from its safetensors headers (no weights read)."""
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    if not files:
        raise ValueError(f"no *.safetensors files in {str(folder)!r} to count parameters from")
    total = 0
    for path in files:
        with path.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        for name, meta in header.items():
            if name != "__metadata__":
                total += math.prod(meta["shape"])
    return total


def prefill_bound(params: float, peak_tflops: float) -> float:
    """Prompt tokens/s at the FLOP peak: peak / (2 FLOPs x parameters per token)."""
    return peak_tflops * 1e12 / (2.0 * params)


def make_items(n: int, words: int) -> list[dict[str, str]]:
    """Deterministic, distinct items (a question and an answer of ``words`` words)."""
    items = []
    for i in range(n):
        body = " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(words))
        items.append({"prompt": f"Question {i}: explain result {i % 97}.", "response": body})
    return items


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(args: argparse.Namespace, port: int | str) -> list[str]:
    exe = shutil.which("vllm")
    cmd = [exe] if exe else [sys.executable, "-m", "vllm.entrypoints.cli.main"]
    cmd += ["serve", args.model, "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--enable-prefix-caching", "--disable-log-stats", "--enable-prompt-tokens-details"]
    for key, value in args.engine.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            cmd.append(flag)
        elif value is not False:
            cmd += [flag, value if isinstance(value, str) else json.dumps(value)]
    return cmd


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"vllm serve exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(2.0)
    raise RuntimeError(f"no vLLM server answered at {url} within {timeout:.0f} s")


async def run_path(
    model: Any, args: argparse.Namespace, items: list[dict[str, str]]
) -> dict[str, Any]:
    import jurist

    judge = jurist.LLMJudge(
        model,
        template=args.template,
        output=args.output,
        max_tokens=args.max_tokens,
        concurrency=args.concurrency or len(items),
    )
    await model.prepare()
    await asyncio.gather(*(judge.judge(it) for it in make_items(16, args.response_words)))
    start = time.perf_counter()
    results = await asyncio.gather(*(judge.judge(it) for it in items))
    wall = time.perf_counter() - start
    prompt = sum(j.usage.prompt_tokens for j in results)
    cached = sum(j.usage.cached_tokens for j in results)
    bound = prefill_bound(args.params, args.peak_tflops)
    return {
        "judgments": len(results),
        "failed": sum(j.score is None for j in results),
        "wall_s": wall,
        "judgments_per_s": len(results) / wall,
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "completion_tokens": sum(j.usage.completion_tokens for j in results),
        "prompt_tokens_per_s": prompt / wall,
        "uncached_prompt_tokens_per_s": (prompt - cached) / wall,
        "prefill_bound_tokens_per_s": bound,
        "prefill_bound_judgments_per_s": bound / (prompt / len(results)) if prompt else None,
        "ratio_to_prefill_bound": prompt / wall / bound,
        "uncached_ratio_to_prefill_bound": (prompt - cached) / wall / bound,
    }


async def server_path(args: argparse.Namespace, items: list[dict[str, str]]) -> dict[str, Any]:
    import jurist

    proc: subprocess.Popen[bytes] | None = None
    url = args.server_url
    try:
        if url is None:
            port = args.port or free_port()
            url = f"http://127.0.0.1:{port}"
            proc = subprocess.Popen(server_command(args, port), start_new_session=True)
        url = url.rstrip("/")
        await asyncio.to_thread(wait_ready, url, proc, args.server_timeout)
        name = args.served_model_name or args.model
        model = jurist.get_model(f"openai:{name}", base_url=url + "/v1", api_key="x")
        try:
            out = await run_path(model, args, items)
        finally:
            await model.aclose()
        return {"url": url, **out}
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


async def inprocess_path(args: argparse.Namespace, items: list[dict[str, str]]) -> dict[str, Any]:
    import jurist

    model = jurist.get_model(f"vllm:{args.model}", **args.engine)
    try:
        return await run_path(model, args, items)
    finally:
        await model.aclose()


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    items = make_items(args.items, args.response_words)
    report: dict[str, Any] = {
        "model": args.model,
        "params": args.params,
        "peak_tflops": args.peak_tflops,
        "items": args.items,
        "template": args.template,
        "output": args.output,
        "engine": args.engine,
        "prefill_bound_tokens_per_s": prefill_bound(args.params, args.peak_tflops),
    }
    if not args.skip_server:
        report["openai_server"] = await server_path(args, items)
    if not args.skip_inprocess:
        report["vllm_inprocess"] = await inprocess_path(args, items)
    if "openai_server" in report and "vllm_inprocess" in report:
        report["inprocess_over_server"] = (
            report["vllm_inprocess"]["judgments_per_s"] / report["openai_server"]["judgments_per_s"]
        )
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.dry_run:
        plan = {
            "dry_run": True,
            "model": args.model,
            "params": args.params,
            "items": args.items,
            "engine": args.engine,
            "prefill_bound_tokens_per_s": prefill_bound(args.params, args.peak_tflops),
            "server_command": None
            if args.server_url
            else server_command(args, args.port or "FREE_PORT"),
        }
        print(json.dumps(plan, indent=2))
        return 0
    report = asyncio.run(main_async(args))
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
