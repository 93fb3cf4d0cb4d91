"""One aiohttp session (connection pool) per event loop, closed with its loop.

A remote backend is used from several event loops over its life: ``asyncio.run`` per
call in a script, the sync twins' shared background loop, a trainer's own loop, a Ray
actor's. An aiohttp session belongs to the loop that opened it, so a backend holds one per
loop (:class:`LoopSessions`) and each is closed in time:

- when its loop shuts down (``asyncio.run`` or a ``Runner`` closes the async generators it
  started: each session has one whose ``finally`` closes it);
- when the backend's ``aclose()`` runs (on that loop, or on another running loop through
  ``run_coroutine_threadsafe``);
- when the backend is garbage-collected while a loop that outlives it is still running
  (:meth:`LoopSessions.close_when_collected`), so the collector never meets an open session;
  and at interpreter exit, on a loop left open and idle (a framework's loop that is never
  shut down, such as the one DeepEval's ``evaluate()`` runs metrics on).

>>> import aiohttp, asyncio
>>> pools = LoopSessions(aiohttp.ClientSession)
>>> async def twice() -> bool:
...     first, again = await pools.get(), await pools.get()
...     await pools.aclose()
...     return first is again and first.closed
>>> asyncio.run(twice())
True
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, Callable

import aiohttp

__all__ = ["LoopSessions"]


class LoopSessions:
    """The sessions of one backend, one per event loop; ``make()`` opens a new one."""

    def __init__(self, make: Callable[[], aiohttp.ClientSession]) -> None:
        self._make = make
        self.sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._closers: dict[asyncio.AbstractEventLoop, AsyncGenerator[None, None]] = {}

    def current(self) -> aiohttp.ClientSession | None:
        """The running loop's open session, or None (then :meth:`get` opens one): the hot
        path's check, with no coroutine of its own. A session leaves :attr:`sessions` before
        it is closed (every close here takes it out first), so one found there is open."""
        return self.sessions.get(asyncio.get_running_loop())

    async def get(self) -> aiohttp.ClientSession:
        """The running loop's session, opened on first use (or after it was closed)."""
        session = self.sessions.get(asyncio.get_running_loop())
        if session is None or session.closed:
            session = await self._open()
        return session

    async def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        for other in [lp for lp in self.sessions if lp.is_closed()]:
            # Its loop ended without shutting down async generators: drop what is left.
            self.sessions.pop(other, None)
            self._closers.pop(other, None)
        session = self._make()
        self.sessions[loop] = session
        # The loop tracks started async generators and closes them when asyncio.run (or a
        # Runner) shuts it down: the closer's ``finally`` then closes the session in time.
        closer = self._closer(loop, session)
        await closer.__anext__()
        self._closers[loop] = closer
        return session

    async def _closer(
        self, loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self.sessions.get(loop) is session:
                del self.sessions[loop]
                self._closers.pop(loop, None)
            await session.close()

    async def aclose(self) -> None:
        """Close the session of every event loop, each on its own loop."""
        current = asyncio.get_running_loop()
        closers = list(self._closers.items())
        self.sessions.clear()
        self._closers.clear()
        for loop, closer in closers:
            if loop is current:
                await closer.aclose()
            elif loop.is_running():
                future = asyncio.run_coroutine_threadsafe(closer.aclose(), loop)
                await asyncio.wrap_future(future)

    def close_when_collected(self, owner: object) -> None:
        """Close these sessions on their loops once ``owner`` is garbage-collected.

        A loop that outlives the owner (the sync twins' shared loop) would otherwise meet
        an open session only in the garbage collector, which reports it as unclosed. The
        finalizer holds the session map, so the sessions stay reachable (never collected
        open) until it schedules their close.
        """
        weakref.finalize(owner, _close_all, self.sessions)


def _close_all(sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession]) -> None:
    """Close each open session on its loop: scheduled on a running loop; run to the end on
    a loop that is neither running nor closed (a framework's loop that is never shut down,
    such as DeepEval's, met at interpreter exit), when no loop runs in this thread."""
    open_sessions = list(sessions.items())
    sessions.clear()  # out of the map before closing, as every close here does
    for loop, session in open_sessions:
        if session.closed or loop.is_closed():
            continue
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(session.close(), loop)
        elif not _loop_running_here():
            loop.run_until_complete(session.close())


def _loop_running_here() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
