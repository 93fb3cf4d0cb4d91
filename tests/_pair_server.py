"""A pairwise judge on 127.0.0.1 that prefers the longer answer, for the tests of ``jurist
compare`` with many systems and of ``jurist leaderboard``.

It reads the ``mt_bench_pair`` prompt's two answers and says ``[[A]]`` or ``[[B]]`` for the
longer one, ``[[C]]`` (a tie) when they are as long; ``calls`` counts the calls it answered
by the item's prompt (``Q<n>``), ``keys`` by their Authorization header. The calls for the
items from ``hold_from`` on are counted and never answered (until the server stops).
"""

from __future__ import annotations

import asyncio
import collections
import re

from aiohttp import web

from tests._fault_server import _completion
from tests._loopback import Loopback

__all__ = ["LongerWins"]


class LongerWins(Loopback):
    """Prefers the longer answer; ``calls`` counts the calls by prompt (``Q<n>``), ``keys``
    by Authorization header; the calls for items ``Q<hold_from>`` and on wait for the stop."""

    def __init__(self, latency: float = 0.0, hold_from: int | None = None) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.latency = latency
        self.hold_from = hold_from
        self.calls: collections.Counter[str] = collections.Counter()
        self.keys: collections.Counter[str] = collections.Counter()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        text = body["messages"][-1]["content"]
        a = text.split("<answer_a>")[1].split("</answer_a>")[0].strip()
        b = text.split("<answer_b>")[1].split("</answer_b>")[0].strip()
        verdict = "[[A]]" if len(a) > len(b) else "[[B]]" if len(b) > len(a) else "[[C]]"
        found = re.search(r"Q(\d+)", text)
        self.calls[found.group(0) if found else "?"] += 1  # counted as it arrives
        self.keys[request.headers.get("Authorization", "")] += 1
        if self.hold_from is not None and found and int(found.group(1)) >= self.hold_from:
            await self.stopping.wait()
        if self.latency:
            await asyncio.sleep(self.latency)
        return web.json_response(_completion(body, verdict))
