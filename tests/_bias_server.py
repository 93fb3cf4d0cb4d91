"""A scripted OpenAI-compatible pairwise judge on 127.0.0.1 with planted biases.

It reads an ``mt_bench_pair`` judge prompt (``<answer_a>`` / ``<answer_b>``) and answers
``[[A]]``, ``[[B]]`` or ``[[C]]``. Each request draws a uniform ``u`` from a hash of its
own text (deterministic, independent between the two orders of a pair). Model ``biased``:

- ``u < POSITION``: ``[[A]]``, whatever the replies (position bias);
- else, when one reply is the other plus trailing text, ``u < POSITION + VERBOSITY``: the
  longer one (verbosity bias);
- else, when exactly one reply starts with "Sure!" (the judge's own style),
  ``POSITION + VERBOSITY <= u < POSITION + VERBOSITY + SELF``: that one (self-preference);
- else the content verdict: the reply whose sum ``x + y = z`` is right wins, a tie when
  both are equally right (markdown and filler are ignored).

Model ``reference`` gives the content verdict only. With the probes' definitions the
planted effects are exactly POSITION, VERBOSITY, 0 (format) and SELF in expectation.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from aiohttp import web

from tests._fault_server import _completion
from tests._loopback import Loopback

__all__ = ["POSITION", "SELF", "VERBOSITY", "BiasServer"]

POSITION = 0.3
VERBOSITY = 0.4
SELF = 0.3

_ANSWER = re.compile(r"<answer_([ab])>\n(.*?)\n</answer_\1>", re.DOTALL)
_SUM = re.compile(r"(\d+) \+ (\d+) = (\d+)")


def _right(reply: str) -> float:
    m = _SUM.search(reply)
    return 1.0 if m is not None and int(m[1]) + int(m[2]) == int(m[3]) else 0.0


def _verdict(model: str, text: str) -> str:
    replies = dict(_ANSWER.findall(text))
    a, b = replies.get("a", ""), replies.get("b", "")
    return _decide(model, text, a, b)


def _decide(model: str, text: str, a: str, b: str) -> str:
    u = int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12
    if model == "biased":
        if u < POSITION:
            return "[[A]]"
        padded = (a != b) and (a.startswith(b) or b.startswith(a))
        if padded and u < POSITION + VERBOSITY:
            return "[[A]]" if len(a) > len(b) else "[[B]]"
        own = (a.startswith("Sure!"), b.startswith("Sure!"))
        if own[0] != own[1] and POSITION + VERBOSITY <= u < POSITION + VERBOSITY + SELF:
            return "[[A]]" if own[0] else "[[B]]"
    ra, rb = _right(a), _right(b)
    return "[[A]]" if ra > rb else "[[B]]" if rb > ra else "[[C]]"


def _prompt(body: dict[str, Any]) -> str:
    user = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    return str(user[-1]) if user else ""


class BiasServer(Loopback):
    """The server; ``requests`` counts the calls, by model name."""

    def __init__(self) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.requests: dict[str, int] = {}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        model = str(body.get("model"))
        self.requests[model] = self.requests.get(model, 0) + 1
        verdict = _verdict(model, _prompt(body))
        return web.json_response(_completion(body, f"Compared. {verdict}"))
