"""A reward server that costs nothing: the floor for ``rewards.py``'s server runs.

It answers OpenRLHF's ``POST /get_reward`` as ``jurist serve-reward`` does, with every
sample "judged" by sleeping ``--latency`` seconds under a bound of ``--concurrency``
(the judge's latency and the server's bound, without the judge's HTTP calls or any
parsing), so the same client pattern against it shows what HTTP and the client cost.

    python benchmarks/_ideal_reward_server.py --port 8000 --latency 0.2 --concurrency 256
"""

from __future__ import annotations

import argparse
import asyncio

from aiohttp import web


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=256)
    args = ap.parse_args()
    bound: asyncio.Semaphore | None = None

    async def judged() -> float:
        assert bound is not None
        async with bound:
            await asyncio.sleep(args.latency)
        return 0.8

    async def get_reward(request: web.Request) -> web.Response:
        nonlocal bound
        bound = bound or asyncio.Semaphore(args.concurrency)
        body = await request.json()
        rewards = await asyncio.gather(*(judged() for _ in body["query"]))
        zeros = [0] * len(rewards)
        return web.json_response(
            {"rewards": rewards, "scores": rewards, "extra_logs": {"failed": zeros}}
        )

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/get_reward", get_reward)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=args.port, backlog=4096, print=None)


if __name__ == "__main__":
    main()
