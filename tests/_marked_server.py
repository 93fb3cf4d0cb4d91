"""A loopback OpenAI-compatible server whose faults and answers follow the item a request
is about, so a test can script each call of each item the same whatever the engine.

Items carry markers (``ans-3``, ``ra-3``, ``rb-3``: item 3's response, response A and B);
a request's key is its model name and the markers in its prompt, in order
(``"pa|ans-3"``; the two orders of a pair are ``"p|ra-3/rb-3"`` and ``"p|rb-3/ra-3"``),
so every call a judge makes has a key of its own. Each key takes its faults from
its script (429s, hangs); with none left the request gets ``answer(text, item)``. The
server counts the requests per key (``attempts``) and keeps each one's model and arrival
time (``arrivals``) and Authorization headers (``keys``).

It is also a Batch API (it extends :class:`tests._batch_server.BatchServer`: files,
batches, polls; a batch ends ``delay`` seconds after it is made, at once by default):
each request line of a batch is answered, when the batch runs it, by the same logic as
a live call of its body, so it takes the next fault of its key's script and counts as
one attempt under its key. A status fault becomes a line of the error file with that
status and the live call's error body; a hang has no meaning for a line (a client
waits for a batch, not for a line: the provider's time is the batch's), so a hung line
is answered as if it had not hung. The lines of one batch arrive at the same time (the
batch's end). ``uploads`` and ``creations`` count the files and batches made,
``live_calls`` the live calls.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from tests._batch_server import BatchServer
from tests._fault_server import Fault

__all__ = ["MarkedServer", "key_of"]

MARKER = re.compile(r"\b(ans|ra|rb)-(\d+)\b")

Answer = Callable[[str, int], str]


def key_of(model: str, text: str) -> str:
    """A request's key: its model and the markers of its prompt, in order."""
    return f"{model}|{'/'.join(m.group(0) for m in MARKER.finditer(text))}"


class MarkedServer(BatchServer):
    """The server (see the module docs); a context manager."""

    def __init__(self, answer: Answer, *, delay: float = 0.0) -> None:
        super().__init__(delay=delay)
        self.reply = answer
        self._lock = threading.Lock()
        self._scripts: dict[str, collections.deque[Fault]] = {}
        self.attempts: collections.Counter[str] = collections.Counter()
        self.arrivals: list[tuple[str, float]] = []

    def reset(self, scripts: Mapping[str, Sequence[Fault]] | None = None) -> None:
        """Forget the counts (batch counters included) and take new scripts (key ->
        faults)."""
        with self._lock:
            self._scripts = {k: collections.deque(v) for k, v in (scripts or {}).items()}
            self.attempts.clear()
            self.arrivals.clear()
            self.keys.clear()
            self.uploads = self.creations = self.live_calls = 0
            self.submissions.clear()

    def script(self, key: str, *faults: Fault) -> None:
        with self._lock:
            self._scripts.setdefault(key, collections.deque()).extend(faults)

    def _take(self, body: Mapping[str, Any]) -> tuple[Fault | None, str]:
        """Count one attempt of ``body``'s key; its next fault, and the prompt text."""
        text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
        key = key_of(str(body.get("model")), text)
        with self._lock:
            self.attempts[key] += 1
            self.arrivals.append((str(body.get("model")), time.monotonic()))
            queue = self._scripts.get(key)
            return (queue.popleft() if queue else None), text

    def _content_of(self, text: str) -> str:
        found = MARKER.search(text)
        return self.reply(text, int(found.group(2)) if found else -1)

    async def _live(self, request: web.Request) -> web.Response:
        self.live_calls += 1
        body = await request.json()
        fault, text = self._take(body)
        if fault is not None and fault.kind == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), fault.seconds)
        if fault is not None and fault.kind == "status":
            return web.json_response(
                _error_body(fault), status=fault.status, headers=dict(fault.headers)
            )
        return web.json_response(_completion(body, self._content_of(text)))

    def line_response(self, body: dict[str, Any], *, request_id: str) -> tuple[int, Any]:
        """One line of a batch, answered as a live call of ``body`` (a hang has no
        meaning for a line: answered)."""
        fault, text = self._take(body)
        if fault is not None and fault.kind == "status":
            return fault.status, _error_body(fault)
        return 200, _completion(body, self._content_of(text))


def _error_body(fault: Fault) -> dict[str, Any]:
    return {"error": {"message": f"scripted HTTP {fault.status}", "type": "scripted"}}


def _completion(body: Mapping[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-marked",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "marked"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22},
    }
