"""A client for the OpenAI Batch API: files up, batches created, polled, files down.

Get one from the model whose requests it carries (it shares the model's base URL, key,
headers and timeout; the key never leaves the client)::

    client = model.batch_client()
    uploaded = await client.upload(path, filename="round-1.jsonl")
    batch = await client.create(uploaded.id, metadata={"run": "exp1"})
    batch = await client.retrieve(batch.id)              # until batch.status is final
    await client.download(batch.output_file_id, Path("out.jsonl"))
    await client.aclose()

Endpoints are under the base URL: ``{base}/files``, ``{base}/files/{id}/content`` and
``{base}/batches``. Failures raise the errors of the openai backend (a 429 is a
:class:`~jurist.errors.RateLimitError`, no connection an
:class:`~jurist.errors.APIConnectionError`, ...), naming the endpoint and the file or
batch; never the key.

Retries: :meth:`BatchClient.upload`, :meth:`~BatchClient.retrieve`, :meth:`~BatchClient.list`,
:meth:`~BatchClient.download` and :meth:`~BatchClient.cancel` are retried inside the client
on transient failures (429, 5xx, timeouts, dropped connections), at most ``max_retries``
times with full-jitter exponential backoff, honouring ``Retry-After``. A retried upload
can at worst leave an unused file on the server. :meth:`BatchClient.create` is **never**
retried: when its answer is lost the batch may exist all the same, and creating it again
would run every request twice. A caller whose ``create`` failed must look the batch up
with :meth:`BatchClient.list` (by the ``metadata`` it gave, or by ``input_file_id``)
before creating again.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiohttp
import pydantic
from pydantic import BaseModel, ConfigDict

from jurist._files import replaced_atomically
from jurist._secrets import scrub
from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    ConfigError,
    ModelError,
    ResponseTooLargeError,
    status_error,
)
from jurist.models._openai_wire import error_detail, retry_after_seconds, snippet
from jurist.models._retry import backoff_delay, is_transient

__all__ = [
    "BatchClient",
    "BatchError",
    "BatchErrors",
    "BatchObject",
    "BatchStatus",
    "FileObject",
    "RequestCounts",
]

T = TypeVar("T")
BatchStatus = Literal[
    "validating",
    "failed",
    "in_progress",
    "finalizing",
    "completed",
    "expired",
    "cancelling",
    "cancelled",
]
Stamp = int | float | str | None  # providers differ: Unix seconds, or an ISO string

_CHUNK = 1 << 20
MAX_ANSWER_BYTES = 32 * 1024 * 1024
"""The largest answer read into memory (downloads stream to disk and have no cap)."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class FileObject(_Wire):
    """A file on the server (``POST /files``, ``GET /files/{id}``)."""

    id: str
    bytes: int | None = None
    filename: str | None = None
    purpose: str | None = None
    created_at: Stamp = None


class RequestCounts(_Wire):
    total: int = 0
    completed: int = 0
    failed: int = 0


class BatchError(_Wire):
    """One reason a batch failed (``line``: the input file line, when it is about one)."""

    code: str | None = None
    message: str | None = None
    param: str | None = None
    line: int | None = None


class BatchErrors(_Wire):
    data: list[BatchError] = []


class BatchObject(_Wire):
    """A batch as the server describes it; fields the server adds are ignored."""

    id: str
    status: BatchStatus
    endpoint: str | None = None
    input_file_id: str | None = None
    completion_window: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    request_counts: RequestCounts | None = None
    metadata: dict[str, str] | None = None
    errors: BatchErrors | None = None
    created_at: Stamp = None
    in_progress_at: Stamp = None
    expires_at: Stamp = None
    finalizing_at: Stamp = None
    completed_at: Stamp = None
    failed_at: Stamp = None
    expired_at: Stamp = None
    cancelling_at: Stamp = None
    cancelled_at: Stamp = None

    @property
    def finished(self) -> bool:
        """The batch will not change any more (completed, failed, expired, cancelled)."""
        return self.status in ("completed", "failed", "expired", "cancelled")

    def error_summary(self) -> str:
        """The reasons the server gave for a failed batch, one line (``""`` if none).

        >>> BatchObject.model_validate({"id": "b", "status": "failed", "errors": {"data": [
        ...     {"code": "invalid_json_line", "message": "bad", "line": 3}]}}).error_summary()
        'invalid_json_line: bad (line 3)'
        """
        parts = []
        for e in self.errors.data if self.errors else []:
            text = ": ".join(x for x in (e.code, e.message) if x) or "unknown error"
            parts.append(f"{text} (line {e.line})" if e.line is not None else text)
        return "; ".join(parts)


