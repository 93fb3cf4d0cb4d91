"""Anthropic's Message Batches API: the batch hooks of the ``anthropic`` backend.

The wire format (as the ``anthropic`` SDK's ``resources/messages/batches.py`` and
``types/messages/message_batch*.py`` describe it):

- ``POST {base}/messages/batches`` with ``{"requests": [{"custom_id", "params"}, ...]}``
  (``params``: a Messages API body) creates a batch; there is no file upload, so the
  round's request file (one ``{"custom_id", "params"}`` per line) is streamed from disk
  as that array;
- ``GET {base}/messages/batches/{id}``: a ``message_batch`` with ``processing_status``
  (``in_progress``, ``canceling``, ``ended``), ``request_counts`` (``processing``,
  ``succeeded``, ``errored``, ``canceled``, ``expired``) and, once ended, ``results_url``;
- the results: JSONL at ``results_url``, one ``{"custom_id", "result": {"type":
  "succeeded", "message"} | {"type": "errored", "error": {"type": "error", "error":
  {"type", "message"}}} | {"type": "canceled"} | {"type": "expired"}}`` per request;
- ``POST {base}/messages/batches/{id}/cancel``.

Headers: ``x-api-key`` and ``anthropic-version``. Message Batches carry no metadata and
no input file id, so a batch whose create answer was lost cannot be found again by
listing: :meth:`AnthropicBatchClient.list` refuses (HTTP 405, as a server without a list of
batches answers), and such a file stops the run naming
``--batch-resubmit`` (adopting by id is not possible: nothing ties a batch to a file).

>>> hooks = AnthropicBatchHooks(None)  # the line format needs no model
>>> hooks.line_for("0-ab-1", {"model": "c", "max_tokens": 8, "messages": []})
b'{"custom_id":"0-ab-1","params":{"model":"c","max_tokens":8,"messages":[]}}\\n'
>>> out = hooks.parse_line(b'{"custom_id": "0-ab-1", "result": {"type": "expired"}}', "r:1")
>>> out.status_code, out.never_ran
(0, True)
>>> out = hooks.parse_line(b'{"custom_id": "x", "result": {"type": "errored", "error":'
...     b' {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}}}', "r:2")
>>> out.status_code, out.error
(429, 'rate_limit_error: slow')
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import aiohttp
import orjson

from jurist._secrets import scrub
from jurist.errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    DataError,
    ModelError,
    status_error,
)
from jurist.models._batch_hooks import BatchCounts, BatchInfo, OutputLine, UploadedFile
from jurist.models._openai_batch import custom_id_of
from jurist.models._openai_wire import retry_after_seconds, snippet
from jurist.models._retry import backoff_delay, is_transient
from jurist.types import Completion, Request

__all__ = ["ERROR_STATUS", "AnthropicBatchClient", "AnthropicBatchHooks", "error_text"]

T = TypeVar("T")

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status a live call gets for each error type of an errored batch result."""


def error_text(body: bytes) -> str:
    """``type: message`` of an Anthropic error body, or a snippet of it.

    >>> error_text(b'{"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}')
    'rate_limit_error: slow'
    """
    try:
        error = orjson.loads(body).get("error") or {}
        kind, message = error.get("type"), error.get("message")
    except (ValueError, AttributeError):
        return snippet(body)
    return ": ".join(str(x) for x in (kind, message) if x) or snippet(body)


class _MessagesModel(Protocol):
    """What the hooks use of :class:`~jurist.models._anthropic.AnthropicModel`."""

    def request_body(self, request: Request) -> dict[str, Any]: ...

    def completion_of(self, raw: bytes, latency: float = 0.0) -> Completion: ...

    def error_for_status(self, status: int, body: bytes) -> APIStatusError: ...

    def batch_client(self) -> AnthropicBatchClient: ...


