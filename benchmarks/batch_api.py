"""Batch-API benchmark: 10,000 items through the fake Batch API server.

The server is ``tests/_batch_server.py`` (real HTTP on 127.0.0.1, in a thread of this
process): it validates every uploaded line, and each batch goes ``validating ->
in_progress -> finalizing -> completed`` as its simulated processing time (``--delay``,
default 5 s) passes after its creation. jurist judges ``--items`` (10,000) items with an
``LLMJudge`` on ``openai:gpt-4o-mini`` (priced by the built-in table) through
``jurist.evaluate(..., engine=BatchAPIEngine(BatchAPIOptions(poll_interval=--poll)))``, once with
OpenAI's per-file limit (one file) and once with ``--max-requests`` (2,000) per file.

Reported for each run, from the server's counters: files, batches, requests per batch,
HTTP calls by endpoint and in all (against 10,000 live calls), wall time against the
simulated processing time (the floor: no batch can finish sooner), the client's CPU (the
server's thread included: it runs in this process); and the
cost of the same usage live and through the batch API from the price table. Every run
also checks correctness: every item scored, each request submitted once.

Run::

    python benchmarks/batch_api.py              # 10,000 items, 5 s processing
    python benchmarks/batch_api.py --items 1000 --delay 1

Results go to the terminal and to ``benchmarks/results/batch_api-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests._batch_server import BatchServer  # noqa: E402

import jurist  # noqa: E402
from jurist.engines import BatchAPIEngine, BatchAPIOptions  # noqa: E402
from jurist.runs import PriceTable  # noqa: E402
from jurist.runs._cost import bill  # noqa: E402

SPEC = "openai:gpt-4o-mini"


def one_run(
    items: list[dict[str, str]], delay: float, poll: float, max_requests: int
) -> dict[str, Any]:
    with BatchServer(delay=delay) as server:
        model = jurist.get_model(SPEC, base_url=server.base_url, api_key="k", json_mode=None)
        judge = jurist.LLMJudge(model)
        options = BatchAPIOptions(poll_interval=poll, max_requests_per_file=max_requests)
        cpu, wall = time.process_time(), time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            run = jurist.evaluate(items, judge, run_dir=folder, engine=BatchAPIEngine(options))
            wall = time.perf_counter() - wall
            cpu = time.process_time() - cpu
            summary = run.summary()
            usage = jurist.types.Usage(
                prompt_tokens=summary.prompt_tokens,
                completion_tokens=summary.completion_tokens,
                cached_tokens=summary.cached_tokens,
                calls=summary.calls,
            )
        price = PriceTable.default().price_for(SPEC)
        assert price is not None
        live_cost, _ = bill(usage, price)
        batch_cost, _ = bill(usage.model_copy(update={"batch_calls": usage.calls}), price)
        assert summary.scored == len(items), summary
        assert len(server.submissions) == len(items)
        assert set(server.submissions.values()) == {1}
        calls = {
            "POST /files": server.uploads,
            "POST /batches": server.creations,
            "GET /batches/{id}": server.polls,
            "GET /batches": server.lists,
            "GET /files/{id}/content": server.downloads,
            "POST /chat/completions": server.live_calls,
        }
        return {
            "items": len(items),
            "max_requests_per_file": max_requests,
            "batches": server.creations,
            "requests_per_batch": len(items) / server.creations,
            "http_calls": calls,
            "http_calls_total": sum(calls.values()),
            "live_http_calls_for_the_same": len(items),
            "simulated_processing_s": delay,
            "wall_s": round(wall, 3),
            "wall_over_processing": round(wall / delay, 3) if delay else None,
            "client_cpu_s": round(cpu, 3),
            "client_cpu_per_item_ms": round(cpu / len(items) * 1000, 4),
            "recorded_cost_usd": summary.cost,
            "cost_live_usd": live_cost,
            "cost_batch_usd": batch_cost,
            "batch_over_live": (batch_cost / live_cost) if live_cost and batch_cost else None,
            "tokens": {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens},
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--delay", type=float, default=5.0, help="simulated processing (s)")
    parser.add_argument("--poll", type=float, default=0.5, help="poll interval (s)")
    parser.add_argument("--max-requests", type=int, default=2_000)
    args = parser.parse_args()
    items = [{"prompt": f"What is {i} + {i}?", "response": str(2 * i)} for i in range(args.items)]
    one_run(items[:100], 0.0, 0.01, 50_000)  # warm-up: imports and first-call costs
    results = [
        one_run(items, args.delay, args.poll, 50_000),
        one_run(items, args.delay, args.poll, args.max_requests),
    ]
    for r in results:
        print(
            f"{r['items']} items, <= {r['max_requests_per_file']} requests/file: "
            f"{r['batches']} batch(es), {r['requests_per_batch']:.0f} requests/batch, "
            f"{r['http_calls_total']} HTTP calls ({r['http_calls']}) vs "
            f"{r['live_http_calls_for_the_same']} live; wall {r['wall_s']} s vs "
            f"{r['simulated_processing_s']} s processing ({r['wall_over_processing']}x); "
            f"client CPU {r['client_cpu_per_item_ms']} ms/item; cost live "
            f"${r['cost_live_usd']:.4f} vs batch ${r['cost_batch_usd']:.4f} "
            f"(recorded ${r['recorded_cost_usd']:.4f})"
        )
    out = ROOT / "benchmarks" / "results" / f"batch_api-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "runs": results}, indent=2) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
