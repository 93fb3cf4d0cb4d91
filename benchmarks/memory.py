"""Memory and overhead of the batch engine: flat peak memory, microseconds per item.

1. Peak memory: ``jurist.evaluate`` judges a JSONL file of 10,000 and of 100,000 items
   with the zero-latency mock model (each size in a fresh process). The peak resident set
   size (``ru_maxrss``) should stay flat: target, the 100k peak at most 25 MB above the
   10k peak (the input is streamed, results go to SQLite, only a bitmap of finished
   indices grows: 12.5 kB for 100k). The mock model keeps a log of every request it
   gets (``model.requests``, for tests to inspect), which grows by itself; it is turned
   off for this measure (``record=False``), and the 100k figure with it on is shown apart.
2. Engine overhead per item: the same judge (LLMJudge on the zero-latency mock) over
   20,000 items, once through ``evaluate`` (streaming the file, hashing, the durable
   SQLite write per item, progress accounting) and once as a bare loop of
   ``judge.judge`` over items already in memory, at the same concurrency. The difference
   per item is what the engine costs. Target: under 200 microseconds per item.

3. Batch mode against live (issue 20): the same ``LLMJudge`` on ``openai:judge`` judges
   ``--batch-items`` (50,000) items once live and once on ``BatchAPIEngine`` against the
   fake Batch API server (``tests/_batch_server.py``, run in a process of its own so its
   files are not counted), each in a fresh process. Requests stream to the round's
   request file and a parked item holds no task, so the batch peak should stay within 2x
   of the live peak. Target: batch peak <= 2 x live peak.

Run::

    python benchmarks/memory.py            # ~1-2 min, then the batch comparison
    python benchmarks/memory.py --quick    # 2k / 20k items, 5k for the batch comparison
    python benchmarks/memory.py --batch-only --batch-items 50000

Results go to the terminal and to ``benchmarks/results/memory-<time>.json``; the exit
status is 1 when a target fails.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

WORKER = r"""
import asyncio, json, resource, sys, time
import jurist

mode, data, run_dir, n, log = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

# the mock model logs every request it gets (for tests to inspect); off here
model = jurist.get_model("mock:judge", outputs=["Correct"], cycle=True, record=log != "off")
judge = jurist.LLMJudge(model, concurrency=32)
before = rss_mb()
if mode == "engine":
    t0, c0 = time.perf_counter(), time.process_time()
    run = jurist.evaluate(data, judge, run_dir=run_dir)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(run) == n, len(run)
else:
    items = [json.loads(line) for line in open(data)]
    async def bare():
        it = iter(items)
        async def worker():
            for item in it:
                await judge.judge(item)
        await asyncio.gather(*(worker() for _ in range(32)))
    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(bare())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"mode": mode, "n": n, "rss_before_mb": before, "peak_rss_mb": rss_mb(),
                  "wall_s": wall, "cpu_s": cpu}))
"""


BATCH_WORKER = r"""
import json, resource, sys
import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions, LocalEngine

