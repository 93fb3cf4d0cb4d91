"""The batcher: a model wrapper that parks requests, and the session that sends them in rounds.

:class:`Batcher` is a :class:`~jurist.models.Model` like any other: its ``complete()``
asks the wrapped backend's :class:`~jurist.models._batch_hooks.BatchHooks` for the
request body, names the request by a ``custom_id``, and hands it to its
:class:`BatchSession`:

- an answer the :class:`~jurist.batching.Journal` holds for that ``custom_id`` is
  returned at once (parsed exactly as a live answer, billed at the batch rates), or
  raised as the error live mode raises for it;
- otherwise the request's line is appended to the open request file of the next round
  (streamed to disk: no request is held in memory) and the call *parks*: it never
  returns. The engine running the item (:meth:`BatchSession.run_item`) sees every call
  of the item parked and drops the item's task; the item is run again after the round,
  when its answers are in the journal. Memory per parked item is its ``custom_id``.
  A parked call ends (cancelled) when the item that parked it is set aside or ends, so
  another item waiting on it (the cache joins identical calls in flight) is set aside
  with it, at once, and never waits for nothing.

A request's ``custom_id`` is ``{item}-{hash of model identity and body}-{occurrence}``:
the same item asks the same ids each time it runs, so a run again after a round, or a
resumed process, finds its stored answers (sending nothing) and the batches still
running (polling them), and never submits an item twice.

:meth:`BatchSession.send_round` uploads the round's files, creates their batches, polls
them and reads the results into the journal (:mod:`jurist.batching._rounds`). Lines a
batch ended without running, and lines that failed with a transient status (429, 5xx),
are sent again in the next round, at most ``max_resubmits`` times: the batcher's
resubmits, not a retry wrapper's (the batcher sits above the retry layer).

Where it sits in a model stack (:meth:`BatchSession.wrap`)::

    CachedModel( Batcher( RetryModel( limits( backend ) ) ) )

A cache hit never reaches the batcher; a request the batch API carries never reaches
the retry or limits layers (it is no call to the server); a live call the batcher lets
through (``followup="live"``, a backend without batch hooks) goes through them as usual.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson

from jurist.batching._files import RequestFile, request_key
from jurist.batching._journal import Chunk, Journal, Response
from jurist.batching._options import BatchAPIOptions
from jurist.batching._recover import adopt, check_adoptable
from jurist.batching._rounds import Transfers, read_answers
from jurist.errors import ConfigError, JuristRuntimeError, ModelError
from jurist.models._batch_hooks import BatchBackend, BatchHooks, BatchTransport
from jurist.models._cache import CachedModel
from jurist.models._model import Model, WrapperModel
from jurist.types import Completion, Request

__all__ = ["BatchSession", "Batcher", "Scope", "request_key"]

T = TypeVar("T")

TRANSIENT = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""Statuses of a failed line that the batcher sends again (as a live call would retry)."""
SAVE_BLOCK = 2_000
"""Answers read from a result file and stored in one transaction."""


@dataclass
class Scope:
    """One item's requests while it runs (the engine opens one per item and run)."""

    key: int
    occurrences: dict[str, int] = field(default_factory=dict)
    parked: int = 0
    waits: list[asyncio.Future[None]] = field(default_factory=list)  # the parked calls
    busy: int = 0
    answered: bool = False
    events: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def touch(self) -> None:
        self.events += 1
        self.changed.set()


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    "jurist_batch_scope", default=None
)


class Batcher(WrapperModel):
    """A model whose requests go to a :class:`BatchSession` (see the module docs).

    ``hooks``: the wrapped backend's batch hooks; ``None`` for a backend the batch API
    cannot carry, whose calls go through live (and are awaited before the item parks).
    """

    def __init__(self, wrapped: Model, session: BatchSession, hooks: BatchHooks | None) -> None:
        super().__init__(wrapped)
        self.session = session
        self.hooks = hooks

    async def complete(self, request: Request) -> Completion:
        return await self.session.complete(self, request)

    def __repr__(self) -> str:
        return f"Batcher({self.wrapped!r})"


