"""An event loop in a daemon thread, for the sync reward shapes.

Sync callers (verl's ``batch_compute_score``, a sync TRL reward) judge on a loop of
their own that lives until :meth:`LoopThread.close`, so an HTTP judge's connection pool
is opened once and only ever used from the loop it was opened in.

>>> import asyncio
>>> runner = LoopThread("doc-loop")
>>> async def where() -> str:
...     return "on " + ("the runner's loop" if asyncio.get_running_loop() is runner.loop
...                     else "another loop")
>>> runner.run(where())
"on the runner's loop"
>>> runner.close()
>>> runner.loop is None
True
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread named ``name``, started on first use.

    It is kept until :meth:`close`; a later :meth:`run` starts a new one.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The running loop (``None`` before the first :meth:`run` and after :meth:`close`)."""
        return self._loop

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (from any thread but the loop's)."""
        loop = self._start()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError(
                f"{self.name}: a sync reward call was made from the reward event loop itself; "
                "await the async form instead"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self, timeout: float | None = None) -> None:
        """Close the loop's async generators (an HTTP model's session closer is one), stop it.

        ``timeout`` bounds the wait for the generators to close (``None``: no bound).
        """
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if not thread.is_alive():  # nothing runs it any more: nothing to wait for
            loop.close()
            return
        try:
            future = asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop)
            future.result(timeout=timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()
