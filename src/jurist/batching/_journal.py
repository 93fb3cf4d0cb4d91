"""The journal the batcher records every step of a round to, before the next step.

The batcher (:mod:`jurist.batching._session`) never opens a database: the engine hands
it a :class:`Journal`, and the run store's batch tables
(:class:`jurist.runs._batch_store.BatchStore`) are the one implementation. A
*chunk* is one request file and the batch made of it; a :class:`Response` is what came
back for one ``custom_id``. What the journal holds is what lets a killed process resume
without submitting anything twice: a chunk is recorded before its upload, its file id
before its batch is created, its batch id as soon as the create answers, and every
answer as soon as its file is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Chunk", "Journal", "Response"]


@dataclass(frozen=True)
class Chunk:
    """One request file and the batch made of it."""

    chunk_id: str
    round: int
    state: str
    model: dict[str, Any]
    requests: int
    bytes: int
    first_idx: int | None
    last_idx: int | None
    file_id: str | None
    batch_id: str | None
    batch_status: str | None
    path: str | None


@dataclass(frozen=True)
class Response:
    """What came back for one ``custom_id``: ``status`` 200 with the completion's raw
    ``body``, an HTTP error status with its body, or ``status`` 0 with ``error`` (a line
    that could not be read). ``source`` names the file and line it came from."""

    custom_id: str
    idx: int
    status: int
    body: bytes | None
    error: str | None
    source: str


class Journal(Protocol):
    """Where the batcher records files, batches, requests and answers (see the module)."""

    def add_chunk(
        self,
        chunk_id: str,
        *,
        round_no: int,
        model: dict[str, Any],
        ids: Sequence[tuple[str, int]],
        size: int,
        state: str = "intent",
        path: str | None = None,
    ) -> None:
        """Record a request file (``ids``: its ``(custom_id, item)`` pairs)."""
        ...

    def update_chunk(self, chunk_id: str, **values: Any) -> None: ...

    def chunk(self, chunk_id: str) -> Chunk: ...

    def chunks(self, *states: str) -> list[Chunk]: ...

    def chunk_of(self, custom_id: str) -> Chunk | None: ...

    def chunk_with_batch(self, batch_id: str) -> Chunk | None: ...

    def ids_of(self, chunk_id: str) -> list[tuple[str, int]]: ...

    def recovered(
        self, chunk_id: str, *, action: str, batch_id: str, batch_status: str, detail: str
    ) -> None:
        """Record a batch adopted or created again for an uploaded file, with ``detail``."""
        ...

    def unassign(self, custom_ids: Iterable[str]) -> None:
        """The requests go into another file; count each resubmission."""
        ...

    def resent(self, custom_id: str) -> int: ...

    def save_responses(
        self,
        responses: Iterable[Response],
        *,
        chunk_id: str | None = None,
        state: dict[str, Any] | None = None,
    ) -> None: ...

    def response(self, custom_id: str) -> Response | None: ...

    def abandon_intents(self) -> int: ...

    def counts(self) -> dict[str, int]: ...
