"""What an OpenAI-compatible server's failures become: the status and connection errors of
:class:`~jurist.models._openai.OpenAIModel` (a live call, its server check, a failed
Batch API line), each naming the model and the URL.

>>> e = status_error_for("openai:tiny", "http://127.0.0.1:8000/v1/chat/completions", 429,
...                      b'{"error": {"message": "slow down"}}', {}, has_key=True)
>>> type(e).__name__, e.retry_after
('RateLimitError', None)
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from jurist.errors import (
    APIConnectionError,
    APIStatusError,
    UnsupportedRequestError,
    status_error,
)
from jurist.models._json_form import JsonForm, one_line, refuses
from jurist.models._openai_wire import error_detail, retry_after_seconds

__all__ = ["connection_error_for", "status_error_for"]


def status_error_for(
    spec: str,
    url: str,
    status: int,
    raw: bytes,
    headers: Mapping[str, str],
    *,
    has_key: bool,
    refused: JsonForm | None = None,
) -> APIStatusError:
    """The error for an answer of ``status`` with body ``raw``; ``refused``: the JSON form
    the request was sent in, when an answer refusing it is
    :class:`~jurist.errors.UnsupportedRequestError`."""
    detail = error_detail(raw)
    if refused is not None and refuses(status, detail, refused):
        return UnsupportedRequestError(
            f"{spec}: {url} refuses response_format {refused} "
            f"(HTTP {status}: {one_line(detail, 160)})",
            form=refused,
            status_code=status,
            model=spec,
            body=raw.decode("utf-8", "replace"),
            request_id=headers.get("x-request-id") or headers.get("request-id"),
        )
    if status == 401 and not has_key:
        detail += " (no api_key was given and OPENAI_API_KEY is not set)"
    return status_error(
        status,
        f"{spec}: {url} answered HTTP {status}: {detail}",
        model=spec,
        body=raw.decode("utf-8", "replace"),
        retry_after=retry_after_seconds(headers),
        request_id=headers.get("x-request-id") or headers.get("request-id"),
    )


def connection_error_for(spec: str, exc: aiohttp.ClientError, url: str) -> APIConnectionError:
    """The error for a call to ``url`` that failed below HTTP (``exc``)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        what = f"cannot reach {url}"
    elif isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ClientPayloadError):
        what = f"the connection to {url} was dropped before a full answer"
    else:
        what = f"the request to {url} failed"
    return APIConnectionError(f"{spec}: {what}: {exc or type(exc).__name__}", model=spec)
