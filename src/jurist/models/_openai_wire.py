"""The openai backend's wire helpers: logprobs, error bodies and ``Retry-After`` headers.

Pure functions over what a server sent, kept apart from the transport in
:mod:`jurist.models._openai`.
"""

from __future__ import annotations

import email.utils
import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jurist.types import TokenLogprob, TopLogprob

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "error_detail",
    "parse_logprobs",
    "read_capped",
    "retry_after_seconds",
    "snippet",
    "whole_body_fits",
]


def parse_logprobs(data: Any) -> tuple[TokenLogprob, ...] | None:
    content = data.get("content") if isinstance(data, dict) else None
    if not content:
        return None
    return tuple(
        TokenLogprob(
            token=item["token"],
            logprob=_float(item.get("logprob")),
            top=tuple(
                TopLogprob(token=alt["token"], logprob=_float(alt.get("logprob")))
                for alt in item.get("top_logprobs") or ()
            ),
        )
        for item in content
    )


def _float(value: Any) -> float:
    """A logprob as sent: servers write ``null`` (or nothing) for minus infinity."""
    return -math.inf if value is None else float(value)


def snippet(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return repr(text[:limit] + ("..." if len(text) > limit else "")) if text else "(empty body)"


def error_detail(raw: bytes) -> str:
    """The human part of an error body: OpenAI's ``error.message``, FastAPI's ``detail``."""
    try:
        data = json.loads(raw)
    except ValueError:
        return snippet(raw, 500)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(data.get(key), str):
                return str(data[key])
    return snippet(raw, 500)


def retry_after_seconds(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` (seconds or an HTTP date).

    An HTTP date counts from ``now`` (default: the current time, UTC).

    >>> retry_after_seconds({"Retry-After": "2.5"})
    2.5
    >>> retry_after_seconds({"retry-after-ms": "150"})
    0.15
    >>> retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    0.0
    >>> retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},
    ...                     now=datetime(2015, 10, 21, 7, 27, 30, tzinfo=UTC))
    30.0
    >>> retry_after_seconds({}) is None
    True
    """
    lower = {key.lower(): value for key, value in headers.items()}
    value = lower.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def whole_body_fits(
    resp: aiohttp.ClientResponse, cap: int, too_large: Callable[[str], Exception]
) -> bool:
    """True when ``resp.read()`` may read the body at once: a ``Content-Length`` within
    ``cap`` and no compression (:func:`read_capped`'s fast path, checked without a
    coroutine); raises ``too_large(...)`` for a ``Content-Length`` past the cap."""
    length = resp.content_length
    if length is not None and length > cap:
        raise too_large(f"announced {length} bytes (Content-Length)")
    if length is None:
        return False
    encoding = resp.headers.get("Content-Encoding")
    return encoding is None or encoding.strip().lower() in ("", "identity")


async def read_capped(
    resp: aiohttp.ClientResponse, cap: int, too_large: Callable[[str], Exception]
) -> bytes:
    """The answer's body, at most ``cap`` bytes of it (else ``too_large(what happened)``).

    With a ``Content-Length`` and no compression the parser stops at it, so one check up
    front suffices (the fast path). A chunked, close-delimited or compressed body (a small
    gzip can inflate to gigabytes) is read piece by piece, decompressed, and the read stops
    as soon as the pieces pass the cap.
    """
    if whole_body_fits(resp, cap, too_large):
        return await resp.read()
    pieces: list[bytes] = []
    size = 0
    async for piece in resp.content.iter_any():
        size += len(piece)
        if size > cap:
            raise too_large(f"sent more than {cap} bytes")
        pieces.append(piece)
    return b"".join(pieces)
