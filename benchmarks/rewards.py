"""Rewards at training speed: 1,024 rollouts judged by a judge that answers after 200 ms.

The stub OpenAI-compatible server (``_stub_server.py``, a process of its own) answers every
``/v1/chat/completions`` after ``--latency`` seconds (0.2) with ``Score: 0.8``. Against it:

1. **per-sample loop**: ``jurist.rewards.compute_score`` called once per rollout, one after
   another, as verl's naive reward manager calls a sync ``compute_score``. Run on a subset
   (``--loop-n``, 32) and extrapolated linearly to ``n``: the loop is strictly sequential,
   so each call costs the same.
2. **batch**: ``jurist.rewards.batch_compute_score`` over all ``n`` at concurrency 256 (the
   call verl's batch reward manager makes). Targets: at least 50x faster than the
   extrapolated loop, and within 1.3x of the latency bound ``n / 256 x latency`` (0.8 s).
   The judge is cached, so the first call also opens the connection pool: a warm-up batch
   of 256 runs first (as every training step after the first finds the pool open), and
   the figure is the median of ``--repeats`` (3) timed batches; the first (cold) call is
   reported too. Shown next to it without a target: the transport floor, bare aiohttp
   posting ``n`` prebuilt bodies at the same concurrency (what the machine's network stack
   and event loop cost before any judging).
3. **server**: the same ``n`` through ``jurist serve-reward`` (a subprocess, ``--concurrency
   256``), sent by 8 concurrent clients of ``n / 8`` items each to ``POST /v1/rewards``.
   Target: within 1.3x of the in-process batch (2). Skipped, with a message, when the
   ``serve-reward`` command is not available.

Every run checks correctness: every score is 0.8 with no failure, and the server's request
count grows by exactly one request per judgment.

Run::

    python benchmarks/rewards.py            # about 15 s
    python benchmarks/rewards.py --quick    # n 256, loop 8
    python benchmarks/rewards.py --help

Results: the terminal (PASS/FAIL per target) and ``benchmarks/results/rewards-<time>.json``.
The exit status is 1 when a target fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stub_server import StubServer

from jurist.rewards import batch_compute_score, compute_score

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
VERDICT = "Score: 0.8"
SPEEDUP_TARGET = 50.0
BOUND_RATIO_TARGET = 1.3
SERVER_RATIO_TARGET = 1.3


def rollouts(n: int, tag: str) -> tuple[list[str], list[str], list[str], list[dict[str, str]]]:
    """``n`` distinct rollouts (distinct so nothing is coalesced or cached)."""
    sols = [f"{tag} rollout {i}: the answer is {i % 97}" for i in range(n)]
    refs = [str(i % 89) for i in range(n)]
    infos = [{"question": f"{tag} question {i}?"} for i in range(n)]
    return ["bench"] * n, sols, refs, infos


def stub_count(server: StubServer) -> int:
    with urllib.request.urlopen(f"{server.url}/stats", timeout=10) as resp:
        return int(json.load(resp)["count"])


def check(scores: list[dict[str, Any]], n: int, what: str) -> None:
    bad = [s for s in scores if s["score"] != 0.8 or s["failed"]]
    if len(scores) != n or bad:
        raise SystemExit(f"{what}: {len(bad)} of {len(scores)} scores are wrong: {bad[:3]}")


def run_loop(kwargs: dict[str, Any], n: int) -> float:
    src, sols, refs, infos = rollouts(n, "loop")
    start = time.perf_counter()
    out = [compute_score(src[i], sols[i], refs[i], infos[i], **kwargs) for i in range(n)]
    wall = time.perf_counter() - start
    check(out, n, "per-sample loop")
    return wall


def run_batch(kwargs: dict[str, Any], n: int, tag: str) -> float:
    src, sols, refs, infos = rollouts(n, tag)
    start = time.perf_counter()
    out = batch_compute_score(src, sols, refs, infos, **kwargs)
    wall = time.perf_counter() - start
    check(out, n, f"batch {tag}")
    return wall


async def floor_once(base_url: str, n: int, concurrency: int, tag: str) -> float:
    """Bare aiohttp posting ``n`` prebuilt request bodies, ``concurrency`` at once."""
    bodies = [
        json.dumps(
            {
                "model": "x",
                "messages": [{"role": "user", "content": f"{tag} rollout {i} " * 40}],
                "max_tokens": 10,
            }
        ).encode()
        for i in range(n)
    ]
    sem = asyncio.Semaphore(concurrency)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer x"}
    connector = aiohttp.TCPConnector(limit=1000)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(body: bytes) -> None:
            async with (
                sem,
                session.post(f"{base_url}/chat/completions", data=body, headers=headers) as r,
            ):
                await r.read()

        await asyncio.gather(*(one(b) for b in bodies[:concurrency]))  # open the pool
        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_reward_server(stub: StubServer, concurrency: int) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "jurist",
        "serve-reward",
        "--model",
        "openai:x",
        "--base-url",
        stub.base_url,
        "--api-key",
        "x",
        "--concurrency",
        str(concurrency),
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise RuntimeError(f"jurist serve-reward exited ({proc.returncode}): {out[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("jurist serve-reward did not answer /health within 60 s")


async def post_clients(url: str, n: int, clients: int, tag: str) -> tuple[float, list[Any]]:
    _, sols, refs, infos = rollouts(n, tag)
    items = [
        {"response": sols[i], "reference": refs[i], "prompt": infos[i]["question"]}
        for i in range(n)
    ]
    share = n // clients
    chunks = [items[k * share : (k + 1) * share] for k in range(clients)]
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def one(chunk: list[dict[str, Any]]) -> list[Any]:
            async with session.post(f"{url}/v1/rewards", json={"items": chunk}) as resp:
                body = await resp.json()
                if resp.status != 200:
                    raise RuntimeError(f"/v1/rewards answered {resp.status}: {body}")
                return list(body["rewards"])

        start = time.perf_counter()
        results = await asyncio.gather(*(one(c) for c in chunks))
        wall = time.perf_counter() - start
    return wall, [r for rs in results for r in rs]


def run_server(stub: StubServer, n: int, clients: int, repeats: int) -> dict[str, Any]:
    try:
        proc, url = start_reward_server(stub, 256)
    except (RuntimeError, OSError) as e:
        return {"skipped": f"jurist serve-reward is not available: {e}"}
    try:
        asyncio.run(post_clients(url, 256, clients, "server-warm"))
        walls = []
        for r in range(repeats):
            before = stub_count(stub)
            wall, records = asyncio.run(post_clients(url, n, clients, f"server{r}"))
            bad = [x for x in records if x["reward"] != 0.8 or x["error"] is not None]
            if len(records) != n or bad:
                raise SystemExit(f"server: {len(bad)} of {len(records)} wrong: {bad[:3]}")
            if stub_count(stub) - before != n:
                raise SystemExit(f"server: {stub_count(stub) - before} requests for {n} items")
            walls.append(wall)
        return {"walls_s": walls, "median_s": statistics.median(walls)}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--loop-n", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--quick", action="store_true", help="n 256, loop 8")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.n, args.loop_n = 256, 8
    n, c, lat = args.n, args.concurrency, args.latency
    bound = n / c * lat
    results: dict[str, Any] = {
        "n": n,
        "concurrency": c,
        "latency_s": lat,
        "bound_s": bound,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    with StubServer(latency=lat, verdict=VERDICT) as stub:
        kwargs = {
            "model": "openai:x",
            "base_url": stub.base_url,
            "api_key": "x",
            "concurrency": c,
            "max_retries": 0,
        }
        # 1. the per-sample loop (its own judge: concurrency is irrelevant to it)
        loop_kwargs = {**kwargs, "concurrency": 1}
        run_loop(loop_kwargs, 2)  # warm-up: imports, pool
        before = stub_count(stub)
        loop_wall = run_loop(loop_kwargs, args.loop_n)
        if stub_count(stub) - before != args.loop_n:
            raise SystemExit("per-sample loop: request count does not match")
        loop_est = loop_wall / args.loop_n * n
        results["loop"] = {
            "measured_n": args.loop_n,
            "wall_s": loop_wall,
            "extrapolated_s": loop_est,
        }
        # 2. batch
        cold = run_batch(kwargs, c, "warm")
        walls = []
        for r in range(args.repeats):
            before = stub_count(stub)
            walls.append(run_batch(kwargs, n, f"batch{r}"))
            if stub_count(stub) - before != n:
                raise SystemExit("batch: request count does not match")
        batch = statistics.median(walls)
        results["batch"] = {"warmup_256_s": cold, "walls_s": walls, "median_s": batch}
        floors = [
            asyncio.run(floor_once(stub.base_url, n, c, f"f{r}")) for r in range(args.repeats)
        ]
        floor = statistics.median(floors)
        results["transport_floor"] = {"walls_s": floors, "median_s": floor}
        # 3. server
        if args.skip_server:
            results["server"] = {"skipped": "--skip-server"}
        else:
            results["server"] = run_server(stub, n, args.clients, args.repeats)

    targets = [
        ("batch speedup over the per-sample loop", loop_est / batch, SPEEDUP_TARGET, ">="),
        ("batch wall / latency bound", batch / bound, BOUND_RATIO_TARGET, "<="),
    ]
    server = results["server"]
    if "median_s" in server:
        targets.append(
            (
                "server wall / in-process batch",
                server["median_s"] / batch,
                SERVER_RATIO_TARGET,
                "<=",
            )
        )
    print(f"n={n}, latency {lat} s, concurrency {c}; bound n/c x latency = {bound:.3f} s")
    print(
        f"per-sample loop: {args.loop_n} calls in {loop_wall:.2f} s -> {loop_est:.1f} s "
        f"for {n} (extrapolated)"
    )
    print(f"batch_compute_score: median {batch:.3f} s of {[round(w, 3) for w in walls]}")
    print(
        f"transport floor (bare aiohttp, same n and concurrency, no judge): median "
        f"{floor:.3f} s = {floor / bound:.2f}x the bound; the batch costs "
        f"{(batch - floor) / n * 1000:.3f} ms per rollout over it"
    )
    if "median_s" in server:
        print(
            f"serve-reward, {args.clients} clients: median {server['median_s']:.3f} s of "
            f"{[round(w, 3) for w in server['walls_s']]}"
        )
    else:
        print(f"serve-reward: SKIPPED ({server['skipped']})")
    failed = False
    rows = []
    for name, value, limit, op in targets:
        ok = value >= limit if op == ">=" else value <= limit
        failed |= not ok
        rows.append({"name": name, "value": value, "target": f"{op} {limit}", "pass": ok})
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {value:.2f} (target {op} {limit})")
    results["targets"] = rows
    RESULTS_DIR.mkdir(exist_ok=True)
    out = args.out or RESULTS_DIR / f"rewards-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
