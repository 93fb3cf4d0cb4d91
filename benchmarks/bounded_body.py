"""Peak memory of one openai-backend call against a server whose answer never ends.

A server on 127.0.0.1 (its own process, so its buffers do not count) answers every
``POST /v1/chat/completions`` with a chunked body that streams 64 KiB pieces as fast as
the socket takes them, forever. One client process makes one call with
``OpenAIModel(..., max_response_bytes=CAP, timeout=T)`` and reports what it raised, how
long it took and its peak resident set size (``ru_maxrss``) before and after the call.
The client must stop at the cap (``ResponseTooLargeError``) with a peak near the cap,
not at the deadline with gigabytes read.

Run::

    python benchmarks/bounded_body.py                       # default cap (32 MiB), timeout 20 s
    python benchmarks/bounded_body.py --cap-mib 1 --timeout 5

It prints one JSON line; the exit status is 1 when the peak grew by more than four
times the cap plus 64 MiB (the interpreter's own allocations).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

SERVER = r"""
import asyncio, sys
from aiohttp import web

CHUNK = b"x" * 65536

async def handle(request):
    await request.read()
    resp = web.StreamResponse()
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    try:
        while True:
            await resp.write(CHUNK)
    except (ConnectionError, RuntimeError):
        pass
    return resp

async def main():
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cap-mib", type=float, default=None, help="max_response_bytes in MiB")
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()

    import asyncio

    from jurist.models._openai import DEFAULT_MAX_RESPONSE_BYTES, OpenAIModel
    from jurist.types import Message, Request

    cap = DEFAULT_MAX_RESPONSE_BYTES if args.cap_mib is None else int(args.cap_mib * 2**20)
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        model = OpenAIModel(
            "endless",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="x",
            timeout=args.timeout,
            max_response_bytes=cap,
        )
        request = Request(messages=(Message(role="user", content="q"),))

        async def call() -> str:
            try:
                await model.complete(request)
                return "no error"
            except Exception as exc:  # what the call raised is the measure
                return f"{type(exc).__name__}: {exc}"
            finally:
                await model.aclose()

        before = rss_mib()
        started = time.perf_counter()
        outcome = asyncio.run(call())
        seconds = time.perf_counter() - started
        peak = rss_mib()
    finally:
        server.terminate()
        server.wait(timeout=10)
    growth = peak - before
    print(
        json.dumps(
            {
                "cap_mib": cap / 2**20,
                "timeout_s": args.timeout,
                "seconds": round(seconds, 3),
                "rss_before_mib": round(before, 1),
                "rss_peak_mib": round(peak, 1),
                "rss_growth_mib": round(growth, 1),
                "outcome": outcome[:200],
            }
        )
    )
    return 0 if growth <= 4 * cap / 2**20 + 64 else 1


if __name__ == "__main__":
    sys.exit(main())
