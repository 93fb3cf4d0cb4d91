"""Run coroutines from sync code on one background event loop, also inside a running loop.

Every sync twin (``judge_sync``, ``evaluate``, ``score_batch_sync``, ...) runs its
coroutine with :func:`run_sync` on one event loop that lives in a daemon thread for the
whole process: started on first use, closed at exit. So an HTTP model's connection pool is
opened once and reused by every later sync call, and a sync call works the same inside a
running loop (Jupyter, an async web handler) as outside one: the caller's thread only waits.
The caller's context variables travel with the call, and interrupting the wait (Ctrl-C)
cancels the coroutine and waits for it to unwind, as ``asyncio.run`` does.

A sync call made from a coroutine that already runs on that loop (a sync callback inside a
judge) cannot wait for its own loop; it runs on a fresh loop in a worker thread instead.

>>> async def add(a: int, b: int) -> int:
...     return a + b
>>> run_sync(add(1, 2))
3
>>> import asyncio
>>> async def loop_of() -> asyncio.AbstractEventLoop:
...     return asyncio.get_running_loop()
>>> run_sync(loop_of()) is run_sync(loop_of()) is shared_loop()
True

:class:`LoopThread` is the loop-in-a-thread itself; a TRL reward keeps one of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "run_sync", "shared_loop"]

T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread named ``name``, started on first use.

    It is kept until :meth:`close`; a later :meth:`run` starts a new one.

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

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The running loop (``None`` before the first :meth:`run` and after :meth:`close`)."""
        return self._loop

    def start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def on_loop(self) -> bool:
        """Whether the caller is a coroutine (or callback) running on this loop."""
        thread = self._thread
        return thread is not None and thread is threading.current_thread()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (from any thread but the loop's).

        Raises :class:`RuntimeError` when called from the loop itself (it would wait for
        itself forever). An interrupted wait cancels ``coro`` and waits for it to unwind.
        """
        loop = self.start()
        if self.on_loop():
            coro.close()
            raise RuntimeError(
                f"{self.name}: a sync call was made from a coroutine running on the "
                f"{self.name} event loop itself; await the async form instead"
            )
        call = _Call()
        try:
            return asyncio.run_coroutine_threadsafe(call.track(coro), loop).result()
        except BaseException:  # KeyboardInterrupt while waiting: stop the coroutine too
            call.cancel(loop)
            raise

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


class _Call:
    """One coroutine on the loop, as the waiting thread sees it: it can be cancelled
    before or after it starts, and waited for until it has unwound."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False
        self._ended = threading.Event()

    async def track(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            self._task = asyncio.current_task()
            if self._cancelled:  # interrupted before it started
                coro.close()
                raise asyncio.CancelledError
        try:
            return await coro
        finally:
            self._ended.set()

    def cancel(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the coroutine unless it has ended, and wait until it has unwound."""
        with self._lock:
            self._cancelled = True
            task = self._task
        if task is None or self._ended.is_set():
            return
        loop.call_soon_threadsafe(task.cancel)
        self._ended.wait()


_SHARED = LoopThread("jurist-sync-loop")


@atexit.register
def _close_shared_loop() -> None:
    """At exit: close what the loop holds open (HTTP pools close via async generators)."""
    # exiting anyway: an unfinished close only costs a warning
    with contextlib.suppress(TimeoutError, RuntimeError):
        _SHARED.close(timeout=5)


def shared_loop() -> asyncio.AbstractEventLoop:
    """The background event loop that :func:`run_sync` runs coroutines on (started if need be)."""
    return _SHARED.start()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the shared background loop and return its result (see the module doc)."""
    if _SHARED.on_loop():  # called from the shared loop itself: it cannot wait for itself
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()
    return _SHARED.run(coro)
