"""One round of the batch-API mode on the wire: files up, batches made, polled, read back.

Every step is recorded in the :class:`~jurist.batching._journal.Journal` before
the next one starts, so a process killed anywhere resumes without sending a request
twice: a chunk is recorded (``intent``) before its upload, its ``file_id`` before the
batch is created, and its ``batch_id`` as soon as the create call answers. A create
whose answer was lost (the process died between the call and the commit) is found
again with ``list`` by the chunk's metadata or input file before any new create. A
server that cannot list batches leaves that chunk to :mod:`jurist.batching._recover`
(adopt a batch by id, or create it again when ``resubmit`` says so).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from jurist.batching._journal import Chunk, Journal, Response
from jurist.batching._recover import list_refused, stuck, where
from jurist.errors import APIStatusError, DataError, JuristRuntimeError
from jurist.models._batch_hooks import OutputLine
from jurist.models._retry import backoff_delay, is_transient

__all__ = ["FINISHED_STATUSES", "Line", "Piece", "Transfers", "parse_file", "read_answers"]

FINISHED_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True)
class Piece:
    """One request file written to disk: its ``path``, the ``(custom_id, item)`` of each
    line in order, and its size in bytes."""

    path: Path
    ids: list[tuple[str, int]]
    size: int


@dataclass(frozen=True)
class Line:
    """One request to send: its ``custom_id``, item index and request body."""

    custom_id: str
    idx: int
    body: dict[str, Any]


def parse_file(
    path: Path,
    ids: dict[str, int],
    parse: Callable[[bytes, str], OutputLine] | None = None,
    custom_id: Callable[[bytes], str | None] | None = None,
) -> tuple[list[Response], list[str]]:
    """The answers in an output, error or results file for the requests in ``ids``
    (``custom_id`` -> item index), and the places of lines that named no known request
    (:func:`read_answers`, as lists)."""
    strays: list[str] = []
    answers = list(read_answers(path, ids, strays, parse, custom_id))
    return answers, strays


def read_answers(
    path: Path,
    ids: dict[str, int],
    strays: list[str],
    parse: Callable[[bytes, str], OutputLine] | None = None,
    custom_id: Callable[[bytes], str | None] | None = None,
) -> Iterator[Response]:
    """The answers in an output, error or results file for the requests in ``ids``
    (``custom_id`` -> item index), one by one as the file is read; the places of lines
    that named no known request are added to ``strays``. ``parse`` / ``custom_id``: the
    provider's line reader (a backend's
    :meth:`~jurist.models._batch_hooks.BatchHooks.parse_line` and
    :meth:`~jurist.models._batch_hooks.BatchHooks.custom_id_of`; OpenAI's by default).

    A line that cannot be read becomes an answer with status 0 and the error (naming the
    file, the line and the ``custom_id``) when its ``custom_id`` can still be read. A line
    saying the request never ran (``batch_expired``, ``batch_cancelled``) is no answer:
    the request is sent again or recorded as expired (``on_expired``).
    """
    if parse is None or custom_id is None:
        from jurist.models._openai_batch import custom_id_of, parse_output_line

        parse, custom_id = parse or parse_output_line, custom_id or custom_id_of
    with path.open("rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                out = parse(line, where)
            except DataError as e:
                cid = custom_id(line)
                if cid is None or cid not in ids:
                    strays.append(f"{where} (unreadable: {e})")
                    continue
                yield Response(cid, ids[cid], 0, None, f"batch: {e}", where)
                continue
            if out.custom_id not in ids:
                strays.append(f"{where} (custom_id {out.custom_id!r} was not asked)")
                continue
            if out.never_ran:
                continue
            idx = ids[out.custom_id]
            if out.ok:
                yield Response(out.custom_id, idx, 200, out.body, None, where)
            elif out.status_code >= 300:
                body = out.body or orjson.dumps({"error": {"message": out.error or ""}})
                yield Response(out.custom_id, idx, out.status_code, body, out.error, where)
            else:
                text = f"batch: {where}: {out.error or 'no answer'}"
                yield Response(out.custom_id, idx, 0, None, text, where)


_RNG = random.Random()
CREATE_RECOVERIES = 4
"""Look-ups (then a create) after ``create`` failed with a transient error, per file."""


class Transfers:
    """The protocol steps for one run: upload, create (or find), poll, download.

    ``resubmit``: create again the batch of an uploaded file whose batch cannot be looked
    up (the server cannot list batches); ``resend_cost(chunk)`` says what that may cost
    twice, and ``on_note`` is told when it is done.
    """

    def __init__(
        self,
        store: Journal,
        *,
        run_id: str,
        folder: Path,
        completion_window: str,
        poll_interval: float,
        on_status: Callable[[str], None] | None = None,
        resubmit: bool = False,
        resend_cost: Callable[[Chunk], str] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.folder = folder
        self.window = completion_window
        self.poll_interval = poll_interval
        self.on_status = on_status or (lambda _: None)
        self.resubmit = resubmit
        self.resend_cost = resend_cost or (lambda c: f"{c.requests} requests")
        self.on_note = on_note or (lambda _: None)
        self.http_calls = 0

    async def send(self, client: Any, model: dict[str, Any], round_no: int, piece: Piece) -> Chunk:
        """Record, upload (streamed from its file) and submit one request file; the chunk
        as recorded."""
        chunk_id = f"{self.run_id[:12]}-r{round_no}-{uuid.uuid4().hex[:10]}"
        self.store.add_chunk(
            chunk_id, round_no=round_no, model=model, ids=piece.ids, size=piece.size
        )
        uploaded = await client.upload(piece.path, filename=f"jurist-{chunk_id}.jsonl")
        self.http_calls += 1
        self.store.update_chunk(chunk_id, state="uploaded", file_id=uploaded.id)
        chunk = self.store.chunk(chunk_id)
        try:
            return await self._create(client, chunk)
        except JuristRuntimeError as e:
            if not is_transient(e):
                raise
            # The batch may exist although the answer failed (a lost answer): look it up
            # before creating again, never submit twice.
            return await self._recover_after(client, chunk, e)

    async def _recover_after(self, client: Any, chunk: Chunk, error: Exception) -> Chunk:
        """:meth:`recover` after a transient failure of ``create``, a few times with
        backoff; the last failure is raised (the next session recovers the same way)."""
        for attempt in range(CREATE_RECOVERIES):
            await asyncio.sleep(
                backoff_delay(attempt, error, base=0.5, cap=8.0, retry_after_max=60.0, rng=_RNG)
            )
            try:
                return await self.recover(client, chunk)
            except JuristRuntimeError as e:
                if not is_transient(e):
                    raise
                error = e
        raise error

    async def _create(self, client: Any, chunk: Chunk, *, resubmitted: str = "") -> Chunk:
        """Create the batch of ``chunk`` and record it (with ``resubmitted``: as a batch
        created again, with that note, in the same transaction)."""
        batch = await client.create(
            chunk.file_id,
            completion_window=self.window,
            metadata={"jurist_run": self.run_id, "jurist_file": chunk.chunk_id},
        )
        self.http_calls += 1
        if resubmitted:
            self.store.recovered(
                chunk.chunk_id,
                action="resubmitted",
                batch_id=batch.id,
                batch_status=batch.status,
                detail=f"{resubmitted}; batch {batch.id}",
            )
        else:
            self.store.update_chunk(
                chunk.chunk_id, state="created", batch_id=batch.id, batch_status=batch.status
            )
        return self.store.chunk(chunk.chunk_id)

    async def recover(self, client: Any, chunk: Chunk) -> Chunk:
        """A chunk uploaded whose batch id was never recorded: the batch made of it if
        there is one (looked up with ``list``), else a new one. A server that cannot list
        batches stops the run (:func:`~jurist.batching._recover.stuck`), unless
        ``resubmit`` says to create the batch again."""
        try:
            found = await self._look_up(client, chunk)
        except APIStatusError as e:
            status = list_refused(e)
            if status is None:
                raise
            return await self._unlisted(client, chunk, status)
        if found is None:
            return await self._create(client, chunk)
        self.store.update_chunk(
            chunk.chunk_id, state="created", batch_id=found.id, batch_status=found.status
        )
        return self.store.chunk(chunk.chunk_id)

    async def _look_up(self, client: Any, chunk: Chunk) -> Any:
        """The batch made of ``chunk`` among the server's batches, or ``None``."""
        after: str | None = None
        while True:
            batches, has_more = await client.list(after=after, limit=100)
            self.http_calls += 1
            for batch in batches:
                meta = batch.metadata or {}
                if batch.input_file_id == chunk.file_id or (
                    meta.get("jurist_file") == chunk.chunk_id
                    and meta.get("jurist_run") == self.run_id
                ):
                    return batch
            if not has_more or not batches:
                return None
            after = batches[-1].id

    async def _unlisted(self, client: Any, chunk: Chunk, status: int) -> Chunk:
        cost = self.resend_cost(chunk)
        if not self.resubmit:
            raise stuck(chunk, status, getattr(client, "base_url", "the server"), cost)
        detail = (
            f"{where(chunk)} created again (--batch-resubmit; GET /batches answered HTTP "
            f"{status}, so whether its first batch was made is unknown): if it was, these "
            f"{cost} run and are billed twice"
        )
        self.on_note(f"batch: {detail}")
        return await self._create(client, chunk, resubmitted=detail)

    def adopt(self, chunk: Chunk, batch: Any) -> Chunk:
        """Record ``batch`` (checked by the caller) as the batch of uploaded ``chunk``."""
        detail = (
            f"{where(chunk)}: batch {batch.id} adopted (--batch-adopt); its input file, "
            "metadata and request count match"
        )
        self.store.recovered(
            chunk.chunk_id,
            action="adopted",
            batch_id=batch.id,
            batch_status=batch.status,
            detail=detail,
        )
        self.on_note(f"batch: {detail}")
        return self.store.chunk(chunk.chunk_id)

    async def wait(
        self, jobs: list[tuple[Any, Chunk]], finished: Callable[[Chunk, Any], None]
    ) -> None:
        """Poll the batches of ``jobs`` (client, chunk) until each ends; ``finished(chunk,
        batch)`` runs for each as soon as its files are read back."""
        active = list(jobs)
        while active:
            still: list[tuple[Any, Chunk]] = []
            done = total = 0
            for client, chunk in active:
                batch = await client.retrieve(chunk.batch_id)
                self.http_calls += 1
                if batch.status in FINISHED_STATUSES:
                    await self._download(client, batch)
                    finished(chunk, batch)
                    continue
                counts = batch.request_counts
                if counts is not None:
                    done += int(counts.completed) + int(counts.failed)
                    total += int(counts.total)
                still.append((client, chunk))
            active = still
            if active:
                self.on_status(
                    f"{len(active)} batch(es) in progress: {done}/{total or '?'} requests done"
                )
                await asyncio.sleep(self.poll_interval)

    def path_of(self, file_id: str) -> Path:
        return self.folder / "batch" / f"{file_id}.jsonl"

    async def _download(self, client: Any, batch: Any) -> None:
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id and not self.path_of(file_id).exists():
                self.path_of(file_id).parent.mkdir(parents=True, exist_ok=True)
                await client.download(file_id, self.path_of(file_id))
                self.http_calls += 1
