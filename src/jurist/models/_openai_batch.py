"""Batch API line formats: request lines out, output and error lines back.

A Batch API request file is JSONL, one request per line (:func:`request_line`)::

    {"custom_id": "item-1", "method": "POST", "url": "/v1/chat/completions", "body": {...}}

Files are cut at the provider's limits by :func:`split_lines` (OpenAI: 50,000 requests and
200 MB per file). What comes back, one line per request, is read by
:func:`parse_output_line` into an :class:`OutputLine`. It reads the three forms in use:

- OpenAI's output file: ``{"id", "custom_id", "response": {"status_code": 200,
  "request_id", "body": {chat completion}}, "error": null}``;
- OpenAI's error file: a non-2xx ``response.status_code`` whose ``body`` holds
  ``{"error": {...}}``, or ``"response": null`` with ``"error": {"code", "message"}``
  (``batch_expired`` and ``batch_cancelled`` for requests that never ran);
- ``vllm run-batch``'s output (vLLM's ``BatchRequestOutput``): the same envelope, where a
  failed request has ``"response": {"status_code": 400, "request_id", "body": null}`` and
  the reason in ``error`` (a string, or vLLM's ``{"error": {"message", "type", "code"}}``).

>>> line = request_line("a1", {"model": "m", "messages": []})
>>> line
b'{"custom_id":"a1","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}\\n'
>>> out = parse_output_line(
...     b'{"id": "r1", "custom_id": "a1", "response": {"status_code": 200, "request_id": "q",'
...     b' "body": {"choices": [{"message": {"content": "Correct"}}]}}, "error": null}',
...     "out.jsonl:1",
... )
>>> out.custom_id, out.status_code, out.ok, out.body
('a1', 200, True, b'{"choices":[{"message":{"content":"Correct"}}]}')
>>> parse_output_line(b'{"custom_id": "a1", "response": {"status_code": 200', "out.jsonl:7")
Traceback (most recent call last):
...
jurist.errors.DataError: out.jsonl:7 (custom_id 'a1'): not a JSON object: ...
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import orjson

from jurist.errors import APIStatusError, ConfigError, DataError
from jurist.models._batch_hooks import OutputLine
from jurist.models._openai_batch_client import (
    BatchClient,
    BatchError,
    BatchErrors,
    BatchObject,
    BatchStatus,
    FileObject,
    RequestCounts,
)
from jurist.models._openai_wire import error_detail
from jurist.types import Completion, Request

__all__ = [
    "CHAT_COMPLETIONS",
    "OPENAI_MAX_BYTES",
    "OPENAI_MAX_REQUESTS",
    "BatchClient",
    "BatchError",
    "BatchErrors",
    "BatchObject",
    "BatchStatus",
    "FileObject",
    "OpenAIBatchHooks",
    "OutputLine",
    "RequestCounts",
    "custom_id_of",
    "parse_output_line",
    "request_line",
    "split_lines",
]

CHAT_COMPLETIONS = "/v1/chat/completions"
OPENAI_MAX_REQUESTS = 50_000
"""OpenAI's most requests in one batch input file."""
OPENAI_MAX_BYTES = 200_000_000
"""OpenAI's largest batch input file (200 MB, counted in decimal megabytes to stay under
either reading of the limit)."""