class AnthropicBatchHooks:
    """The Message Batches hooks of one ``anthropic:`` model."""

    def __init__(self, model: _MessagesModel | None) -> None:
        self._model = model

    @property
    def model(self) -> _MessagesModel:
        assert self._model is not None, "these hooks were made without a model"
        return self._model

    def body_for(self, request: Request) -> dict[str, Any]:
        return self.model.request_body(request)

    def line_for(self, custom_id: str, body: dict[str, Any]) -> bytes:
        if not custom_id or len(custom_id) > 64:
            raise DataError(f"a Message Batches custom_id has 1 to 64 characters: {custom_id!r}")
        return orjson.dumps(
            {"custom_id": custom_id, "params": body}, option=orjson.OPT_APPEND_NEWLINE
        )

    def custom_id_of(self, line: bytes) -> str | None:
        return custom_id_of(line)

    def parse_line(self, line: bytes, where: str) -> OutputLine:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise self._bad(where, line, f"not a JSON object: {exc}") from None
        if not isinstance(value, dict):
            raise self._bad(where, line, f"not a JSON object but a {type(value).__name__}")
        cid = value.get("custom_id")
        if not isinstance(cid, str) or not cid:
            raise self._bad(where, line, f"custom_id must be a non-empty string, got {cid!r}")
        result = value.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded" and isinstance(result, dict):
            message = result.get("message")
            if not isinstance(message, dict):
                raise self._bad(where, line, "a succeeded result with no message")
            return OutputLine(cid, 200, orjson.dumps(message))
        if kind == "errored" and isinstance(result, dict):
            envelope = result.get("error")
            inner = envelope.get("error") if isinstance(envelope, dict) else None
            etype = inner.get("type") if isinstance(inner, dict) else None
            status = ERROR_STATUS.get(str(etype), 500)
            body = orjson.dumps(envelope if isinstance(envelope, dict) else {})
            return OutputLine(cid, status, body, error_text(body), str(etype or "error"))
        if kind == "expired":
            return OutputLine(
                cid, 0, None, "expired: the batch ended before this request ran", "batch_expired"
            )
        if kind == "canceled":
            return OutputLine(
                cid, 0, None, "canceled: the batch was canceled before this request ran",
                "batch_cancelled",
            )  # fmt: skip
        raise self._bad(where, line, f"result.type must be succeeded, errored, canceled or "
                        f"expired, got {kind!r}")  # fmt: skip

    def completion_from(self, body: bytes, request: Request) -> Completion:
        done = self.model.completion_of(body)
        return done.model_copy(update={"usage": done.usage.model_copy(update={"batch_calls": 1})})

    def error_for(self, status: int, body: bytes) -> APIStatusError:
        return self.model.error_for_status(status, body)

    def client(self) -> AnthropicBatchClient:
        return self.model.batch_client()

    @staticmethod
    def _bad(where: str, line: bytes, what: str) -> DataError:
        cid = custom_id_of(line)
        return DataError(f"{where}{f' (custom_id {cid!r})' if cid else ''}: {what}")


def batch_info(payload: Mapping[str, Any]) -> BatchInfo:
    """A ``message_batch`` in the batcher's terms: ``ended`` is ``completed``, or
    ``expired`` / ``cancelled`` when requests ended that way; its results are fetched by
    the batch id.

    >>> batch_info({"id": "b1", "processing_status": "ended", "request_counts": {
    ...     "processing": 0, "succeeded": 1, "errored": 0, "canceled": 0, "expired": 2}}).status
    'expired'
    """
    counts = payload.get("request_counts") or {}
    n = {
        k: int(counts.get(k) or 0)
        for k in ("processing", "succeeded", "errored", "canceled", "expired")
    }
    state = payload.get("processing_status")
    if state == "ended":
        status = "cancelled" if n["canceled"] else "expired" if n["expired"] else "completed"
    elif state == "canceling":
        status = "cancelling"
    else:
        status = "in_progress"
    batch_id = str(payload["id"])
    return BatchInfo(
        id=batch_id,
        status=status,
        output_file_id=batch_id if state == "ended" else None,
        request_counts=BatchCounts(
            total=sum(n.values()),
            completed=n["succeeded"] + n["errored"],
            failed=n["errored"],
        ),
    )


