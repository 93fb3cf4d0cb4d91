"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for fault tests.

It answers ``POST /v1/chat/completions`` in OpenAI's wire format, but each request first
takes the next :class:`Fault` from a script: an error status (with ``Retry-After`` or
``retry-after-ms``), a hang past the client's timeout, a dropped connection, or a success.
Scripts are a global queue (taken in arrival order) and per-prompt queues keyed by the last
user message (deterministic under concurrency); with nothing scripted it succeeds. A
success answers ``"echo: <last user message>"`` so a test can tell every row's answer.

It runs its own event loop in a daemon thread, so it serves async tests, ``run_sync`` and
the client's loops alike, and counts every request it receives (``requests``).

    with FaultServer([status(429, retry_after_ms=20), drop()]) as server:
        model = get_model("openai:x", base_url=server.url, api_key="x", timeout=0.5)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from tests._loopback import Loopback

__all__ = ["Fault", "FaultServer", "drop", "hang", "ok", "status"]

FaultKind = Literal["ok", "status", "hang", "drop"]


@dataclass(frozen=True)
class Fault:
    """What the server does with one request."""

    kind: FaultKind
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    text: str | None = None


def ok(text: str | None = None) -> Fault:
    """Answer 200 with ``text`` (default: an echo of the last user message)."""
    return Fault("ok", text=text)


def status(
    code: int,
    *,
    retry_after: int | None = None,
    retry_after_ms: int | None = None,
    message: str | None = None,
) -> Fault:
    """Answer an OpenAI-style error body with status ``code`` and optional retry headers;
    ``message`` is the error's message (default ``"scripted HTTP <code>"``)."""
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    return Fault("status", status=code, headers=headers, text=message)


def hang(seconds: float = 5.0) -> Fault:
    """Say nothing for ``seconds`` (cut short when the server stops), then answer."""
    return Fault("hang", seconds=seconds)


def drop() -> Fault:
    """Close the connection without any response."""
    return Fault("drop")


class FaultServer(Loopback):
    """The server; use it as a context manager, or call :meth:`start` and :meth:`stop`.

    ``url`` is the base URL to give the client (``http://127.0.0.1:PORT/v1``).
    """

    def __init__(
        self,
        script: Iterable[Fault] = (),
        *,
        by_prompt: Mapping[str, Sequence[Fault]] | None = None,
    ) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self._lock = threading.Lock()
        self._queue: collections.deque[Fault] = collections.deque(script)
        self._by_prompt: dict[str, collections.deque[Fault]] = {
            prompt: collections.deque(faults) for prompt, faults in (by_prompt or {}).items()
        }
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self.faults_served: list[FaultKind] = []

    def script(self, *faults: Fault) -> None:
        """Append faults to the global queue."""
        with self._lock:
            self._queue.extend(faults)

    def script_for(self, prompt: str, *faults: Fault) -> None:
        """Append faults for requests whose last user message is ``prompt``."""
        with self._lock:
            self._by_prompt.setdefault(prompt, collections.deque()).extend(faults)

    # -- requests ---------------------------------------------------------------------

    def _next_fault(self, prompt: str) -> Fault:
        with self._lock:
            self.requests += 1
            queue = self._by_prompt.get(prompt)
            if queue:
                fault = queue.popleft()
            elif self._queue:
                fault = self._queue.popleft()
            else:
                fault = ok()
            self.faults_served.append(fault.kind)
            return fault

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        user = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
        prompt = user[-1] if user else ""
        fault = self._next_fault(prompt)
        with self._lock:
            self.bodies.append(body)
        if fault.kind == "drop":
            assert request.transport is not None
            request.transport.abort()
            # Nothing more can be written; a cancelled handler is not logged as an error.
            raise asyncio.CancelledError
        if fault.kind == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), fault.seconds)
        if fault.kind == "status":
            message = fault.text or f"scripted HTTP {fault.status}"
            error = {"message": message, "type": "scripted"}
            return web.json_response(
                {"error": error}, status=fault.status, headers=dict(fault.headers)
            )
        text = fault.text if fault.text is not None else f"echo: {prompt}"
        return web.json_response(_completion(body, text))


def _completion(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    prompt_tokens = max(1, prompt_chars // 4)
    completion_tokens = max(1, len(text) // 4)
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fault"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
