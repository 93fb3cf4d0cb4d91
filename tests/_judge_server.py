"""A scripted OpenAI-compatible server on 127.0.0.1 for the framework adapters' tests.

Two models answer: ``sut`` (the model under test) answers questions it knows, and
``judge`` gives a likert rating read off the answer it is shown: "Austin" is 5, "Dallas"
is 2, anything with "Mars" gets an unreadable verdict, anything else 3. One server per
test module is enough (module-scoped fixture).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests._fault_server import _completion
from tests._loopback import Loopback

__all__ = ["ANSWERS", "JudgeServer", "verdict_for"]

ANSWERS = {
    "capital of Texas": "Austin",
    "largest city in Texas": "Dallas",
    "red planet": "Mars",
}


def verdict_for(text: str) -> str:
    """The judge's answer for a judge prompt (or any text naming the answer)."""
    if "Mars" in text:
        return "I cannot rate this."
    if "Austin" in text:
        return "5"
    if "Dallas" in text:
        return "2"
    return "3"


def _answer(body: dict[str, Any]) -> str:
    user = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    text = user[-1] if user else ""
    if isinstance(text, list):  # content parts
        text = " ".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
    if body.get("model") == "judge":
        return verdict_for(text)
    for key, answer in ANSWERS.items():
        if key in text:
            return answer
    return "I don't know"


class JudgeServer(Loopback):
    """The server; ``requests`` counts the calls, by model name."""

    def __init__(self) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.requests: dict[str, int] = {}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        model = str(body.get("model"))
        self.requests[model] = self.requests.get(model, 0) + 1
        return web.json_response(_completion(body, _answer(body)))
