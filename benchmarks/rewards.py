"""Rewards at training speed, every trainer path beside the transport floor in one run.

The stub OpenAI-compatible server (``_stub_server.py``, a process of its own) answers every
``/v1/chat/completions`` after ``--latency`` seconds (0.2) with ``Score: 0.8``. In each of
``--repeats`` rounds, one after another on the same stub:

- **floor**: bare aiohttp posting, at concurrency 256, the chat bodies jurist's reward
  judge sends for ``n`` (1,024) rollouts and for the server's ``--server-n`` (512): the
  reward template rendered for each rollout, built beforehand, each answer read and checked
  (what the machine's network stack and event loop cost before any judging);
- **verl reward loop**: verl 0.9's own ``RewardLoopWorker`` (one worker, config composed
  from verl's ``ppo_trainer.yaml``) scoring a ``DataProto`` of ``n`` rollouts with
  ``compute_score_async`` (skipped when verl is not installed);
- **ideal reward loop**: the same worker and data with a reward function that only waits
  ``--latency`` under a bound of 256: what verl's per-sample work costs (no target);
- **verl reward loop, gc_freeze** (after the rounds above, ``--skip-gc-freeze`` leaves it
  out): the same worker with ``gc_freeze: true`` in ``reward_kwargs``, which freezes the
  process's heap out of the garbage collector's way at the first call
  (:mod:`jurist.rewards._heap`); the floor and the ideal loop run again beside it in as
  many rounds, on the frozen heap too (it is the process's), then the heap is unfrozen;
- **compute_score_async gathered**: the same ``n`` calls gathered on one event loop, what
  the reward loop asks of jurist without verl's own per-sample work (no target);
- **legacy batch**: ``batch_compute_score`` over all ``n`` (verl's batch manager, < 0.9);
- **TRL**: ``trl_reward_func`` called as ``GRPOTrainer`` calls it, the whole batch;
- **server batched**: ``jurist serve-reward`` (a subprocess), one ``/get_reward`` request
  of ``--server-n`` samples;
- **server stream**: the same number of samples, one per request, all at once, sent by
  OpenRLHF 0.11.2's own ``SingleTurnAgentExecutor`` when its wheel is given
  (``--openrlhf-wheel`` or ``$JURIST_OPENRLHF_WHEEL``), else by its request pattern. The
  server process's CPU seconds are recorded for both server runs;
- **ideal server batched / stream**: the same two runs against ``_ideal_reward_server.py``,
  a reward server that only waits ``--latency`` per sample under the same bound: what
  HTTP and the client's pattern cost with no judging at all (no target).

Every timed section starts after a full collection of this process (``Clock`` in
``_reward_paths.py``), so each path pays the collections its own work triggers, not one
owed by the path before it.

Each figure is the median over the rounds and is printed as a ratio to the floor of the
same run (the server runs to the ``--server-n`` floor); targets are ratios, so a loaded
machine slows the floor and the paths alike: every in-process path and the batched
server within 1.3x the floor, the stream within 1.3x the ideal server's stream (the same
client sending the same requests to a server that costs nothing) and within 1.3x the
batched request. The
per-sample loop (sync ``compute_score`` once per rollout) runs on ``--loop-n`` rollouts,
extrapolated to ``n``: the batch must be at least 50x faster. Every reward is checked (all 0.8).

Run::

    python benchmarks/rewards.py            # about a minute
    python benchmarks/rewards.py --quick    # n 256, server 128, loop 8
    python benchmarks/rewards.py --help

Results: the terminal (PASS/FAIL per target) and ``benchmarks/results/rewards-<time>.json``.
The exit status is 1 when a target fails.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _reward_paths as paths
from _stub_server import StubServer

RESULTS_DIR = Path(__file__).resolve().parent / "results"
VERDICT = "Score: 0.8"
TARGET = 1.3
SERVER_RUNS = ("server batched", "server stream", "ideal batched", "ideal stream")
SPEEDUP_TARGET = 50.0
FROZEN_RUNS = ("floor (frozen heap)", "verl loop, gc_freeze", "ideal loop (frozen heap)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--server-n", type=int, default=512)
    ap.add_argument("--loop-n", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--openrlhf-wheel", default=paths.default_wheel())
    ap.add_argument("--skip-verl", action="store_true")
    ap.add_argument("--skip-server", action="store_true")
    ap.add_argument("--skip-gc-freeze", action="store_true", help="no gc_freeze rounds")
    ap.add_argument("--quick", action="store_true", help="n 256, server 128, loop 8")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.quick:
        args.n, args.server_n, args.loop_n = 256, 128, 8
    n, c, lat = args.n, args.concurrency, args.latency
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    server_cpu: dict[str, list[float]] = {}

    cpu: dict[str, list[float]] = {}

    gc_s: dict[str, list[float]] = {}
    gc_full: dict[str, list[float]] = {}

    def record(name: str, wall: float) -> None:
        times.setdefault(name, []).append(wall)
        cpu.setdefault(name, []).append(paths.LAST_CPU[0])
        gc_s.setdefault(name, []).append(paths.LAST_GC[0])
        gc_full.setdefault(name, []).append(paths.LAST_GC[1])

    with StubServer(latency=lat, verdict=VERDICT) as stub, tempfile.TemporaryDirectory() as tmp:
        kw: dict[str, Any] = {
            "model": "openai:x",
            "base_url": stub.base_url,
            "api_key": "x",
            "concurrency": c,
            "max_retries": 0,
        }
        paths.loop({**kw, "concurrency": 1}, 2)  # warm-up: imports, pool
        loop_wall = paths.loop({**kw, "concurrency": 1}, args.loop_n)
        trl = paths.TRLPath(kw)
        verl = ideal_verl = None
        if args.skip_verl:
            notes["verl reward loop"] = "skipped: --skip-verl"
        else:
            try:
                verl = paths.VerlLoopPath(kw, Path(tmp))
                ideal_verl = paths.VerlLoopPath(
                    {"latency": lat, "concurrency": c}, Path(tmp), ideal=True
                )
            except ImportError as e:
                notes["verl reward loop"] = f"skipped: verl is not installed ({e})"
        server = stream = ideal_stream = None
        proc = ideal_proc = None
        ideal_url = ""
        if args.skip_server:
            notes["server"] = "skipped: --skip-server"
        else:
            proc, url = paths.start_server(stub.base_url, c)
            server = url
            stream = paths.OpenRLHFStream(url, args.openrlhf_wheel)
            notes["server stream"] = f"client: {stream.client}"
            ideal_proc, ideal_url = paths.start_ideal_server(lat, c)
            ideal_stream = paths.OpenRLHFStream(ideal_url, args.openrlhf_wheel)
        try:
            # warm-ups: every pool open, every first-call cost paid, as in a training step
            paths.batch(kw, c, "warm")
            trl(c, "warm")
            if verl is not None and ideal_verl is not None:
                verl(c, "warm")
                ideal_verl(c, "warm-i")
            if server is not None and stream is not None and ideal_stream is not None:
                asyncio.run(paths.server_batched(server, c, "warm"))
                asyncio.run(stream(c, "warm-s"))
                asyncio.run(paths.server_batched(ideal_url, c, "warm-i"))
                asyncio.run(ideal_stream(c, "warm-is"))
            for r in range(args.repeats):
                bodies = paths.judge_bodies(kw, n, f"f{r}")  # the paths' requests, prebuilt
                record("floor", asyncio.run(paths.floor(stub.base_url, bodies, c, VERDICT)))
                if verl is not None and ideal_verl is not None:
                    record("verl reward loop", verl(n, f"verl{r}"))
                    record("ideal reward loop", ideal_verl(n, f"iverl{r}"))
                record("async gathered", asyncio.run(paths.gathered(kw, n, f"ag{r}")))
                record("legacy batch", paths.batch(kw, n, f"batch{r}"))
                record("TRL", trl(n, f"trl{r}"))
                if server is not None and stream is not None and ideal_stream is not None:
                    sn = args.server_n
                    bodies = paths.judge_bodies(kw, sn, f"g{r}")
                    record(
                        "floor (server n)",
                        asyncio.run(paths.floor(stub.base_url, bodies, c, VERDICT)),
                    )
                    pid = proc.pid if proc is not None else 0
                    cpu0 = paths.process_cpu(pid)
                    record(
                        "server batched", asyncio.run(paths.server_batched(server, sn, f"sb{r}"))
                    )
                    cpu1 = paths.process_cpu(pid)
                    record("server stream", asyncio.run(stream(sn, f"ss{r}")))
                    cpu2 = paths.process_cpu(pid)
                    if cpu0 is not None and cpu1 is not None and cpu2 is not None:
                        server_cpu.setdefault("batched", []).append(cpu1 - cpu0)
                        server_cpu.setdefault("stream", []).append(cpu2 - cpu1)
                    ipid = ideal_proc.pid if ideal_proc is not None else 0
                    cpu0 = paths.process_cpu(ipid)
                    record(
                        "ideal batched",
                        asyncio.run(paths.server_batched(ideal_url, sn, f"ib{r}")),
                    )
                    cpu1 = paths.process_cpu(ipid)
                    record("ideal stream", asyncio.run(ideal_stream(sn, f"is{r}")))
                    cpu2 = paths.process_cpu(ipid)
                    if cpu0 is not None and cpu1 is not None and cpu2 is not None:
                        server_cpu.setdefault("ideal batched", []).append(cpu1 - cpu0)
                        server_cpu.setdefault("ideal stream", []).append(cpu2 - cpu1)
            if verl is not None and ideal_verl is not None and not args.skip_gc_freeze:
                frozen = paths.VerlLoopPath({**kw, "gc_freeze": True}, Path(tmp))
                frozen(c, "warm-f")  # the first call builds the judge and freezes the heap
                for r in range(args.repeats):
                    bodies = paths.judge_bodies(kw, n, f"ff{r}")
                    record(
                        "floor (frozen heap)",
                        asyncio.run(paths.floor(stub.base_url, bodies, c, VERDICT)),
                    )
                    record("verl loop, gc_freeze", frozen(n, f"fverl{r}"))
                    record("ideal loop (frozen heap)", ideal_verl(n, f"fiverl{r}"))
                gc.unfreeze()
        finally:
            trl.close()
            for p in (proc, ideal_proc):
                if p is not None:
                    p.terminate()
                    p.wait(timeout=30)

    med = {k: statistics.median(v) for k, v in times.items()}
    floor_n, floor_s = med["floor"], med.get("floor (server n)")
    targets: list[tuple[str, float, float, str]] = []
    for name in ("verl reward loop", "legacy batch", "TRL"):
        if name in med:
            targets.append((f"{name} / floor", med[name] / floor_n, TARGET, "<="))
    if "ideal reward loop" in med:
        targets.append(
            (
                "verl reward loop / ideal reward loop",
                med["verl reward loop"] / med["ideal reward loop"],
                TARGET,
                "<=",
            )
        )
    if "verl loop, gc_freeze" in med:
        frozen_wall = med["verl loop, gc_freeze"]
        targets.append(
            ("verl loop, gc_freeze / floor", frozen_wall / med["floor (frozen heap)"], TARGET, "<=")
        )
        targets.append(
            (
                "verl loop, gc_freeze / ideal loop (frozen heap)",
                frozen_wall / med["ideal loop (frozen heap)"],
                TARGET,
                "<=",
            )
        )
    if floor_s is not None and "server batched" in med:
        targets.append(("server batched / floor", med["server batched"] / floor_s, TARGET, "<="))
        targets.append(
            (
                "server stream / ideal stream",
                med["server stream"] / med["ideal stream"],
                TARGET,
                "<=",
            )
        )
        targets.append(
            (
                "server stream / server batched",
                med["server stream"] / med["server batched"],
                TARGET,
                "<=",
            )
        )
    loop_est = loop_wall / args.loop_n * n
    targets.append(
        (
            "legacy batch speedup over the per-sample loop",
            loop_est / med["legacy batch"],
            SPEEDUP_TARGET,
            ">=",
        )
    )

    bound = n / c * lat
    print(f"n={n} (server {args.server_n}), latency {lat} s, concurrency {c}; bound {bound:.3f} s")
    for name, walls in times.items():
        print(f"  {name:18s} median {med[name]:.3f} s of {[round(w, 3) for w in walls]}")
    print(f"  per-sample loop: {args.loop_n} in {loop_wall:.2f} s -> {loop_est:.1f} s for {n}")
    # every path as a ratio to bare aiohttp sending the same requests in the same run
    ratios: dict[str, float] = {}
    for name in med:
        ref = floor_s if name in SERVER_RUNS or name == "floor (server n)" else floor_n
        if name in FROZEN_RUNS:
            ref = med["floor (frozen heap)"]
        if ref is not None:
            ratios[name] = med[name] / ref
    print("  wall time / the floor's (the same requests, bare aiohttp, same run):")
    for name, ratio in ratios.items():
        print(f"    {name:18s} {ratio:.2f} x")
    print("  this process's CPU per judgment (median), and its ratio to the floor's:")
    floor_cpu = statistics.median(cpu["floor"]) / n
    cpu_ratios: dict[str, float] = {}
    for name in (
        "floor",
        "verl reward loop",
        "ideal reward loop",
        "async gathered",
        "legacy batch",
        "TRL",
        *FROZEN_RUNS,
    ):
        if name in cpu:
            per = statistics.median(cpu[name]) / n
            ref_cpu = floor_cpu
            if name in FROZEN_RUNS:
                ref_cpu = statistics.median(cpu["floor (frozen heap)"]) / n
            cpu_ratios[name] = per / ref_cpu
            print(f"    {name:18s} {per * 1000:.3f} ms ({per / ref_cpu:.2f} x)")
    print("  this process's garbage collections per run (median s: all, full):")
    for name in gc_s:
        if name in SERVER_RUNS or name == "floor (server n)":
            continue  # the server's collections are in its own process
        all_gc, full_gc = statistics.median(gc_s[name]), statistics.median(gc_full[name])
        print(f"    {name:18s} {all_gc:.3f} s, full {full_gc:.3f} s")
    for name, cpus in server_cpu.items():
        per = statistics.median(cpus) / args.server_n * 1000
        print(f"  server CPU, {name}: {per:.3f} ms per sample (median of {len(cpus)})")
    for name, note in notes.items():
        print(f"  {name}: {note}")
    print(f"  load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    failed = False
    rows = []
    for name, value, limit, op in targets:
        ok = value >= limit if op == ">=" else value <= limit
        failed |= not ok
        rows.append({"name": name, "value": value, "target": f"{op} {limit}", "pass": ok})
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {value:.2f} (target {op} {limit})")
    results = {
        "n": n,
        "server_n": args.server_n,
        "concurrency": c,
        "latency_s": lat,
        "bound_s": bound,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "walls_s": times,
        "median_s": med,
        "wall_ratio_to_floor": ratios,
        "cpu_ratio_to_floor": cpu_ratios,
        "server_cpu_s": server_cpu,
        "process_cpu_s": cpu,
        "process_gc_s": gc_s,
        "process_full_gc_s": gc_full,
        "loop": {"measured_n": args.loop_n, "wall_s": loop_wall, "extrapolated_s": loop_est},
        "notes": notes,
        "targets": rows,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    out = args.out or RESULTS_DIR / f"rewards-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
