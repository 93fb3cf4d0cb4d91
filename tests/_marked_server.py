"""A loopback OpenAI-compatible server whose faults and answers follow the item a request
is about, so a test can script each call of each item the same whatever the engine.

Items carry markers (``ans-3``, ``ra-3``, ``rb-3``: item 3's response, response A and B);
a request's key is its model name and the markers in its prompt, in order
(``"pa|ans-3"``; the two orders of a pair are ``"p|ra-3/rb-3"`` and ``"p|rb-3/ra-3"``),
so every call a judge makes has a key of its own. Each key takes its faults from
its script (429s, hangs); with none left the request gets ``answer(text, item)``. The
server counts the requests per key (``attempts``) and keeps each one's model and arrival
time (``arrivals``) and Authorization headers (``keys``).
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

from tests._fault_server import Fault
from tests._loopback import Loopback

__all__ = ["MarkedServer", "key_of"]

MARKER = re.compile(r"\b(ans|ra|rb)-(\d+)\b")

Answer = Callable[[str, int], str]


def key_of(model: str, text: str) -> str:
    """A request's key: its model and the markers of its prompt, in order."""
    return f"{model}|{'/'.join(m.group(0) for m in MARKER.finditer(text))}"


class MarkedServer(Loopback):
    """The server (see the module docs); a context manager."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.answer = answer
        self._lock = threading.Lock()
        self._scripts: dict[str, collections.deque[Fault]] = {}
        self.attempts: collections.Counter[str] = collections.Counter()
        self.arrivals: list[tuple[str, float]] = []
        self.keys: set[str] = set()

    def reset(self, scripts: Mapping[str, Sequence[Fault]] | None = None) -> None:
        """Forget the counts and take new scripts (key -> faults)."""
        with self._lock:
            self._scripts = {k: collections.deque(v) for k, v in (scripts or {}).items()}
            self.attempts.clear()
            self.arrivals.clear()
            self.keys.clear()

    def script(self, key: str, *faults: Fault) -> None:
        with self._lock:
            self._scripts.setdefault(key, collections.deque()).extend(faults)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
        key = key_of(str(body.get("model")), text)
        with self._lock:
            self.attempts[key] += 1
            self.arrivals.append((str(body.get("model")), time.monotonic()))
            self.keys.add(request.headers.get("Authorization", ""))
            queue = self._scripts.get(key)
            fault = queue.popleft() if queue else None
        if fault is not None and fault.kind == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), fault.seconds)
        if fault is not None and fault.kind == "status":
            error = {"message": f"scripted HTTP {fault.status}", "type": "scripted"}
            return web.json_response(
                {"error": error}, status=fault.status, headers=dict(fault.headers)
            )
        found = MARKER.search(text)
        content = self.answer(text, int(found.group(2)) if found else -1)
        return web.json_response(_completion(body, content))


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
