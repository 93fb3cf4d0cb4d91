"""One engine session over a run's store, whichever engine judges the items.

:class:`EngineContext` holds what a session works with: ``todo()`` yields the items still
to judge and stops the run when the data changed under it, ``record()`` writes one finished
item durably. :func:`run_session` keeps the run's status, time and session count around an
engine's loop; :func:`judge_locally` is the local engine's loop (asyncio workers in this
process). The Ray and batch-API engines bring loops of their own and end in the same
``record()``.

The judge's run decisions (:class:`~jurist.judges._state.JudgeState`: JSON turned off for
a model that answers in text, the JSON form a server refused) are recorded in the store
(meta ``decisions``) the moment one is taken, and the local engine restores them before
the first item of a session (:func:`run_decisions`), so a resumed session builds the
requests the killed one would have built next. An engine that replays earlier requests
(the batch API, looking its stored answers up by request) must restore them where those
requests were built instead: it records them without restoring, and holds the judges'
output decisions (taken and recorded, not acted on during its sessions), so every session
builds the same requests and finds the answers of the last.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jurist._progress import BatchProgress
from jurist.data._item_names import item_name
from jurist.data._source import ItemSource, item_hash, map_fields
from jurist.engines._item_path import Coster, judge_one, stored_result
from jurist.errors import DataError, JuristError
from jurist.judges._protocol import ItemJudge
from jurist.judges._state import JudgeState
from jurist.runs._cost import PriceTable
from jurist.runs._manifest import Manifest
from jurist.runs._store import Bitmap, RunStore, StoredResult

if TYPE_CHECKING:
    from jurist.trust._repeats import RepeatPlan

__all__ = [
    "EngineContext",
    "RunDecisions",
    "judge_locally",
    "normalised",
    "run_decisions",
    "run_session",
]


def normalised(value: Any) -> Any:
    """``value`` as JSON gives it back (what a stored manifest compares with)."""
    return json.loads(json.dumps(value, default=str))


def _mark(store: RunStore, status: str) -> None:
    """Record the run's status on the way out; a store that cannot take it (a full disk)
    must not hide the error that ended the run."""
    with contextlib.suppress(JuristError):
        store.set_meta("status", status)


@dataclass
class EngineContext:
    """Everything one engine session works with, whichever engine runs the items.

    :meth:`todo` yields the items still to judge (and stops the run when the data
    changed under it); :meth:`record` writes one finished item and advances the bar.
    """

    source: ItemSource
    judge: ItemJudge
    store: RunStore
    manifest: Manifest
    fields: Mapping[str, str] | None
    retries: int
    workers: int
    progress: bool
    table: PriceTable
    retry_failed: bool
    plan: RepeatPlan | None = None
    """Repeats (``repeats=N``): how many times each item is judged; ``None``: once."""
    done: Bitmap = field(default_factory=Bitmap)
    """The items not judged again (:func:`~jurist.runs._resume.open_run` says which)."""
    stored: Bitmap = field(default_factory=Bitmap)
    """The items stored, done or kept as failures (checked against the data)."""
    coster: Coster = field(init=False)
    bar: BatchProgress | None = field(default=None, init=False)
    repeat_judges: dict[int, Any] = field(default_factory=dict, init=False)
    slots: asyncio.Semaphore | None = field(default=None, init=False)
    """With repeats: the judge calls in flight, over every item's repeats."""

    def __post_init__(self) -> None:
        self.coster = Coster(self.judge, self.table)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.judge.required_fields)

    def todo(self) -> Iterator[tuple[int, str, dict[str, Any], dict[str, Any]]]:
        """``(idx, digest, row, values)`` of each item without a result yet, in order."""
        check_each = self.manifest.dataset.hash is None
        required = self.required
        for idx, where, row in self.source:
            digest = item_hash(row, files=self.source.files, where=where)
            if check_each and self.stored.has(idx) and self.store.hash_of(idx) != digest:
                raise DataError(
                    f"{where}: this item differs from {item_name(idx, row)} of the run in "
                    f"{self.store.path.parent}; the data changed since the run began"
                )
            if self.done.has(idx):
                continue
            yield (
                idx,
                digest,
                row,
                map_fields(row, self.fields, required, where, files=self.source.files),
            )

    def record(self, result: StoredResult) -> None:
        """Write one finished item durably, then count it (a run with repeats: the item's
        row over its repeats, already stored, replaces the one stored)."""
        if self.plan is not None:
            self.store.write_item(result)
        else:
            self.store.write(result, fresh=not self.stored.has(result.idx))
        self.done.add(result.idx)
        if self.bar is not None:
            self.bar.advance(
                ok=result.score is not None,
                tokens=result.usage.total_tokens,
                cost=result.cost,
            )


