"""The batch-API engine: the same judges, their requests sent in files instead of calls.

Judges stay as they are. Every request an OpenAI-compatible model would POST goes to the
:class:`BatchEngine` (the active collector of :mod:`jurist.models._batch_hook`), which
parks it. When every item in flight waits on a parked request, the engine sends one
*round*: the parked requests as Batch API lines (split at the provider's limits), one
batch per file, polled to its end; the answers are stored, the parked requests resolved,
and the items go on exactly as in live mode (parse, re-ask, result). Re-asks park again
and make the next round (or go live with ``followup="live"``).

A request's ``custom_id`` is ``{item}-{hash of model identity and body}-{occurrence}``:
the same items judged again ask the same ids, so a resumed run finds its stored answers
(sending nothing) and the batches still running (polling them), and never submits an
item twice.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from jurist._secrets import get_logger
from jurist.errors import ConfigError, ModelError
from jurist.evaluate._batch_options import BatchAPIOptions
from jurist.evaluate._batch_recover import adopt, check_adoptable, resend_cost
from jurist.evaluate._batch_rounds import Line, Wire, parse_file
from jurist.evaluate._batch_store import BatchStore, Chunk, Response
from jurist.evaluate._item_path import current_item, judge_models, judge_one, stored_result

if TYPE_CHECKING:
    from jurist.evaluate._session import EngineContext
    from jurist.models._openai import OpenAIModel

__all__ = ["AWAITING_RESULTS", "BatchEngine", "judge_through_batches", "request_key"]

AWAITING_RESULTS = "awaiting results"
MAX_WINDOW = 50_000
"""The most items in flight (parked) at once: one full OpenAI batch file of requests."""

logger = get_logger("jurist.evaluate")


def request_key(model: dict[str, Any], body: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over the model identity and the request body (canonical).

    >>> request_key({"name": "m"}, {"b": 1, "a": 2}) == request_key({"name": "m"}, {"a": 2, "b": 1})
    True
    """
    raw = orjson.dumps({"model": model, "body": body}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass
class _Waiter:
    model: OpenAIModel
    identity: dict[str, Any]  # model.identity(), taken once
    body: dict[str, Any]
    idx: int
    future: asyncio.Future[Response]


class _Stop(Exception):
    """Raised by the round loop to end a ``file_out`` session (not an error)."""


@dataclass
class BatchEngine:
    """The collector and round loop of one batch-API session."""

    ctx: EngineContext
    options: BatchAPIOptions
    store: BatchStore = field(init=False)
    wire: Wire = field(init=False)
    _inflight: int = 0
    _parked: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    _waiting: dict[str, _Waiter] = field(default_factory=dict)
    _pending: dict[str, _Waiter] = field(default_factory=dict)
    _resume: set[str] = field(default_factory=set)
    _occurrences: dict[tuple[int, str], int] = field(default_factory=lambda: defaultdict(int))
    _answered: set[int] = field(default_factory=set)
    _clients: dict[str, Any] = field(default_factory=dict)
    _events: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _finished: bool = False
    _round: int = 0

    def __post_init__(self) -> None:
        run_id = self.ctx.manifest.run_id or "run"
        self.store = BatchStore(self.ctx.store.path, run_id=run_id)
        self.wire = Wire(
            self.store,
            run_id=run_id,
            folder=self.ctx.store.path.parent,
            completion_window=self.options.completion_window,
            poll_interval=self.options.poll_interval,
            on_status=self._status,
            resubmit=self.options.resubmit,
            resend_cost=self._resend_cost,
            on_note=logger.warning,
        )
        self._round = max((c.round for c in self.store.chunks()), default=0)

    # -- the collector (called from OpenAIModel.complete) -----------------------------

    async def submit(self, model: OpenAIModel, body: dict[str, Any]) -> bytes | None:
        idx = current_item.get()
        if idx is None:
            raise ModelError(
                f"{model.spec}: batch mode got a request from outside any item "
                "(only the engine's judges may call the model here)",
                model=model.spec,
            )
        identity = model.identity()
        key = request_key(identity, body)
        self._occurrences[(idx, key)] += 1
        cid = f"{idx}-{key}-{self._occurrences[(idx, key)]}"
        stored = self.store.response(cid)
        if stored is not None:
            self._answered.add(idx)
            return _answer(model, stored)
        if self.options.followup == "live" and not self.options.file_out and idx in self._answered:
            return None
        loop = asyncio.get_running_loop()
        waiter = _Waiter(model, identity, body, idx, loop.create_future())
        chunk = self.store.chunk_of(cid)
        if chunk is not None and chunk.state in ("uploaded", "created"):
            self._resume.add(chunk.chunk_id)
        elif chunk is not None and chunk.state == "exported" and self.options.file_out:
            pass  # already written for the offline engine: wait for its results
        elif chunk is not None and chunk.state == "done" and not self._may_resubmit(cid):
            self._answered.add(idx)
            raise _unanswered(chunk, model, sent=1 + self.store.resent(cid))
        else:
            if chunk is not None:
                self.store.unassign([cid])
            self._pending[cid] = waiter
        self._waiting[cid] = waiter
        self._parked[idx] += 1
        self._touch()
        try:
            answer = await waiter.future
        finally:
            self._parked[idx] -= 1
            if not self._parked[idx]:
                del self._parked[idx]
            self._waiting.pop(cid, None)
            self._pending.pop(cid, None)
        self._answered.add(idx)
        return _answer(model, answer)

    def _status(self, text: str) -> None:
        """Show the batches' request counts on the progress bar."""
        if self.ctx.bar is not None:
            self.ctx.bar.describe(f"batch round {self._round}: {text}")

    def _touch(self) -> None:
        self._events += 1
        self._changed.set()

    # -- the session -------------------------------------------------------------------

    async def run(self) -> str | None:
        """Judge every item still to do; ``"awaiting results"`` when the requests were
        written to ``file_out`` instead of sent."""
        try:
            return await self._session()
        finally:
            await self._close_clients()
            self.store.close()

    async def _session(self) -> str | None:
        from jurist.evaluate._session import run_decisions
        from jurist.models._batch_hook import collecting

        ctx = self.ctx
        self.store.abandon_intents()
        check_adoptable(self.options.adopt, self.store)
        if ctx.retry_failed:
            self.store.forget(r["idx"] for r in ctx.store.rows(failed_only=True))
        ctx.store.set_meta("batch_api", self.options.model_dump(mode="json"))
        if ctx.store.get_meta("judge_entry") is None:
            from jurist.evaluate._judge_entry import judge_entry_of

            entry = judge_entry_of(ctx.judge)
            if entry is not None:  # for ingest(), which rebuilds the judge from it
                ctx.store.set_meta("judge_entry", entry)
        expected = ctx.manifest.dataset.items
        window = min(MAX_WINDOW, max(1, expected if expected is not None else MAX_WINDOW))
        rows = ctx.todo()

        async def worker() -> None:
            for idx, digest, row, values in rows:
                self._inflight += 1
                try:
                    outcome = await judge_one(ctx.judge, values, idx, ctx.retries)
                    ctx.record(stored_result(idx, digest, row, outcome, ctx.coster))
                finally:
                    self._inflight -= 1
                    self._touch()

        async def work() -> None:
            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(window):
                        group.create_task(worker())
            finally:
                self._finished = True
                self._touch()

        try:
            # decisions recorded, held: every session builds the same requests (replay)
            with collecting(self), run_decisions(ctx, restore=False, hold=True):
                async with asyncio.TaskGroup() as group:
                    group.create_task(work())
                    group.create_task(self._rounds())
        except BaseExceptionGroup as eg:
            first = _first(eg)
            if isinstance(first, _Stop):
                return AWAITING_RESULTS
            raise first from None
        ctx.store.set_meta(
            "batch_counts", {**self.store.counts(), "http_calls": self.wire.http_calls}
        )
        return None

    async def _rounds(self) -> None:
        while True:
            await self._quiet()
            if self._finished and not self._waiting:
                return
            await self._send_round()

    def _all_parked(self) -> bool:
        return bool(self._waiting) and len(self._parked) >= self._inflight

    async def _quiet(self) -> None:
        """Return when every item in flight waits on a parked request (or all are done).

        Counted, not timed: items in flight against items parked. A wave of requests from
        one item (a panel's judges) is let in by yielding to the loop until nothing moves.
        Only when some items wait on something else (a rate limiter, a live call) and
        nothing happens for ``poll_interval`` seconds does a round go with what is parked.
        """
        while True:
            if self._finished and not self._waiting:
                return
            if self._all_parked():
                seen = -1
                while seen != self._events:
                    seen = self._events
                    for _ in range(4):
                        await asyncio.sleep(0)
                if self._all_parked():
                    return
                continue
            self._changed.clear()
            if not self._waiting:
                await self._changed.wait()
                continue
            try:
                await asyncio.wait_for(self._changed.wait(), self.options.poll_interval)
            except TimeoutError:
                return

    async def _send_round(self) -> None:
        self._round += 1
        pending, self._pending = self._pending, {}
        resume, self._resume = self._resume, set()
        if self.options.file_out is not None:
            from jurist.evaluate._batch_export import export

            export(
                self.store,
                self.ctx.store,
                self.options,
                pending,
                self.options.file_out,
                self._round,
            )
            raise _Stop()
        jobs: list[tuple[Any, Chunk]] = []
        chunks = [self.store.chunk(chunk_id) for chunk_id in sorted(resume)]
        if self.options.adopt:
            chunks = await adopt(
                self.options.adopt, chunks, self.store, self.wire, lambda c: self._client(c, None)
            )
        for chunk in chunks:
            client = self._client(chunk.model, None)
            if chunk.state == "uploaded":
                chunk = await self.wire.recover(client, chunk)
            if chunk.state == "created":
                jobs.append((client, chunk))
        from jurist.models._openai_batch import request_line, split_lines

        by_model: dict[str, list[Line]] = defaultdict(list)
        models: dict[str, OpenAIModel] = {}
        identities: dict[str, dict[str, Any]] = {}
        for cid, waiter in pending.items():
            ident = _identity_key(waiter.identity)
            models[ident], identities[ident] = waiter.model, waiter.identity
            by_model[ident].append(Line(cid, waiter.idx, waiter.body))
        for ident, lines in by_model.items():
            model, identity = models[ident], identities[ident]
            client = self._client(identity, model)
            raws = [(line, request_line(line.custom_id, line.body)) for line in lines]
            index = {raw: line for line, raw in raws}
            for piece in split_lines(
                [raw for _, raw in raws],
                max_requests=self.options.max_requests_per_file,
                max_bytes=self.options.max_bytes_per_file,
            ):
                chunk = await self.wire.send(
                    client, identity, self._round, [(index[raw], raw) for raw in piece]
                )
                jobs.append((client, chunk))
        await self.wire.wait(jobs, self._finished_batch)

    def _finished_batch(self, chunk: Chunk, batch: Any) -> None:
        ids = dict(self.store.ids_of(chunk.chunk_id))
        answers: list[Response] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                got, _ = parse_file(self.wire.path_of(file_id), ids)
                answers.extend(got)
        self.store.save_responses(
            answers,
            chunk_id=chunk.chunk_id,
            state={"state": "done", "batch_status": batch.status},
        )
        done = self.store.chunk(chunk.chunk_id)
        for cid in ids:
            waiter = self._waiting.get(cid)
            if waiter is None or waiter.future.done():
                continue
            answer = self.store.response(cid)
            if answer is not None:
                waiter.future.set_result(answer)
            elif not self._may_resubmit(cid):
                sent = 1 + self.store.resent(cid)
                waiter.future.set_exception(_unanswered(done, waiter.model, sent=sent))
            else:
                self._pending[cid] = waiter
        resubmitted = [c for c in ids if c in self._pending]
        if resubmitted:
            self.store.unassign(resubmitted)
        self._touch()

    # -- files whose batch was never recorded (see jurist.evaluate._batch_recover) -------

    def _resend_cost(self, chunk: Chunk) -> str:
        """What creating ``chunk``'s batch again may cost twice (its requests, their tokens
        and price where known), estimated from the parked requests it carries."""
        ids = (cid for cid, _ in self.store.ids_of(chunk.chunk_id))
        waiters = [self._waiting[cid] for cid in ids if cid in self._waiting]
        if waiters:
            spec = waiters[0].model.spec
        else:
            spec = f"{chunk.model.get('provider', 'openai')}:{chunk.model.get('name', '')}"
        return resend_cost((w.body for w in waiters), chunk.requests, spec, self.ctx.table)

    def _may_resubmit(self, cid: str) -> bool:
        """Whether a request a batch ended without answering goes into another batch:
        ``on_expired="resubmit"``, and fewer than ``max_resubmits`` times so far (a
        provider that keeps expiring it gets no endless rounds)."""
        return (
            self.options.on_expired == "resubmit"
            and self.store.resent(cid) < self.options.max_resubmits
        )

    def _client(self, identity: dict[str, Any], model: OpenAIModel | None) -> Any:
        ident = _identity_key(identity)
        client = self._clients.get(ident)
        if client is None:
            if model is None:
                model = next(
                    (w.model for w in self._waiting.values() if _identity_key(w.identity) == ident),
                    None,
                )
            if model is None:
                raise ConfigError(f"batch: no model of this run is {identity}")
            client = self._clients[ident] = model.batch_client()
        return client

    async def _close_clients(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()


def _identity_key(identity: dict[str, Any]) -> str:
    return orjson.dumps(identity, option=orjson.OPT_SORT_KEYS).decode()


def _unanswered(chunk: Chunk, model: OpenAIModel, *, sent: int = 1) -> ModelError:
    status = chunk.batch_status or "ended"
    name = chunk.batch_id or chunk.path or chunk.chunk_id
    if status == "completed":
        text = f"batch: {name} completed without an answer to this request"
    else:
        text = f"batch: {name} {status} before this request ran"
    if sent > 1:
        text += f" (sent {sent} times; see BatchAPIOptions.max_resubmits)"
    return ModelError(text, model=model.spec)


def _answer(model: OpenAIModel, answer: Response) -> bytes:
    """The completion body of a stored answer, or the error live mode would raise."""
    if answer.status == 200 and answer.body is not None:
        return answer.body
    if answer.status >= 300:
        raise model.error_for_status(answer.status, answer.body or b"")
    text = answer.error or f"batch: {answer.source}: no answer"
    if answer.custom_id not in text:
        text += f" (custom_id {answer.custom_id!r})"
    raise ModelError(text, model=model.spec)


def _first(eg: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = eg
    while isinstance(exc, BaseExceptionGroup):
        stops = [e for e in exc.exceptions if isinstance(e, _Stop)]
        exc = stops[0] if stops else exc.exceptions[0]
    return exc


async def judge_through_batches(ctx: EngineContext, options: BatchAPIOptions) -> str | None:
    """The batch-API engine's session (see the module docs); the run status it ends in
    when not the usual one (``"awaiting results"`` after writing ``file_out``)."""
    specs = judge_models(ctx.judge)
    if specs and not any(s.startswith("openai:") for s in specs):
        raise ConfigError(
            "batch_api= sends the requests of OpenAI-compatible models (openai:NAME with "
            f"the server's base_url); this judge calls {', '.join(specs)}, which would all "
            "run live: leave batch_api= out"
        )
    return await BatchEngine(ctx, options).run()