class BatchSession:
    """The parked requests of one run and the rounds that answer them.

    ``journal``: where every step is recorded (the run store's batch tables);
    ``folder``: where request and result files go (``folder/batch/``);
    ``resend_cost(chunk)``: what creating a chunk's batch again may cost twice (for the
    ``resubmit`` warning); ``on_status`` / ``on_note``: progress text and notices.
    """

    def __init__(
        self,
        journal: Journal,
        options: BatchAPIOptions,
        *,
        run_id: str,
        folder: Path,
        resend_cost: Callable[[Chunk], str] | None = None,
        on_status: Callable[[str], None] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        self.journal = journal
        self.options = options
        self.run_id = run_id
        self.folder = folder / "batch"
        self._on_status = on_status or (lambda _: None)
        self.transfers = Transfers(
            journal,
            run_id=run_id,
            folder=folder,
            completion_window=options.completion_window,
            poll_interval=options.poll_interval,
            on_status=self._status,
            resubmit=options.resubmit,
            resend_cost=resend_cost,
            on_note=on_note,
        )
        self.round = max((c.round for c in journal.chunks()), default=0)
        self._files: dict[str, RequestFile] = {}
        self._resume: set[str] = set()
        self._models: dict[str, tuple[dict[str, Any], BatchHooks]] = {}
        self._clients: dict[str, BatchTransport] = {}
        journal.abandon_intents()
        check_adoptable(options.adopt, journal)

    # -- the stack ------------------------------------------------------------------

    def wrap(self, model: Model) -> Model:
        """``model`` with a :class:`Batcher` under its cache layer (a copy; see the module
        docs for the place)."""
        if isinstance(model, CachedModel):
            return model.around(self.wrap(model.wrapped))
        backend = model.innermost if isinstance(model, WrapperModel) else model
        hooks = backend.batch_hooks() if isinstance(backend, BatchBackend) else None
        return Batcher(model, self, hooks)

    # -- the items ------------------------------------------------------------------

    async def run_item(self, key: int, work: Coroutine[Any, Any, T]) -> T | None:
        """Run one item's ``work``; its result, or ``None`` when the item was set aside
        (its task dropped: it runs again after the round).

        An item is set aside when every call it made is parked. When it is set aside or
        ends, the calls it parked are cancelled: an item that waits on one of them (the
        cache joins identical calls in flight, and the call may be another item's) gets
        the cancellation, and is set aside too. Nothing else sets an item aside: an item
        waiting on anything else (its own work, a slow loop, a fingerprint request) is
        waited for, as in a live run.
        """
        scope = Scope(key)
        token = _scope.set(scope)
        try:
            task = asyncio.ensure_future(work)
        finally:
            _scope.reset(token)
        task.add_done_callback(lambda _: scope.changed.set())
        try:
            while not task.done():
                await scope.changed.wait()
                scope.changed.clear()
                if task.done() or not scope.parked or scope.busy:
                    continue
                seen = -1  # let a wave of requests from the item (a panel's judges) park too
                while seen != scope.events and not task.done():
                    seen = scope.events
                    for _ in range(4):
                        await asyncio.sleep(0)
                if not task.done() and scope.parked and not scope.busy:
                    await _set_aside(task)
                    return None
            if task.cancelled():  # it waited on another item's call, parked: set aside
                return None
            return task.result()
        finally:
            for parked in scope.waits:  # whoever waits on them is set aside with them
                parked.cancel()

    async def complete(self, batcher: Batcher, request: Request) -> Completion:
        scope = _scope.get()
        if scope is None:
            raise ModelError(
                f"{batcher.spec}: batch mode got a request from outside any item "
                "(only the engine's judges may call the model here)",
                model=batcher.spec,
            )
        hooks = batcher.hooks
        if hooks is None:
            return await self._live(batcher, request, scope)
        identity = batcher.identity()
        self._models.setdefault(_identity_key(identity), (identity, hooks))
        body = hooks.body_for(request)
        key = request_key(identity, body)
        n = scope.occurrences[key] = scope.occurrences.get(key, 0) + 1
        cid = f"{scope.key}-{key}-{n}"
        stored = self.journal.response(cid)
        if stored is not None:
            scope.answered = True
            return self._answer(hooks, request, stored, batcher.spec)
        options = self.options
        if options.followup == "live" and not options.file_out and scope.answered:
            return await self._live(batcher, request, scope)
        chunk = self.journal.chunk_of(cid)
        if chunk is not None and chunk.state in ("uploaded", "created"):
            self._resume.add(chunk.chunk_id)
        elif chunk is not None and chunk.state == "exported" and options.file_out:
            pass  # already written for the offline engine: wait for its results
        elif chunk is not None and chunk.state == "done" and not self._may_resubmit(cid):
            scope.answered = True
            raise _unanswered(chunk, batcher.spec, sent=1 + self.journal.resent(cid))
        else:
            if chunk is not None:
                self.journal.unassign([cid])
            self._write(identity, hooks, cid, scope.key, body)
        parked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        scope.waits.append(parked)
        scope.parked += 1
        scope.touch()
        await parked  # never resolved: cancelled when its item is set aside or ends
        raise AssertionError("unreachable")  # pragma: no cover

    async def _live(self, batcher: Batcher, request: Request, scope: Scope) -> Completion:
        scope.busy += 1
        try:
            return await batcher.wrapped.complete(request)
        finally:
            scope.busy -= 1
            scope.touch()

    def _write(
        self, identity: dict[str, Any], hooks: BatchHooks, cid: str, idx: int, body: dict[str, Any]
    ) -> None:
        ident = _identity_key(identity)
        out = self._files.get(ident)
        if out is None:
            stem = f"requests-r{self.round + 1}-{len(self._files) + 1}"
            out = self._files[ident] = RequestFile(
                self.folder,
                stem,
                self.options.max_requests_per_file,
                self.options.max_bytes_per_file,
            )
        out.add(cid, idx, hooks.line_for(cid, body))

    def _answer(
        self, hooks: BatchHooks, request: Request, answer: Response, spec: str
    ) -> Completion:
        """The completion of a stored answer, or the error live mode would raise."""
        if answer.status == 200 and answer.body is not None:
            done = hooks.completion_from(answer.body, request)
            resent = self.journal.resent(answer.custom_id)
            if resent:
                done = done.model_copy(update={"attempts": done.attempts + resent})
            return done
        if answer.status >= 300:
            error: ModelError = hooks.error_for(answer.status, answer.body or b"")
        else:
            text = answer.error or f"batch: {answer.source}: no answer"
            if answer.custom_id not in text:
                text += f" (custom_id {answer.custom_id!r})"
            error = ModelError(text, model=spec)
        error.attempts = 1 + self.journal.resent(answer.custom_id)
        raise error

    # -- the rounds -----------------------------------------------------------------

    @property
    def waiting(self) -> bool:
        """Whether any request waits for a round (written, or in a batch to poll; with
        ``file_out``, parked on a file written before)."""
        return bool(self._files or self._resume) or self.options.file_out is not None

    async def send_round(self) -> list[Path] | None:
        """Send the parked requests and wait for their answers (in the journal after);
        with ``file_out``: move the request files there instead and return them."""
        self.round += 1
        files, self._files = self._files, {}
        resume, self._resume = self._resume, set()
        pieces = [
            (self._models[ident][0], self._models[ident][1], piece)
            for ident, out in files.items()
            for piece in out.close()
        ]
        if self.options.file_out is not None:
            from jurist.batching._export import export

            return export(
                self.journal,
                ((identity, piece) for identity, _, piece in pieces),
                self.options.file_out,
                self.round,
            )
        jobs: list[tuple[BatchTransport, Chunk, BatchHooks]] = []
        chunks = [self.journal.chunk(chunk_id) for chunk_id in sorted(resume)]
        if self.options.adopt:
            chunks = await adopt(
                self.options.adopt,
                chunks,
                self.journal,
                self.transfers,
                lambda identity: self._client(identity)[0],
            )
        for chunk in chunks:
            client, hooks = self._client(chunk.model)
            if chunk.state == "uploaded":
                chunk = await self.transfers.recover(client, chunk)
            if chunk.state == "created":
                jobs.append((client, chunk, hooks))
        for identity, hooks, piece in pieces:
            client = self._client(identity)[0]
            chunk = await self.transfers.send(client, identity, self.round, piece)
            piece.path.unlink(missing_ok=True)  # its batch is made: the file is the server's
            jobs.append((client, chunk, hooks))
        by_chunk = {chunk.chunk_id: hooks for _, chunk, hooks in jobs}
        await self.transfers.wait(
            [(client, chunk) for client, chunk, _ in jobs],
            lambda chunk, batch: self._finished(chunk, batch, by_chunk[chunk.chunk_id]),
        )
        return None

    def _finished(self, chunk: Chunk, batch: Any, hooks: BatchHooks) -> None:
        """Read a finished batch's files into the journal, as they are read (a few
        thousand answers at a time), then mark its chunk done. A transient failure is
        kept only when the line will not be sent again (its last try): else it is sent
        again like a line the batch never ran. A process killed in between reads the
        files again on resume (a stored answer is kept)."""
        ids = dict(self.journal.ids_of(chunk.chunk_id))
        strays: list[str] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            answers = read_answers(
                self.transfers.path_of(file_id), ids, strays, hooks.parse_line, hooks.custom_id_of
            )
            kept = (
                a
                for a in answers
                if a.status not in TRANSIENT or not self._may_resubmit(a.custom_id)
            )
            while block := list(itertools.islice(kept, SAVE_BLOCK)):
                self.journal.save_responses(block)
        self.journal.save_responses(
            (), chunk_id=chunk.chunk_id, state={"state": "done", "batch_status": batch.status}
        )

    def _status(self, text: str) -> None:
        self._on_status(f"batch round {self.round}: {text}")

    def _may_resubmit(self, cid: str) -> bool:
        """Whether a request a batch ended without answering goes into another batch:
        ``on_expired="resubmit"``, and fewer than ``max_resubmits`` times so far (a
        provider that keeps expiring it gets no endless rounds)."""
        return (
            self.options.on_expired == "resubmit"
            and self.journal.resent(cid) < self.options.max_resubmits
        )

    def _client(self, identity: dict[str, Any]) -> tuple[BatchTransport, BatchHooks]:
        ident = _identity_key(identity)
        known = self._models.get(ident)
        if known is None:
            raise ConfigError(f"batch: no model of this run is {identity}")
        client = self._clients.get(ident)
        if client is None:
            client = self._clients[ident] = known[1].client()
        return client, known[1]

    async def aclose(self) -> None:
        for out in self._files.values():
            out.close()
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


async def _set_aside(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.wait([task])  # its cancellation, not ours


def _identity_key(identity: dict[str, Any]) -> str:
    return orjson.dumps(identity, option=orjson.OPT_SORT_KEYS).decode()


def _unanswered(chunk: Chunk, spec: str, *, sent: int = 1) -> ModelError:
    status = chunk.batch_status or "ended"
    name = chunk.batch_id or chunk.path or chunk.chunk_id
    if status == "completed":
        text = f"batch: {name} completed without an answer to this request"
    else:
        text = f"batch: {name} {status} before this request ran"
    if sent > 1:
        text += f" (sent {sent} times; see BatchAPIOptions.max_resubmits)"
    error = ModelError(text, model=spec)
    error.attempts = sent
    return error


EMPTY_PASSES = 3
"""Passes in a row that may set items aside with nothing to send before that is taken
for a bug (an item set aside with another item's parked call has that call to send)."""


async def drain(session: BatchSession, passes: Callable[[], Awaitable[int]]) -> list[Path] | None:
    """Run ``passes()`` (one pass over the items still to do; how many were set aside) and
    a round after each, until none is set aside; the files written when the session has
    ``file_out``."""
    empty = 0
    while True:
        parked = await passes()
        if not parked:
            return None
        if not session.waiting:
            empty += 1
            if empty >= EMPTY_PASSES:
                raise JuristRuntimeError(
                    f"batch: {parked} item(s) set aside {empty} times with no request to "
                    "send (a bug in jurist)"
                )
            continue
        empty = 0
        written = await session.send_round()
        if written is not None:
            return written
