"""An asyncio event loop on a virtual clock: waiting for a timer takes no real time.

When nothing is ready and the next timer is ``t`` seconds away, the loop's clock jumps
``t`` ahead instead of blocking, so ``asyncio.sleep(5)`` returns at once with
``loop.time()`` five seconds later. Everything else is the real selector event loop
(tasks, futures, locks, semaphores), so a test of pacing exercises the real scheduling
and asserts on exact clock readings instead of wall-clock windows.

>>> import asyncio
>>> async def nap() -> float:
...     await asyncio.sleep(60)
...     return asyncio.get_running_loop().time()
>>> run_virtual(nap())
60.0
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["VirtualTimeLoop", "run_virtual"]

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Polls without blocking; a wait for a timer moves the clock instead."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
        ready: list[tuple[Any, int]] = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:  # no timer pending: wait for real I/O
            blocked: list[tuple[Any, int]] = super().select(None)
            return blocked
        self.now += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose :meth:`time` is virtual, starting at 0."""

    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(selector=self._jumping)

    def time(self) -> float:
        return self._jumping.now


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh :class:`VirtualTimeLoop`."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
