"""A value an async function computes once per owner, shared by every caller.

A model's fingerprint (:meth:`jurist.models.Model.fingerprint`) is computed on its first
cache lookup and kept: a local folder is read once, a server is asked once. The owner may be
used from several event loops at a time (``judge_sync`` runs on a loop of its own, a Ray
actor on another thread), so the value is guarded by a thread lock, and concurrent callers
on one loop await the same task rather than each starting a computation. Callers on
different loops may each compute once before the first result lands; the first result to
land is the one every later caller gets, so all keys built from it agree.

>>> import asyncio
>>> calls = []
>>> async def compute() -> int:
...     calls.append(1)
...     await asyncio.sleep(0)
...     return 42
>>> once: Once[int] = Once()
>>> async def main() -> list[int]:
...     return list(await asyncio.gather(*(once.get(compute) for _ in range(5))))
>>> asyncio.run(main()), len(calls), asyncio.run(main()), len(calls)
([42, 42, 42, 42, 42], 1, [42, 42, 42, 42, 42], 1)
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["Once"]

T = TypeVar("T")


class Once(Generic[T]):
    """Holds the result of the first :meth:`get` until :meth:`reset`.

    A computation that raises stores nothing: the next :meth:`get` tries again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._box: tuple[T] | None = None  # the value, once there is one
        self._generation = 0
        self._tasks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[T]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def done(self) -> bool:
        """Whether a value is held."""
        return self._box is not None

    async def get(self, compute: Callable[[], Awaitable[T]]) -> T:
        """The held value, else the result of ``compute()`` (run once for all callers)."""
        box = self._box
        if box is not None:
            return box[0]
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._box is not None:
                return self._box[0]
            task = self._tasks.get(loop)
            if task is None:
                task = self._tasks[loop] = loop.create_task(_call(compute))
            generation = self._generation
        try:
            value = await asyncio.shield(task)  # a cancelled caller leaves the others theirs
        except BaseException:
            with self._lock:
                if self._tasks.get(loop) is task and task.done():
                    del self._tasks[loop]
            raise
        with self._lock:
            if self._tasks.get(loop) is task:
                del self._tasks[loop]
            if generation != self._generation:
                return value  # reset meanwhile: this result belongs to the old owner state
            if self._box is None:
                self._box = (value,)
            return self._box[0]

    def __getstate__(self) -> dict[str, object]:
        """A copy in another process keeps the value, not the locks or the running tasks."""
        return {"box": self._box}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]
        self._box = state["box"]  # type: ignore[assignment]

    def reset(self) -> None:
        """Forget the held value (a model that frees its weights loads them again)."""
        with self._lock:
            self._box = None
            self._generation += 1
            self._tasks = weakref.WeakKeyDictionary()


async def _call(compute: Callable[[], Awaitable[T]]) -> T:
    return await compute()