async def run_session(ctx: EngineContext, body: Callable[[], Awaitable[str | None]]) -> None:
    """Run ``body`` (the engine's loop over :meth:`EngineContext.todo`) as one session of
    the run: status, time and session count kept in the store, the progress bar drawn,
    ``interrupted`` / ``failed`` recorded on the way out. ``body`` may return the status
    the run stops in instead of ``complete`` / ``incomplete`` (``awaiting results``)."""
    store, manifest = ctx.store, ctx.manifest
    started = time.perf_counter()
    store.set_meta("status", "running")
    sessions = int(store.get_meta("sessions") or 0) + 1
    store.set_meta("sessions", sessions)
    with BatchProgress(
        manifest.dataset.items,
        enabled=ctx.progress,
        completed=ctx.done.count,
        show_cost=ctx.coster.priced,
    ) as bar:
        ctx.bar = bar
        try:
            ended = await body()
        except (asyncio.CancelledError, KeyboardInterrupt):
            _mark(store, "interrupted")
            raise
        except BaseException:
            _mark(store, "failed")
            raise
        finally:
            ctx.bar = None
            elapsed = float(store.get_meta("seconds") or 0.0) + time.perf_counter() - started
            with contextlib.suppress(JuristError):
                store.set_meta("seconds", round(elapsed, 6))
    complete = manifest.dataset.items is None or store.count() >= manifest.dataset.items
    if manifest.dataset.items is None:
        store.set_meta("items", store.count())
    store.set_meta("status", ended or ("complete" if complete else "incomplete"))


class RunDecisions:
    """The judge's run decisions for one session: restored from ``store`` now (when
    ``restore``), recorded in it as each is taken (on the thread that owns the store; one
    taken on another thread is written with the next decision, or when the session
    ends). :meth:`close` stops listening."""

    def __init__(
        self, judge: ItemJudge, store: RunStore, *, restore: bool = True, hold: bool = False
    ) -> None:
        self.state = JudgeState(judge)
        self.store = store
        self.thread = threading.get_ident()
        self.pending = False
        self.held = hold
        self.restored = self.state.restore(store.get_meta("decisions")) if restore else []
        if hold:
            self.state.hold(True)
        self._stop = self.state.listen(self.taken)

    def taken(self) -> None:
        if threading.get_ident() != self.thread:
            self.pending = True  # sqlite3 connections stay on their own thread
            return
        self.write()

    def write(self) -> None:
        self.pending = False
        snapshot = self.state.snapshot()
        if snapshot or self.store.get_meta("decisions") is not None:
            self.store.set_meta("decisions", snapshot)

    def close(self) -> None:
        self._stop()
        if self.held:
            self.state.hold(False)
        with contextlib.suppress(JuristError):
            self.write()


@contextlib.contextmanager
def run_decisions(
    ctx: EngineContext, *, restore: bool = True, hold: bool = False
) -> Iterator[RunDecisions]:
    """Record the judge's run decisions in the run store while the block runs, after
    restoring the stored ones (``restore=False``: record only; ``hold=True``: the output
    decisions are recorded but not acted on until the block ends, see
    :meth:`~jurist.judges._state.JudgeState.hold`)."""
    decisions = RunDecisions(ctx.judge, ctx.store, restore=restore, hold=hold)
    try:
        yield decisions
    finally:
        decisions.close()


async def judge_locally(ctx: EngineContext, *, workers: int | None = None) -> None:
    """The local engine's loop: ``workers`` asyncio workers (default ``ctx.workers``) take
    items in order and record each outcome as it finishes."""
    rows = ctx.todo()
    if ctx.plan is not None:
        from jurist.engines._repeat_path import judge_repeats  # jurist.trust on first use

        ctx.slots = asyncio.Semaphore(workers or ctx.workers)  # calls, not items, in flight

    async def worker() -> None:
        for idx, digest, row, values in rows:
            if ctx.plan is not None:
                ctx.record(await judge_repeats(ctx, idx, digest, row, values))
                continue
            outcome = await judge_one(ctx.judge, values, idx, ctx.retries)
            ctx.record(stored_result(idx, digest, row, outcome, ctx.coster))

    try:
        with run_decisions(ctx):  # a resumed run starts from what the last one decided
            async with asyncio.TaskGroup() as group:
                for _ in range(workers or ctx.workers):
                    group.create_task(worker())
    except BaseExceptionGroup as eg:
        # one worker's error (bad data, a bug, a full disk) ends the run; finished
        # items stay stored
        raise eg.exceptions[0] from None
