"""One attempt's deadline, for the per-call hot path of the HTTP backends.

``with deadline(seconds):`` inside a task behaves as ``async with asyncio.timeout(seconds)``
does: when the block is still running ``seconds`` after it began, the task is cancelled
and the block raises :class:`TimeoutError`; a cancellation from elsewhere stays a
cancellation. What differs is the cost. ``asyncio.timeout`` builds a timer per attempt (a
``Timeout``, a ``TimerHandle`` pushed on the loop's heap and cancelled there) and measured
about 4% of a judgment's client CPU against a stub server. Here the attempts of one loop
that share a length are one queue: as each deadline is its start plus the same length,
the queue is in deadline order, and one timer, armed at the earliest deadline still
running, serves all of them. An attempt costs a small list appended and marked done.

>>> import asyncio
>>> async def slow() -> str:
...     try:
...         with deadline(0.01):
...             await asyncio.sleep(10)
...     except TimeoutError:
...         return "timed out"
...     return "finished"
>>> asyncio.run(slow())
'timed out'
>>> async def quick() -> int:
...     with deadline(5):
...         await asyncio.sleep(0)
...     return 1
>>> asyncio.run(quick())
1
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from types import TracebackType
from typing import Any

__all__ = ["deadline"]

# an entry: [when, task, the task's cancelling() at the start, done, expired]
_WHEN, _TASK, _CANCELLING, _DONE, _EXPIRED = range(5)
_DUE_SLACK = 1e-3  # a deadline less than this ahead when the timer fires is due (clock steps)


class _Queue:
    """The running attempts of one loop that share one length, in the order they began
    (so in deadline order), and the one timer armed at the earliest live deadline."""

    __slots__ = ("entries", "loop", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.entries: deque[list[Any]] = deque()
        self.timer: asyncio.TimerHandle | None = None

    def fire(self) -> None:
        """The timer: cancel the tasks whose deadline passed; arm it at the next one."""
        self.timer = None
        now = self.loop.time() + _DUE_SLACK
        entries = self.entries
        while entries:
            head = entries[0]
            if head[_DONE]:
                entries.popleft()
                continue
            if head[_WHEN] > now:
                self.timer = self.loop.call_at(head[_WHEN], self.fire)
                return
            entries.popleft()
            head[_EXPIRED] = True
            head[_TASK].cancel()


_QUEUES: dict[asyncio.AbstractEventLoop, dict[float, _Queue]] = {}

if sys.version_info >= (3, 12):
    _current_task = asyncio.current_task  # C code from 3.12 on
else:  # 3.11's asyncio.current_task is Python code around this C-level map (a call saved)
    _current_task = asyncio.tasks._current_tasks.get  # type: ignore[attr-defined]


def _queue(loop: asyncio.AbstractEventLoop, seconds: float) -> _Queue:
    queues = _QUEUES.get(loop)
    if queues is None:
        for closed in [lp for lp in _QUEUES if lp.is_closed()]:
            del _QUEUES[closed]  # its loop ended: nothing of it runs any more
        queues = _QUEUES[loop] = {}
    queue = queues.get(seconds)
    if queue is None:
        queue = queues[seconds] = _Queue(loop)
    return queue


class deadline:  # lower case: used like asyncio.timeout
    """``seconds`` (``None``: no deadline) for the block, in the running task."""

    __slots__ = ("_entry", "_queue", "_seconds")

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._entry: list[Any] | None = None
        self._queue: _Queue | None = None

    def __enter__(self) -> deadline:
        seconds = self._seconds
        if seconds is None:
            return self
        loop = asyncio.get_running_loop()
        task = _current_task(loop)
        if task is None:
            raise RuntimeError("deadline() must be used inside a task")
        queues = _QUEUES.get(loop)
        queue = None if queues is None else queues.get(seconds)
        if queue is None:
            queue = _queue(loop, seconds)
        self._queue = queue
        self._entry = entry = [loop.time() + seconds, task, task.cancelling(), False, False]
        queue.entries.append(entry)
        if queue.timer is None:
            queue.timer = loop.call_at(entry[_WHEN], queue.fire)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entry = self._entry
        if entry is None:
            return
        entry[_DONE] = True
        if self._queue is not None:  # the finished ones at the front are forgotten
            entries = self._queue.entries
            while entries and entries[0][_DONE]:
                entries.popleft()
        if entry[_EXPIRED]:
            # as asyncio.timeout: the cancellation it asked for is taken back, and it is a
            # TimeoutError unless the task was also cancelled from elsewhere
            uncancelled = entry[_TASK].uncancel()
            if exc_type is asyncio.CancelledError and uncancelled <= entry[_CANCELLING]:
                raise TimeoutError from exc