_CUSTOM_ID = re.compile(rb'"custom_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


def request_line(custom_id: str, body: dict[str, Any], *, url: str = CHAT_COMPLETIONS) -> bytes:
    """One request of a Batch API input file, newline included.

    >>> request_line("x", {"model": "m"}, url="/v1/embeddings")[-22:]
    b'"body":{"model":"m"}}\\n'
    """
    if not isinstance(custom_id, str) or not custom_id:
        raise DataError(
            f"a batch request's custom_id must be a non-empty string, got {custom_id!r}"
        )
    line = {"custom_id": custom_id, "method": "POST", "url": url, "body": body}
    try:
        return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError as exc:
        raise DataError(f"batch request {custom_id!r}: the body is not JSON: {exc}") from None


def split_lines(
    lines: Iterable[bytes],
    max_requests: int = OPENAI_MAX_REQUESTS,
    max_bytes: int = OPENAI_MAX_BYTES,
) -> Iterator[list[bytes]]:
    """Cut a stream of request lines (each ending in a newline) into files of at most
    ``max_requests`` lines and ``max_bytes`` bytes, in order.

    A single line longer than ``max_bytes`` cannot be sent in any file: a
    :class:`~jurist.errors.DataError` names its ``custom_id``.

    >>> lines = [request_line(f"r{i}", {"model": "m"}) for i in range(5)]
    >>> [len(piece) for piece in split_lines(lines, max_requests=2)]
    [2, 2, 1]
    >>> [len(piece) for piece in split_lines(lines, max_bytes=3 * len(lines[0]))]
    [3, 2]
    """
    if max_requests < 1 or max_bytes < 1:
        raise ConfigError(
            f"batch file limits must be >= 1 (max_requests={max_requests}, max_bytes={max_bytes})"
        )
    piece: list[bytes] = []
    size = 0
    for number, line in enumerate(lines, 1):
        if not line.endswith(b"\n"):
            raise DataError(
                f"batch request line {number} ({_name(line)}) does not end with a newline"
            )
        if len(line) > max_bytes:
            raise DataError(
                f"batch request line {number} ({_name(line)}) is {len(line)} bytes, more than "
                f"a whole batch file may hold (max_bytes={max_bytes})"
            )
        if piece and (len(piece) >= max_requests or size + len(line) > max_bytes):
            yield piece
            piece, size = [], 0
        piece.append(line)
        size += len(line)
    if piece:
        yield piece


class _ChatModel(Protocol):
    """What the hooks use of :class:`~jurist.models._openai.OpenAIModel`."""

    def request_body(self, request: Request) -> dict[str, Any]: ...

    def batch_completion(self, raw: bytes, request_schema: bool) -> Completion: ...

    def error_for_status(self, status: int, body: bytes) -> APIStatusError: ...

    def batch_client(self) -> BatchClient: ...


class OpenAIBatchHooks:
    """The Batch API hooks of one ``openai:`` model (see :mod:`jurist.models._batch_hooks`):
    chat-completion bodies as ``/v1/chat/completions`` lines, output and error files read
    by :func:`parse_output_line`, the files and batches endpoints by :class:`BatchClient`.
    """

    def __init__(self, model: _ChatModel) -> None:
        self.model = model

    def body_for(self, request: Request) -> dict[str, Any]:
        return self.model.request_body(request)

    def line_for(self, custom_id: str, body: dict[str, Any]) -> bytes:
        return request_line(custom_id, body)

    def parse_line(self, line: bytes, where: str) -> OutputLine:
        return parse_output_line(line, where)

    def custom_id_of(self, line: bytes) -> str | None:
        return custom_id_of(line)

    def completion_from(self, body: bytes, request: Request) -> Completion:
        return self.model.batch_completion(body, request.json_schema is not None)

    def error_for(self, status: int, body: bytes) -> APIStatusError:
        return self.model.error_for_status(status, body)

    def client(self) -> BatchClient:
        return self.model.batch_client()


def custom_id_of(line: bytes) -> str | None:
    """The ``custom_id`` of a line, read even from a broken one when it is there.

    >>> custom_id_of(b'{"id": "r", "custom_id": "item-7", "respo')
    'item-7'
    >>> custom_id_of(b'garbage') is None
    True
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        match = _CUSTOM_ID.search(line)
        if match is None:
            return None
        try:
            found = orjson.loads(b'"' + match.group(1) + b'"')
        except orjson.JSONDecodeError:
            return None
        return found if isinstance(found, str) and found else None
    cid = value.get("custom_id") if isinstance(value, dict) else None
    return cid if isinstance(cid, str) and cid else None


def parse_output_line(line: bytes, where: str) -> OutputLine:
    """Read one output-file line (OpenAI output or error file, or ``vllm run-batch``).

    ``where`` (``file:line``) starts every error message; a line that cannot be read
    raises :class:`~jurist.errors.DataError` naming it and its ``custom_id`` when that can
    still be read.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise _bad(where, line, f"not a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise _bad(where, line, f"not a JSON object but a {type(value).__name__}")
    cid = value.get("custom_id")
    if not isinstance(cid, str) or not cid:
        raise _bad(where, line, f"custom_id must be a non-empty string, got {cid!r}")
    response = value.get("response")
    error = value.get("error")
    if response is None:
        if error is None:
            raise _bad(where, line, "the line has neither a response nor an error")
        message, code = _error_text(error)
        return OutputLine(cid, 0, None, f"{code}: {message}" if code else message, code)
    if not isinstance(response, dict):
        raise _bad(where, line, f"response must be an object, got {type(response).__name__}")
    status = response.get("status_code")
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise _bad(where, line, f"response.status_code must be an HTTP status, got {status!r}")
    request_id = response.get("request_id")
    request_id = request_id if isinstance(request_id, str) else None
    payload = response.get("body")
    if payload is not None and not isinstance(payload, dict):
        raise _bad(where, line, f"response.body must be an object, got {type(payload).__name__}")
    if 200 <= status < 300:
        if payload is None:
            raise _bad(where, line, f"HTTP {status} with no response.body")
        return OutputLine(cid, status, orjson.dumps(payload), None, None, request_id)
    if payload is not None:
        body = orjson.dumps(payload)
        message = error_detail(body)
        code = _code_of(payload.get("error"))
    elif error is not None:
        message, code = _error_text(error)
        inner = error.get("error") if isinstance(error, dict) else None
        envelope = error if isinstance(inner, dict) else {"error": _as_error(error, message)}
        body = orjson.dumps(envelope)
    else:
        body, message, code = None, f"HTTP {status} with no body and no error", None
    return OutputLine(cid, status, body, message, code, request_id)


def _error_text(error: Any) -> tuple[str, str | None]:
    """The message and code of a line's ``error``: a string, ``{"code", "message"}``, or
    vLLM's ``{"error": {"message", "type", "code"}}``."""
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    if isinstance(error, dict):
        message = error.get("message")
        text = message if isinstance(message, str) and message else orjson.dumps(error).decode()
        return text, _code_of(error)
    return str(error), None


def _code_of(error: Any) -> str | None:
    if not isinstance(error, dict):
        return None
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _as_error(error: Any, message: str) -> dict[str, Any]:
    return dict(error) if isinstance(error, dict) else {"message": message}


def _name(line: bytes) -> str:
    cid = custom_id_of(line)
    return f"custom_id {cid!r}" if cid else "no readable custom_id"


def _bad(where: str, line: bytes, what: str) -> DataError:
    cid = custom_id_of(line)
    return DataError(f"{where}{f' (custom_id {cid!r})' if cid else ''}: {what}")