class _BatchList(_Wire):
    data: list[BatchObject]
    has_more: bool = False


class BatchClient:
    """The Batch API endpoints of one OpenAI-compatible server (see the module docs).

    ``headers`` are sent on every call (the model's ``Authorization`` among them);
    ``timeout`` bounds each small call, and each read or connect of a transfer (an upload
    or download of a large file has no total deadline, only a stall one). ``owner`` names
    the model in error messages. ``sleep`` is awaited between retries (tests record it).
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 16.0,
        retry_after_max: float = 60.0,
        owner: str | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"batch base_url {base_url!r} must start with http:// or https://")
        if timeout <= 0 or max_retries < 0 or backoff_base < 0 or backoff_max < 0:
            raise ConfigError("batch timeout must be > 0; max_retries and backoff >= 0")
        self.base_url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.owner = owner or scrub(self.base_url)
        self._headers = dict(headers or {})  # holds the key: never shown
        self._sleep = sleep
        self._random = random.Random()
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"BatchClient({scrub(self.base_url)!r})"

    # -- the endpoints ------------------------------------------------------------------

    async def upload(self, data: bytes | Path, *, filename: str) -> FileObject:
        """``POST {base}/files`` with ``purpose=batch``: the request file (bytes, or a
        path streamed from disk at each attempt)."""
        what = f"file {filename!r}"

        async def attempt() -> FileObject:
            with contextlib.ExitStack() as stack:
                content = stack.enter_context(data.open("rb")) if isinstance(data, Path) else data
                form = aiohttp.FormData()
                form.add_field("purpose", "batch")
                form.add_field("file", content, filename=filename, content_type="application/jsonl")
                raw = await self._call("POST", "/files", what, data=form, big=True)
            return self._parse(FileObject, raw, "POST /files", what)

        return await self._retried(attempt)

    async def create(
        self,
        input_file_id: str,
        *,
        endpoint: str = "/v1/chat/completions",
        completion_window: str = "24h",
        metadata: Mapping[str, str] | None = None,
    ) -> BatchObject:
        """``POST {base}/batches``: the batch made of ``input_file_id``. Never retried
        (see the module docs): look the batch up with :meth:`list` after a failure."""
        body: dict[str, Any] = {
            "input_file_id": input_file_id,
            "endpoint": endpoint,
            "completion_window": completion_window,
        }
        if metadata:
            body["metadata"] = dict(metadata)
        what = f"input file {input_file_id!r}"
        raw = await self._call("POST", "/batches", what, json=body)
        return self._parse(BatchObject, raw, "POST /batches", what)

    async def retrieve(self, batch_id: str) -> BatchObject:
        """``GET {base}/batches/{id}``."""
        path, what = f"/batches/{batch_id}", f"batch {batch_id!r}"

        async def attempt() -> BatchObject:
            raw = await self._call("GET", path, what)
            return self._parse(BatchObject, raw, f"GET {path}", what)

        return await self._retried(attempt)

    async def list(
        self, *, after: str | None = None, limit: int = 100
    ) -> tuple[list[BatchObject], bool]:
        """``GET {base}/batches``: one page, newest first, and whether more follow
        (pass the last id as ``after`` for the next page)."""
        params: dict[str, str] = {"limit": str(limit)}
        if after is not None:
            params["after"] = after
        what = f"batches after {after!r}" if after else "batches"

        async def attempt() -> tuple[list[BatchObject], bool]:
            raw = await self._call("GET", "/batches", what, params=params)
            page = self._parse(_BatchList, raw, "GET /batches", what)
            return page.data, page.has_more

        return await self._retried(attempt)

    async def cancel(self, batch_id: str) -> BatchObject:
        """``POST {base}/batches/{id}/cancel`` (asking twice is harmless)."""
        path, what = f"/batches/{batch_id}/cancel", f"batch {batch_id!r}"

        async def attempt() -> BatchObject:
            raw = await self._call("POST", path, what)
            return self._parse(BatchObject, raw, f"POST {path}", what)

        return await self._retried(attempt)

    async def download(self, file_id: str, dest: Path) -> int:
        """``GET {base}/files/{id}/content`` streamed to ``dest`` (whole or not at all:
        written beside it, then renamed); the bytes written."""
        path, what = f"/files/{file_id}/content", f"file {file_id!r}"

        async def attempt() -> int:
            with replaced_atomically(dest, what=f"the batch {what}") as tmp:
                await self._call("GET", path, what, dest=tmp)
                return tmp.stat().st_size

        return await self._retried(attempt)

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    # -- transport ----------------------------------------------------------------------

    async def _retried(self, attempt: Callable[[], Awaitable[T]]) -> T:
        for retry in range(self.max_retries + 1):
            try:
                return await attempt()
            except ModelError as error:
                if retry >= self.max_retries or not is_transient(error):
                    error.attempts = retry + 1
                    raise
                await self._sleep(
                    backoff_delay(
                        retry,
                        error,
                        base=self.backoff_base,
                        cap=self.backoff_max,
                        retry_after_max=self.retry_after_max,
                        rng=self._random,
                    )
                )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession(headers=self._headers)
            self._loop = loop
        return self._session

    async def _call(
        self,
        method: str,
        path: str,
        what: str,
        *,
        big: bool = False,
        dest: Path | None = None,
        **kwargs: Any,
    ) -> bytes:
        """One HTTP call: the body of a 2xx answer, or with ``dest`` its size (the body
        streamed there)."""
        url = f"{self.base_url}{path}"
        where = f"{self.owner}: {method} {scrub(url)} ({what})"
        session = await self._open()
        if big or dest is not None:
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=self.timeout, sock_read=self.timeout
            )
        else:
            timeout = aiohttp.ClientTimeout(total=self.timeout)
        try:
            async with session.request(method, url, timeout=timeout, **kwargs) as resp:
                if not 200 <= resp.status < 300:
                    raw = await resp.content.read(64 * 1024)
                    raise status_error(
                        resp.status,
                        f"{where} answered HTTP {resp.status}: {error_detail(raw)}",
                        model=self.owner,
                        body=raw.decode("utf-8", "replace"),
                        retry_after=retry_after_seconds(resp.headers),
                        request_id=resp.headers.get("x-request-id"),
                    )
                if dest is None:
                    return await _read_capped(resp, where)
                return await _stream_to(resp, dest)
        except TimeoutError:
            raise APITimeoutError(
                f"{where}: no answer within {self.timeout:g} s", model=self.owner
            ) from None
        except aiohttp.ClientError as exc:
            raise APIConnectionError(
                f"{where}: {type(exc).__name__}: {exc}", model=self.owner
            ) from exc

    def _parse(self, kind: type[T], raw: bytes, endpoint: str, what: str) -> T:
        try:
            return kind.model_validate_json(raw)  # type: ignore[attr-defined, no-any-return]
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(body)"
            raise ModelError(
                f"{self.owner}: {endpoint} ({what}) answered with an unexpected body "
                f"({field}: {first['msg']}): {snippet(raw)}",
                model=self.owner,
            ) from None


async def _read_capped(resp: aiohttp.ClientResponse, where: str) -> bytes:
    """A small answer's body (a file or batch object, a page of batches), at most
    ``MAX_ANSWER_BYTES``: past it the read stops with a ResponseTooLargeError."""
    pieces: list[bytes] = []
    size = 0
    async for piece in resp.content.iter_any():
        size += len(piece)
        if size > MAX_ANSWER_BYTES:
            raise ResponseTooLargeError(
                f"{where}: the answer passed {MAX_ANSWER_BYTES} bytes; the read was stopped"
            )
        pieces.append(piece)
    return b"".join(pieces)


async def _stream_to(resp: aiohttp.ClientResponse, dest: Path) -> bytes:
    """Write the body to ``dest``; an empty result (the size is the file's)."""
    with dest.open("wb") as f:
        async for piece in resp.content.iter_chunked(_CHUNK):
            f.write(piece)
    return b""
