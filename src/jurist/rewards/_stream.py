"""Micro-batching for the reward server: single-sample requests judged as shared batches.

OpenRLHF (>= 0.10) posts one sample per request, right after each generation, many
requests at once; slime posts one sample per request too. :class:`MicroBatcher` collects
the items that requests submit within ``window`` seconds of the first one (0: those
submitted in the same event loop iteration) and judges them as one batch: a pool of at
most ``concurrency`` workers per batch, each taking the next item, under one bound shared
by every batch. So 512 single-sample requests that arrive together cost what one
512-sample request costs in judging: the same items, the same bound, no task per item.

Each submitted item gets a future with its record; a request awaits its own items'
futures. The judging function (``judge_one``) must not raise: it turns every failure
into a record (see :meth:`jurist.rewards._server.RewardService._judge_one`).

>>> import asyncio
>>> async def double(item):
...     await asyncio.sleep(0)
...     return {"reward": item["x"] * 2}
>>> async def demo():
...     batcher = MicroBatcher(double, concurrency=2, window=0.0)
...     futures = [batcher.submit({"x": x}) for x in range(5)]  # one request each
...     records = await asyncio.gather(*futures)
...     return [r["reward"] for r in records], batcher.batches, batcher.peak
>>> asyncio.run(demo())
([0, 2, 4, 6, 8], 1, 2)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["DEFAULT_WINDOW", "MicroBatcher"]

DEFAULT_WINDOW = 0.002
"""Seconds a batch stays open for more items after its first (``--batch-window`` ms)."""

_Judge = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
_Entry = tuple[dict[str, Any], "asyncio.Future[dict[str, Any]]"]


class MicroBatcher:
    """Items from many requests, judged in shared batches under one bound (module doc)."""

    def __init__(self, judge_one: _Judge, *, concurrency: int, window: float = DEFAULT_WINDOW):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if not window >= 0:
            raise ValueError(f"window must be >= 0 seconds, got {window!r}")
        self._judge_one = judge_one
        self.concurrency = concurrency
        self.window = window
        self.batches = 0
        """Batches dispatched so far."""
        self.batched_items = 0
        """Items dispatched in those batches."""
        self.in_flight = 0
        self.peak = 0
        """The most judgments in flight at once."""
        self._open: list[_Entry] = []
        self._bound: asyncio.Semaphore | None = None
        self._running: set[asyncio.Task[None]] = set()

    def submit(self, item: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Queue ``item`` for the open batch; the future gets its record."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        if not self._open:
            if self.window > 0:
                loop.call_later(self.window, self._dispatch)
            else:
                loop.call_soon(self._dispatch)
        self._open.append((item, future))
        return future

    def _dispatch(self) -> None:
        batch, self._open = self._open, []
        if not batch:
            return
        self.batches += 1
        self.batched_items += len(batch)
        task = asyncio.ensure_future(self._run(batch))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, batch: list[_Entry]) -> None:
        if self._bound is None:
            self._bound = asyncio.Semaphore(self.concurrency)
        bound = self._bound
        entries = iter(batch)

        async def worker() -> None:
            for item, future in entries:
                async with bound:
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                    try:
                        record = await self._judge_one(item)
                    except Exception as e:  # judge_one should not raise: its waiter sees it
                        if not future.done():
                            future.set_exception(e)
                        continue
                    finally:
                        self.in_flight -= 1
                if not future.done():
                    future.set_result(record)

        try:
            await asyncio.gather(*(worker() for _ in range(min(len(batch), self.concurrency))))
        finally:  # cancelled (shutdown): no waiter is left hanging
            for _, future in batch:
                if not future.done():
                    future.cancel()

    async def aclose(self) -> None:
        """Wait for the batches already dispatched."""
        if self._open:
            self._dispatch()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)
