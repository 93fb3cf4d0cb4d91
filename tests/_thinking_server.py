"""A loopback thinking judge on 127.0.0.1, in three providers' shapes, that cuts replies
inside their thinking.

Shapes: ``"reasoning_content"`` (OpenAI-compatible, the thinking in
``message.reasoning_content``: DeepSeek-R1, vLLM's reasoning parsers), ``"think_tag"``
(OpenAI-compatible, a ``<think>`` block before the answer in ``content``) and
``"anthropic"`` (the Messages API, a ``thinking`` block before the ``text`` block). Tokens
are words. The OpenAI shapes report ``usage.completion_tokens_details.reasoning_tokens``.

Each item's judge prompt names it (``Q<n>``) and says whether its answer is right
(``RIGHT`` or ``WRONG`` in the answer): the server's verdict is the truth. Item ``n`` is a
*long thinker* when it falls in the ``cut_share`` of items (exactly ``cut_share`` of
every run of consecutive items): its thinking is ``long_thought`` words, past the
request's ``max_tokens``, so its reply ends inside the thinking (``finish_reason:
"length"``, ``stop_reason: "max_tokens"``); others think ``short_thought`` words. The
thinking of every item leans to the *wrong* verdict word, so a judge that read a verdict
out of a cut thinking would score it wrong.

A request whose last user turn is jurist's continuation (it holds ``cut off by the
length limit``) is answered with the verdict alone; so is one that turns thinking off
(``chat_template_kwargs.enable_thinking: false``, ``reasoning_effort: "none"``, or no
Anthropic ``thinking`` when ``thinks_by_default`` is False).

The Anthropic shape checks bodies as the API does: ``budget_tokens`` at least 1024 and
below ``max_tokens``, no ``temperature`` or ``top_p`` beside ``thinking`` (400 else).
Every body is kept in ``bodies``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import orjson
from aiohttp import web

from tests._loopback import Loopback

__all__ = ["Shape", "ThinkingServer", "is_long"]

Shape = Literal["reasoning_content", "think_tag", "anthropic"]
_ITEM = re.compile(r"\bQ(\d+)\b")
CONTINUATION_MARK = "cut off by the length limit"


def is_long(n: int, share: float) -> bool:
    """Whether item ``n`` is a long thinker (exactly ``share`` of each run of items)."""
    return int((n + 1) * share + 1e-9) > int(n * share + 1e-9)


def _words(n: int, lean: str) -> str:
    base = f"The proposed answer might be {lean}; let me check each step again."
    words = base.split()
    return " ".join(words[i % len(words)] for i in range(n))


class ThinkingServer(Loopback):
    """The server (a context manager, as :class:`~tests._loopback.Loopback`)."""

    def __init__(
        self,
        shape: Shape,
        *,
        cut_share: float = 0.3,
        long_thought: int = 1500,
        short_thought: int = 40,
        thinks_by_default: bool = True,
    ) -> None:
        path = "/v1/messages" if shape == "anthropic" else "/v1/chat/completions"
        super().__init__(self._handle, path=path)
        self.shape = shape
        self.cut_share = cut_share
        self.long_thought = long_thought
        self.short_thought = short_thought
        self.thinks_by_default = thinks_by_default
        self.bodies: list[dict[str, Any]] = []
        self.rejected: list[str] = []

    # -- what a request asks ----------------------------------------------------------

    @staticmethod
    def _user(body: dict[str, Any]) -> str:
        users = [m for m in body["messages"] if m["role"] == "user"]
        content = users[-1]["content"]
        return content if isinstance(content, str) else str(content)

    @staticmethod
    def _first_user(body: dict[str, Any]) -> str:
        content = next(m for m in body["messages"] if m["role"] == "user")["content"]
        return content if isinstance(content, str) else str(content)

    def _thinks(self, body: dict[str, Any]) -> bool:
        if CONTINUATION_MARK in self._user(body):
            return False
        if self.shape == "anthropic":
            return "thinking" in body or self.thinks_by_default
        kwargs = body.get("chat_template_kwargs") or {}
        off = kwargs.get("enable_thinking") is False or body.get("reasoning_effort") == "none"
        return not off

    def _problem(self, body: dict[str, Any]) -> str | None:
        if self.shape != "anthropic" or "thinking" not in body:
            return None
        thinking = body["thinking"]
        budget = thinking.get("budget_tokens")
        if thinking.get("type") != "enabled" or not isinstance(budget, int):
            return "thinking must be {type: enabled, budget_tokens: int}"
        if budget < 1024:
            return "thinking.budget_tokens: must be >= 1024"
        if body["max_tokens"] <= budget:
            return "max_tokens must be greater than thinking.budget_tokens"
        if "temperature" in body or "top_p" in body:
            return "temperature and top_p may not be set with thinking"
        return None

    # -- the answer -------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        why = self._problem(body)
        if why is not None:
            self.rejected.append(why)
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": why}}
            return web.json_response(error, status=400)
        first = self._first_user(body)
        found = _ITEM.search(first)
        n = int(found.group(1)) if found else 0
        right = "RIGHT" in first
        verdict, wrong = ("Correct", "Incorrect") if right else ("Incorrect", "Correct")
        limit = int(body.get("max_tokens") or body.get("max_completion_tokens") or 1 << 30)
        want = 0
        if self._thinks(body):
            want = self.long_thought if is_long(n, self.cut_share) else self.short_thought
        thought_n = min(want, limit)
        cut = want + 1 > limit  # the verdict is one word
        thought = _words(thought_n, wrong)
        prompt_tokens = sum(len(str(m["content"]).split()) for m in body["messages"])
        prompt_tokens += len(str(body.get("system", "")).split())
        out_tokens = thought_n + (0 if cut else 1)
        if self.shape == "anthropic":
            content: list[dict[str, Any]] = []
            if thought_n:
                content.append({"type": "thinking", "thinking": thought, "signature": "sig"})
            if not cut:
                content.append({"type": "text", "text": verdict})
            return web.json_response(
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": content,
                    "stop_reason": "max_tokens" if cut else "end_turn",
                    "usage": {"input_tokens": prompt_tokens, "output_tokens": out_tokens},
                }
            )
        message: dict[str, Any] = {"role": "assistant"}
        if self.shape == "reasoning_content":
            message["content"] = "" if cut else verdict
            if thought_n:
                message["reasoning_content"] = thought
        else:
            opened = f"<think>{thought}" if thought_n else ""
            message["content"] = (
                opened if cut else (f"{opened}</think>\n{verdict}" if thought_n else verdict)
            )
        payload = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {"index": 0, "message": message, "finish_reason": "length" if cut else "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": out_tokens,
                "total_tokens": prompt_tokens + out_tokens,
                "completion_tokens_details": {"reasoning_tokens": thought_n},
            },
        }
        return web.Response(body=orjson.dumps(payload), content_type="application/json")
