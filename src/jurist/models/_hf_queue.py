"""Dynamic batching: concurrent calls become one batch that runs on a worker thread.

:class:`GenerateQueue` collects the payloads that coroutines :meth:`~GenerateQueue.submit` under a
*group key* (requests that can share one ``generate`` call have equal keys). A collector
task waits up to ``wait_s`` for a group to fill to ``max_batch``, then hands the oldest
group's payloads to ``run_batch`` on the executor, a single thread, so torch never blocks
the event loop and never runs two batches at once. While a batch runs, new calls queue up
and form the next one.

The queue is kept per event loop, so one model serves ``asyncio.run`` after
``asyncio.run`` (``judge_sync``) and loops in several threads at once; the single worker
thread is shared by all of them.

``run_batch`` returns one result or exception per payload. When it raises for a whole batch
of several, each payload is run alone so that one bad request fails only its own call (not
for :class:`~jurist.errors.ModelLoadError`: a model that cannot load fails every call).

>>> import asyncio, concurrent.futures
>>> pool = concurrent.futures.ThreadPoolExecutor(1)
>>> seen = []
>>> def run(key, xs):
...     seen.append(len(xs))
...     return [x * 2 for x in xs]
>>> b = GenerateQueue(run, lambda: pool, max_batch=8, wait_s=0.01)
>>> async def main():
...     return await asyncio.gather(*(b.submit("k", i) for i in range(5)))
>>> asyncio.run(main()), seen
([0, 2, 4, 6, 8], [5])
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from jurist.errors import ModelLoadError

__all__ = ["GenerateQueue"]

P = TypeVar("P")
R = TypeVar("R")

RunBatch = Callable[[Hashable, list[P]], Sequence[R | BaseException]]


@dataclass
class _Item(Generic[P, R]):
    payload: P
    future: asyncio.Future[R]


@dataclass
class _LoopQueue(Generic[P, R]):
    groups: dict[Hashable, list[_Item[P, R]]] = field(default_factory=dict)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class GenerateQueue(Generic[P, R]):
    """Group concurrent submissions by key and run each group as one batch.

    ``run_batch(key, payloads)`` runs on the executor that ``executor()`` returns; it gets
    at most ``max_batch`` payloads that share ``key``.
    """

    def __init__(
        self,
        run_batch: RunBatch[P, R],
        executor: Callable[[], concurrent.futures.Executor],
        *,
        max_batch: int,
        wait_s: float,
    ) -> None:
        self._run_batch = run_batch
        self._executor = executor
        self.max_batch = max(1, max_batch)
        self.wait_s = max(0.0, wait_s)
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue[P, R]] = (
            weakref.WeakKeyDictionary()
        )

    async def submit(self, key: Hashable, payload: P) -> R:
        """Queue one payload and wait for its result."""
        return (await self.submit_many([(key, payload)], flush=False))[0]

    async def submit_many(
        self, items: Sequence[tuple[Hashable, P]], *, flush: bool = True
    ) -> list[R]:
        """Queue several payloads at once; ``flush`` runs them without waiting for more."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _LoopQueue()
        futures: list[asyncio.Future[R]] = []
        for key, payload in items:
            fut: asyncio.Future[R] = loop.create_future()
            queue.groups.setdefault(key, []).append(_Item(payload, fut))
            futures.append(fut)
            if len(queue.groups[key]) >= self.max_batch:
                queue.ready.set()
        if flush:
            queue.ready.set()
        if queue.task is None or queue.task.done():
            queue.task = loop.create_task(self._drain(loop, queue))
        return list(await asyncio.gather(*futures))

    async def _drain(self, loop: asyncio.AbstractEventLoop, queue: _LoopQueue[P, R]) -> None:
        batch: list[_Item[P, R]] = []
        try:
            while queue.groups:
                key, items = next(iter(queue.groups.items()))
                if len(items) < self.max_batch and not queue.ready.is_set() and self.wait_s:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(queue.ready.wait(), self.wait_s)
                    key, items = next(iter(queue.groups.items()))
                queue.ready.clear()
                batch = [i for i in items[: self.max_batch] if not i.future.done()]
                rest = items[self.max_batch :]
                del queue.groups[key]
                if rest:  # the group's overflow goes to the back of the line
                    queue.groups[key] = rest
                    if len(rest) >= self.max_batch:
                        queue.ready.set()
                if not batch:
                    continue
                payloads = [i.payload for i in batch]
                results = await loop.run_in_executor(
                    self._executor(), self._run_safely, key, payloads
                )
                for item, result in zip(batch, results, strict=True):
                    if item.future.done():
                        continue
                    if isinstance(result, BaseException):
                        item.future.set_exception(result)
                    else:
                        item.future.set_result(result)
                batch = []
        except BaseException as exc:
            leftover = batch + [i for items in queue.groups.values() for i in items]
            queue.groups.clear()
            for item in leftover:
                if not item.future.done():
                    if isinstance(exc, asyncio.CancelledError):
                        item.future.cancel()
                    else:
                        item.future.set_exception(exc)
            if not isinstance(exc, Exception):  # cancelled, interrupted: let it go on
                raise

    def _run_safely(self, key: Hashable, payloads: list[P]) -> list[R | BaseException]:
        try:
            results = list(self._run_batch(key, payloads))
        except Exception as exc:
            if len(payloads) == 1 or isinstance(exc, ModelLoadError):
                return [exc] * len(payloads)
        else:
            return results
        out: list[R | BaseException] = []
        for payload in payloads:
            try:
                out.extend(self._run_batch(key, [payload]))
            except Exception as exc:
                out.append(exc)
        return out
