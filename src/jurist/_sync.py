"""Run a coroutine to completion from sync code, also inside a running event loop.

Outside a loop this is ``asyncio.run``. Inside one (Jupyter, an async web handler) the
coroutine runs on a fresh loop in a worker thread, so ``judge_sync`` works everywhere.

>>> async def add(a: int, b: int) -> int:
...     return a + b
>>> run_sync(add(1, 2))
3
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` and return its result, whether or not an event loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