class AnthropicBatchClient:
    """The Message Batches endpoints under ``base_url`` (see the module docs). Every call
    but :meth:`create` is retried on transient failures (429, 5xx, timeouts)."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout: float = 60.0,
        owner: str = "anthropic",
        max_retries: int = 4,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.owner = owner
        self.timeout = timeout
        self.max_retries = max_retries
        self._headers = dict(headers)
        self._session: aiohttp.ClientSession | None = None
        self._results: dict[str, str] = {}
        self._random = random.Random()

    def __repr__(self) -> str:
        return f"AnthropicBatchClient({scrub(self.base_url)!r})"

    async def upload(self, data: bytes | Path, *, filename: str) -> UploadedFile:
        """Nothing to upload: the file is sent with :meth:`create`, named by its path."""
        if not isinstance(data, Path):
            raise DataError("Message Batches send a request file from disk (give its path)")
        return UploadedFile(str(data))

    async def create(
        self,
        input_file_id: str,
        *,
        completion_window: str = "24h",
        metadata: Mapping[str, str] | None = None,
    ) -> BatchInfo:
        """``POST /messages/batches``, the file at ``input_file_id`` streamed as the
        ``requests`` array. Never retried (a lost answer may hide a batch that exists)."""
        path = Path(input_file_id)

        async def body() -> AsyncIterator[bytes]:
            yield b'{"requests":['
            with path.open("rb") as f:
                for n, line in enumerate(f):
                    yield (b"," if n else b"") + line.rstrip(b"\n")
            yield b"]}"

        raw = await self._call("POST", "/messages/batches", f"file {path.name}", data=body())
        return self._info(raw)

    async def retrieve(self, batch_id: str) -> BatchInfo:
        return await self._retried(
            lambda: self._call("GET", f"/messages/batches/{batch_id}", f"batch {batch_id}"),
            self._info,
        )

    async def list(self, *, after: str | None = None, limit: int = 100) -> tuple[list[Any], bool]:
        raise status_error(
            405,
            f"{self.owner}: Message Batches carry no metadata or input file to find a batch "
            "by, so a batch whose create answer was lost cannot be looked up",
            model=self.owner,
        )

    async def cancel(self, batch_id: str) -> BatchInfo:
        return await self._retried(
            lambda: self._call("POST", f"/messages/batches/{batch_id}/cancel", f"batch {batch_id}"),
            self._info,
        )

    async def download(self, file_id: str, dest: Path) -> int:
        """The results of batch ``file_id`` (its ``results_url``) streamed to ``dest``."""
        url = self._results.get(file_id) or f"{self.base_url}/messages/batches/{file_id}/results"
        return await self._retried(
            lambda: self._call("GET", url, f"results of batch {file_id}", dest=dest), int
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- transport ----------------------------------------------------------------------

    def _info(self, raw: bytes | int) -> BatchInfo:
        try:
            payload = orjson.loads(raw) if isinstance(raw, bytes) else {}
            info = batch_info(payload)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"{self.owner}: Message Batches answered with an unexpected body: "
                f"{snippet(raw if isinstance(raw, bytes) else b'')}",
                model=self.owner,
            ) from exc
        url = payload.get("results_url")
        if isinstance(url, str) and url:
            self._results[info.id] = url
        return info

    async def _retried(self, call: Callable[[], Awaitable[Any]], then: Callable[[Any], T]) -> T:
        for retry in range(self.max_retries + 1):
            try:
                return then(await call())
            except ModelError as error:
                if retry >= self.max_retries or not is_transient(error):
                    error.attempts = retry + 1
                    raise
                await asyncio.sleep(
                    backoff_delay(retry, error, base=0.5, cap=8.0, retry_after_max=60.0,
                                  rng=self._random)
                )  # fmt: skip
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(
        self, method: str, path: str, what: str, *, dest: Path | None = None, data: Any = None
    ) -> bytes | int:
        url = path if path.startswith(("http://", "https://")) else f"{self.base_url}{path}"
        where = f"{self.owner}: {method} {scrub(url)} ({what})"
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(headers=self._headers)
        headers = {"content-type": "application/json"} if data is not None else {}
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.timeout, sock_read=self.timeout
        )
        try:
            async with self._session.request(
                method, url, data=data, headers=headers, timeout=timeout
            ) as resp:
                if not 200 <= resp.status < 300:
                    raw = await resp.content.read(64 * 1024)
                    raise status_error(
                        resp.status,
                        f"{where} answered HTTP {resp.status}: {error_text(raw)}",
                        model=self.owner,
                        body=raw.decode("utf-8", "replace"),
                        retry_after=retry_after_seconds(resp.headers),
                        request_id=resp.headers.get("request-id"),
                    )
                if dest is None:
                    return await resp.read()
                size = 0
                with dest.open("wb") as f:
                    async for piece in resp.content.iter_chunked(1 << 16):
                        f.write(piece)
                        size += len(piece)
                return size
        except TimeoutError:
            raise APITimeoutError(f"{where}: no answer within {self.timeout:g} s",
                                  model=self.owner) from None  # fmt: skip
        except aiohttp.ClientError as exc:
            raise APIConnectionError(f"{where}: {type(exc).__name__}: {exc}",
                                     model=self.owner) from exc  # fmt: skip
