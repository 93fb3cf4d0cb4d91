"""What a backend offers to have its requests sent in provider batches: its batch hooks.

A backend that a provider's batch API can serve implements :class:`BatchBackend`: its
:meth:`~BatchBackend.batch_hooks` returns a :class:`BatchHooks`, which knows the
provider's wire format and nothing of who batches:

- request to body and line: :meth:`BatchHooks.body_for` (the JSON body a live call would
  send) and :meth:`BatchHooks.line_for` (one line of the request file, newline included);
- result line to answer: :meth:`BatchHooks.parse_line` reads one line of a result file
  into an :class:`OutputLine`; :meth:`BatchHooks.completion_from` turns a successful
  answer's body into the :class:`~jurist.types.Completion` a live call returns, and
  :meth:`BatchHooks.error_for` a failed one's into the error a live call raises;
- the endpoints: :meth:`BatchHooks.client` opens a :class:`BatchTransport` (upload,
  create, retrieve, list, download, cancel).

The batcher that parks requests and sends them in rounds (:mod:`jurist.batching`) uses
these; no backend imports it, and none calls up into any engine. A second provider is
one module: the OpenAI hooks live in :mod:`jurist.models._openai_batch`, Anthropic's in
:mod:`jurist.models._anthropic_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from jurist.errors import APIStatusError
from jurist.types import Completion, Request

__all__ = [
    "BatchBackend",
    "BatchCounts",
    "BatchHooks",
    "BatchInfo",
    "BatchTransport",
    "OutputLine",
    "UploadedFile",
]


@dataclass(frozen=True, slots=True)
class OutputLine:
    """One line of a batch output, error or results file, in any provider's format.

    ``status_code`` is the HTTP status the request got (0 when it never ran: a line the
    batch expired or cancelled before running it, :attr:`never_ran`). ``body`` is the
    raw JSON of the response body: the provider's completion when :attr:`ok`, else an
    error body (or ``None`` when there is nothing to say). ``error`` is the readable
    reason of a failed line, ``code`` its machine-readable code when the line gives one.
    """

    custom_id: str
    status_code: int
    body: bytes | None
    error: str | None = None
    code: str | None = None
    request_id: str | None = None

    @property
    def ok(self) -> bool:
        """A 2xx answer with a body: the completion is in :attr:`body`."""
        return 200 <= self.status_code < 300 and self.body is not None

    @property
    def never_ran(self) -> bool:
        """The batch ended (expired, cancelled) before this request ran: send it again."""
        return self.status_code == 0 and self.code in ("batch_expired", "batch_cancelled")


@dataclass(frozen=True, slots=True)
class BatchCounts:
    """How many requests of a batch ran, and how many of them failed."""

    total: int = 0
    completed: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """A batch as a provider describes it, in the terms the batcher reads.

    ``status``: ``validating``, ``in_progress``, ``finalizing``, ``cancelling`` while it
    runs; ``completed``, ``failed``, ``expired`` or ``cancelled`` once it ended.
    ``output_file_id`` / ``error_file_id``: what :meth:`BatchTransport.download` fetches
    the results by. OpenAI's ``BatchObject`` has the same attributes.
    """

    id: str
    status: str
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    request_counts: BatchCounts | None = None
    metadata: dict[str, str] | None = field(default=None)


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """A request file the provider took (``id``: what :meth:`BatchTransport.create` names)."""

    id: str


class BatchTransport(Protocol):
    """A provider's batch endpoints. ``create`` is never retried inside the transport
    (its answer may be lost after the batch was made); the others may be."""

    base_url: str

    async def upload(self, data: bytes | Path, *, filename: str) -> Any:
        """The request file, streamed from ``data``; an object with its ``id``."""
        ...

    async def create(
        self,
        input_file_id: str,
        *,
        completion_window: str = "24h",
        metadata: dict[str, str] | None = None,
    ) -> Any:
        """The batch made of the uploaded file (a :class:`BatchInfo`-shaped object)."""
        ...

    async def retrieve(self, batch_id: str) -> Any: ...

    async def list(self, *, after: str | None = None, limit: int = 100) -> tuple[list[Any], bool]:
        """A page of the server's batches (newest first) and whether more follow."""
        ...

    async def cancel(self, batch_id: str) -> Any: ...

    async def download(self, file_id: str, dest: Path) -> int:
        """A result file streamed to ``dest``; its size."""
        ...

    async def aclose(self) -> None: ...


class BatchHooks(Protocol):
    """One backend's batch wire format (see the module docs)."""

    def body_for(self, request: Request) -> dict[str, Any]:
        """The JSON body a live call would send for ``request``."""
        ...

    def line_for(self, custom_id: str, body: dict[str, Any]) -> bytes:
        """One request of the request file, newline included."""
        ...

    def parse_line(self, line: bytes, where: str) -> OutputLine:
        """One line of a result file; a :class:`~jurist.errors.DataError` starting with
        ``where`` (``file:line``) when it cannot be read."""
        ...

    def custom_id_of(self, line: bytes) -> str | None:
        """The ``custom_id`` of a line, read even from a broken one when it is there."""
        ...

    def completion_from(self, body: bytes, request: Request) -> Completion:
        """The completion a live call returns for ``request``, from a successful answer's
        body (its usage counted as ``batch_calls``: billed at the batch rates)."""
        ...

    def error_for(self, status: int, body: bytes) -> APIStatusError:
        """The error a live call raises when the server answers ``status`` with ``body``."""
        ...

    def client(self) -> BatchTransport:
        """A transport to the provider's batch endpoints, with the model's credentials."""
        ...


@runtime_checkable
class BatchBackend(Protocol):
    """A backend whose requests a provider's batch API can carry."""

    def batch_hooks(self) -> BatchHooks: ...
