"""Loopback servers that cache prompt prefixes and report it as the providers do.

:class:`AnthropicCacheServer` (``POST /v1/messages``) caches only at ``cache_control``
breakpoints: the prefix up to and including the marked block (system, then messages) is
written on first sight (``cache_creation_input_tokens``) and read afterwards
(``cache_read_input_tokens``), both left out of ``input_tokens``; a prefix under
``minimum`` tokens is not cached, as Anthropic ignores such a breakpoint.
:class:`OpenAICacheServer` (``POST /v1/chat/completions``) caches automatically: a prompt's
longest prefix already seen, in 128-token steps from 1,024 tokens, is reported in
``usage.prompt_tokens_details.cached_tokens`` (part of ``prompt_tokens``), or it caches
nothing with ``caching=False``. Tokens are characters / 4 here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests._loopback import Loopback

__all__ = ["AnthropicCacheServer", "OpenAICacheServer"]


def _tokens(text: str) -> int:
    return len(text) // 4


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content)


def _marked(content: Any) -> bool:
    return isinstance(content, list) and any("cache_control" in b for b in content)


class AnthropicCacheServer(Loopback):
    def __init__(self, answer: Callable[[dict[str, Any]], str], *, minimum: int = 1024) -> None:
        super().__init__(self._handle, path="/v1/messages", shutdown_timeout=0.5)
        self.answer = answer
        self.minimum = minimum
        self.bodies: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        parts = [body.get("system") or ""] + [m["content"] for m in body["messages"]]
        texts = [_text(p) for p in parts]
        breakpoint_at = max((i for i, p in enumerate(parts) if _marked(p)), default=None)
        whole = "".join(texts)
        read = written = 0
        if breakpoint_at is not None:
            prefix = "".join(texts[: breakpoint_at + 1])
            if _tokens(prefix) >= self.minimum:
                with self._lock:
                    if prefix in self._seen:
                        read = _tokens(prefix)
                    else:
                        self._seen.add(prefix)
                        written = _tokens(prefix)
        text = self.answer(body)
        return web.json_response(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": _tokens(whole) - read - written,
                    "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": written,
                    "output_tokens": max(1, _tokens(text)),
                },
            }
        )


class OpenAICacheServer(Loopback):
    def __init__(self, answer: Callable[[dict[str, Any]], str], *, caching: bool = True) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.answer = answer
        self.caching = caching
        self._seen: set[str] = set()  # prefixes at each 128-token boundary
        self._lock = threading.Lock()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = "".join(str(m.get("content") or "") for m in body["messages"])
        cached = 0
        if self.caching:
            step = 128 * 4  # characters in 128 tokens
            cuts = [prompt[:k] for k in range(step, len(prompt) + 1, step)]
            with self._lock:
                hits = [len(c) // 4 for c in cuts if c in self._seen]
                self._seen.update(cuts)
            cached = max(hits, default=0)
            cached = cached if cached >= 1024 else 0
        text = self.answer(body)
        prompt_tokens = _tokens(prompt)
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": max(1, _tokens(text)),
                    "total_tokens": prompt_tokens + max(1, _tokens(text)),
                    "prompt_tokens_details": {"cached_tokens": cached},
                },
            }
        )
