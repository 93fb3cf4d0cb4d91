"""An aiohttp handler served on 127.0.0.1 from an event loop in a daemon thread.

The tests' stand-in OpenAI-compatible servers share this start/stop: a free port (0),
an event loop of their own (so sync code, ``asyncio.run`` and other loops can all call
them), and a stop that wakes long-waiting handlers (``stopping``) before it shuts the
server down.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Self

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Loopback:
    """Serve ``handler`` at ``POST path`` on 127.0.0.1; a context manager (or start/stop).

    ``shutdown_timeout`` is how long a stop waits for handlers still running before it
    cancels them. While it serves, ``port`` is its port and ``base_url`` (or ``url``) its
    ``http://127.0.0.1:PORT/v1``; ``stopping`` is set (on the server's loop) when a stop
    begins, for handlers that wait and should give up then.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        path: str = "/v1/chat/completions",
        shutdown_timeout: float = 60.0,
    ) -> None:
        self._handler = handler
        self._path = path
        self._shutdown_timeout = shutdown_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    url = base_url

    @property
    def stopping(self) -> asyncio.Event:
        assert self._stopping is not None, "the loopback server is not started"
        return self._stopping

    def start(self) -> Self:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        return self

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_post(self._path, self._handler)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None

    async def _shutdown(self) -> None:
        assert self._stopping is not None and self._runner is not None
        self._stopping.set()
        await self._runner.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