mode, data, run_dir, n, url = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
model = jurist.get_model("openai:judge", base_url=url, api_key="k", json_mode=None)
judge = jurist.LLMJudge(model, concurrency=32)
engine = BatchAPIEngine(BatchAPIOptions(poll_interval=0.2)) if mode == "batch" else LocalEngine()
run = jurist.evaluate(data, judge, run_dir=run_dir, engine=engine)
summary = run.summary()
assert summary.scored == n, summary
print(json.dumps({"mode": mode, "n": n, "batch_calls": summary.batch_calls,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

SERVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from tests._batch_server import BatchServer
with BatchServer(delay=0.2) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def batch_against_live(root: Path, n: int) -> dict[str, Any]:
    """Peak RSS of ``n`` items live and in batch mode, the fake server in its own process."""
    data = write_data(root / "batch.jsonl", n)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(HERE.parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        out: dict[str, Any] = {}
        for mode in ("live", "batch"):
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    BATCH_WORKER,
                    mode,
                    str(data),
                    str(root / mode),
                    str(n),
                    url,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            out[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    out["batch_over_live"] = out["batch"]["peak_rss_mb"] / out["live"]["peak_rss_mb"]
    return out


def write_data(path: Path, n: int) -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "prompt": f"What is {i} + {i}?", "response": str(2 * i)}))
            f.write("\n")
    return path


def run_worker(mode: str, data: Path, run_dir: Path, n: int, log: str = "off") -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, mode, str(data), str(run_dir), str(n), log],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2k / 20k items")
    parser.add_argument("--batch-items", type=int, default=None, help="batch vs live items")
    parser.add_argument("--batch-only", action="store_true", help="only batch vs live")
    args = parser.parse_args()
    batch_n = args.batch_items or (5_000 if args.quick else 50_000)
    if args.batch_only:
        with tempfile.TemporaryDirectory() as tmp:
            cmp = batch_against_live(Path(tmp), batch_n)
        return _report_batch({"batch_vs_live": cmp}, cmp, {})
    small, large, overhead_n = (2_000, 20_000, 5_000) if args.quick else (10_000, 100_000, 20_000)
    results: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data_large = write_data(root / "large.jsonl", large)
        data_small = write_data(root / "small.jsonl", small)
        mem_small = run_worker("engine", data_small, root / "run-small", small)
        mem_large = run_worker("engine", data_large, root / "run-large", large)
        mem_logged = run_worker("engine", data_large, root / "run-logged", large, log="on")
        data_o = write_data(root / "overhead.jsonl", overhead_n)
        engine = run_worker("engine", data_o, root / "run-o", overhead_n)
        bare = run_worker("bare", data_o, root / "run-bare", overhead_n)
        cmp = batch_against_live(root, batch_n)
    growth = mem_large["peak_rss_mb"] - mem_small["peak_rss_mb"]
    per_item_us = (engine["wall_s"] - bare["wall_s"]) / overhead_n * 1e6
    cpu_item_us = (engine["cpu_s"] - bare["cpu_s"]) / overhead_n * 1e6
    results.update(
        memory={
            f"{small}": mem_small,
            f"{large}": mem_large,
            "growth_mb": growth,
            f"{large}_mock_request_log_on": mem_logged,
        },
        overhead={
            "n": overhead_n,
            "engine": engine,
            "bare": bare,
            "engine_wall_us_per_item": engine["wall_s"] / overhead_n * 1e6,
            "bare_wall_us_per_item": bare["wall_s"] / overhead_n * 1e6,
            "overhead_wall_us_per_item": per_item_us,
            "overhead_cpu_us_per_item": cpu_item_us,
        },
    )
    checks = {
        "peak memory flat (growth <= 25 MB)": growth <= 25,
        "engine overhead < 200 us/item": per_item_us < 200,
    }
    results["checks"] = checks
    print(f"peak RSS, {small:>7,} items: {mem_small['peak_rss_mb']:8.1f} MB")
    print(
        f"peak RSS, {large:>7,} items: {mem_large['peak_rss_mb']:8.1f} MB (growth {growth:+.1f} MB)"
    )
    print(
        f"  (the mock model's own request log kept: {mem_logged['peak_rss_mb']:.1f} MB at "
        f"{large:,}; that list is the mock's, for tests, not the engine's)"
    )
    print(
        f"per item over {overhead_n:,}: engine {engine['wall_s'] / overhead_n * 1e6:.1f} us, "
        f"bare judge loop {bare['wall_s'] / overhead_n * 1e6:.1f} us, "
        f"overhead {per_item_us:.1f} us wall / {cpu_item_us:.1f} us CPU"
    )
    results["batch_vs_live"] = cmp
    return _report_batch(results, cmp, checks)


def _report_batch(results: dict[str, Any], cmp: dict[str, Any], checks: dict[str, bool]) -> int:
    live, batch = cmp["live"], cmp["batch"]
    print(
        f"peak RSS, {live['n']:,} items live: {live['peak_rss_mb']:.1f} MB; batch mode: "
        f"{batch['peak_rss_mb']:.1f} MB ({cmp['batch_over_live']:.2f}x)"
    )
    checks["batch peak <= 2 x live peak"] = cmp["batch_over_live"] <= 2.0
    results["checks"] = checks
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out_dir / f"memory-{stamp}.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
