"""A loopback OpenAI-compatible server that checks the structure of the messages it gets.

Every request body is checked as OpenAI's chat API would: each message a role and a
content that is a string or a list of well-formed parts (``text`` parts with a string,
``image_url`` parts whose ``url`` is a valid base64 ``data:image/...`` URI or an
``http(s)`` URL, and an optional ``detail`` of ``auto``, ``low`` or ``high``). A body
that breaks a rule is answered 400 with the reason and recorded in ``rejected``; a good
one is recorded in ``bodies`` and answered with ``answer(body)``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests._fault_server import _completion
from tests._loopback import Loopback

__all__ = ["ChatServer", "image_parts", "problem", "user_text"]

_ROLES = ("system", "developer", "user", "assistant", "tool")


def problem(body: Any) -> str | None:
    """Why ``body`` is not a well-formed chat request, or ``None``."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "the body needs a model name"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            return f"messages[{i}]: bad role"
        content = m.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list) or not content:
            return f"messages[{i}].content must be a string or a non-empty list of parts"
        for j, part in enumerate(content):
            why = _part_problem(part)
            if why:
                return f"messages[{i}].content[{j}]: {why}"
    return None


def _part_problem(part: Any) -> str | None:
    if not isinstance(part, dict):
        return "not an object"
    if part.get("type") == "text":
        return None if isinstance(part.get("text"), str) else "a text part needs text"
    if part.get("type") != "image_url":
        return f"unknown part type {part.get('type')!r}"
    image = part.get("image_url")
    if not isinstance(image, dict) or set(image) - {"url", "detail"}:
        return "image_url must be an object with url (and detail)"
    if image.get("detail") not in (None, "auto", "low", "high"):
        return "bad detail"
    url = image.get("url")
    if not isinstance(url, str):
        return "image_url.url must be a string"
    if url.startswith(("http://", "https://")):
        return None
    head, _, data = url.partition(",")
    if not head.startswith("data:image/") or not head.endswith(";base64"):
        return "the url must be an http(s) URL or a data:image/...;base64 URI"
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return "the data URI's base64 is not valid"
    return None


def user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (its text parts joined)."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p["type"] == "text")


def image_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The image parts of every message, in order."""
    out: list[dict[str, Any]] = []
    for m in body["messages"]:
        if isinstance(m["content"], list):
            out += [p for p in m["content"] if p["type"] == "image_url"]
    return out


class ChatServer(Loopback):
    """The server; ``answer(body)`` gives the assistant's text for a good body."""

    def __init__(self, answer: Callable[[dict[str, Any]], str]) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.answer = answer
        self.bodies: list[dict[str, Any]] = []
        self.rejected: list[str] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        why = problem(body)
        if why is not None:
            self.rejected.append(why)
            return web.json_response({"error": {"message": why, "type": "invalid"}}, status=400)
        self.bodies.append(body)
        return web.json_response(_completion(body, self.answer(body)))
