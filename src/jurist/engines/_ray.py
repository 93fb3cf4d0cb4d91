"""The Ray Data engine: the same items, judge and run folder, spread over a Ray cluster.

Ray Data does the sharding, scheduling, retries and I/O: the items still to judge go into
a Ray Dataset, through ``map_batches`` with an actor pool of :class:`JudgeActor` (each
rebuilds the judge once from its catalog entry, never a pickled judge), and the driver
streams the results back and records each one in the run store as it arrives. A killed
driver loses only the items in flight; the run resumes like a local one. Large runs are
fed to Ray in windows of :attr:`RayOptions.window` items (100,000 by default), never
materialised whole.

A killed actor is restarted and its batch retried (Ray Data's actor pools default to
``max_restarts=-1`` and ``max_task_retries=-1``); the driver records one result per item
and refuses (and counts, in the store's ``duplicates_refused``) a second one for the
same item.

The judge travels whole: its catalog entry (its settings) and, for each of its models,
the model stack's :class:`~jurist.models.ModelSpec` (backend options, ``max_retries``,
``timeout``, the cache and its file, limits; :meth:`~jurist.models.Model.rebuild_spec`),
so each actor runs the stacks the driver built. API keys are never in either: each
model's :meth:`~jurist.models.Model.secrets` (the ``api_key`` it uses, given or read from
the driver's environment, and its headers) travel to the actors as a constructor argument
held in memory (a :class:`Secrets`, whose repr shows no value) and go to the rebuilt
models' constructors; nothing is written to an actor's environment, and nothing goes
through Ray's ``runtime_env`` (whose agent writes its values to Ray's log files).

The limits: ``RayOptions.rpm`` / ``tpm`` make one cluster pacer for every model; without
them a model's own ``rpm`` / ``tpm`` make a pacer for that model, shared by the cluster.
Either sits in the limits' place of each rebuilt stack (under retry, so each retry is
paced; under the cache, so a hit is not). A cached stack's actors open the cache file at
the driver's path: actors of one machine share it, each node has its own unless the path
is on shared storage.

Ray itself: an instance already initialised in this process is used as it is; otherwise
``ray.init(address=options.address)`` (``None``: a local instance, shut down when the run
ends). ``import jurist`` never imports Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from jurist._local_files import LocalFiles
from jurist.data._source import item_hash, map_fields, open_source
from jurist.engines._item_path import check_judge
from jurist.engines._ray_actor import (
    JudgeActor,
    Pacing,
    PortableJudge,
    Secrets,
    decode_result,
    encode_json,
    portable_entry,
    rebuild,
)
from jurist.engines._ray_limits import start_limiter
from jurist.engines._ray_options import RayOptions
from jurist.engines._session import EngineContext, normalised
from jurist.errors import ConfigError, MissingDependencyError
from jurist.judges._protocol import ItemJudge, models_of
from jurist.runs._cost import PriceTable, resolve_prices
from jurist.runs._store import StoredResult

__all__ = ["Recorder", "judge_on_ray", "judge_ray_dataset"]

log = logging.getLogger("jurist.engines")


def import_ray() -> Any:
    """The ``ray`` module (with Ray Data), or an error naming the extra to install."""
    try:
        import ray
        import ray.data
    except ImportError as e:
        raise MissingDependencyError("ray[data]", "ray", "The Ray engine") from e
    return ray


def _start_ray(ray: Any, options: RayOptions) -> bool:
    """Initialise Ray unless it is; whether this call started it."""
    if ray.is_initialized():
        return False
    # Ray's own INFO lines (instance started, dataset finished) are not the run's news:
    # jurist prints the run's progress and summary
    ray.init(address=options.address, logging_level=logging.WARNING)
    return True


@contextlib.contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """Ray Data's INFO and WARNING lines about its own bars and executions (which jurist
    turns off and replaces with its own) stay out of the user's terminal while a window
    streams; its errors still show."""
    logger = logging.getLogger("ray.data")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _checked_entry(judge: ItemJudge) -> PortableJudge:
    """The judge's portable entry, after checking it rebuilds the same judge."""
    entry = portable_entry(judge)
    again = rebuild(entry)
    if normalised(again.describe()) != normalised(judge.describe()):
        raise ConfigError(
            f"cannot judge with {judge.name!r} on Ray: rebuilt from its catalog entry it "
            "describes itself differently (a setting the catalog does not keep); use the "
            "local engine (engine=LocalEngine())"
        )
    rebuilt = tuple(model.rebuild_spec() for model in models_of(again))
    if rebuilt != entry.models:  # a backend whose options do not build it again
        raise ConfigError(
            f"cannot judge with {judge.name!r} on Ray: a model rebuilt from its spec "
            "describes itself differently (a backend option it does not give back); use "
            "the local engine (engine=LocalEngine())"
        )
    return entry


def _start_pacing(options: RayOptions, judge: ItemJudge, portable: PortableJudge) -> Pacing:
    """The cluster limits of the judge's models, each a :class:`ClusterPacer` actor.

    ``options.rpm`` / ``tpm`` (the CLI's ``--rpm`` / ``--tpm``) make one pacer for every
    model, in place of their own limits. Otherwise a model whose stack has its own
    ``rpm`` / ``tpm`` (``Transport(rpm=...)``, ``LLMJudge(max_calls_per_min=...)``) gets a
    pacer of its own, shared by every actor, as its limiter is shared by every call in
    this process (one pacer per model object: two places holding the same stack share it).
    """
    n = len(portable.models)
    if options.rpm is not None or options.tpm is not None:
        one = start_limiter(options.rpm, options.tpm)
        return Pacing((one,) * n, (options.tpm is not None,) * n)
    started: dict[int, Any] = {}
    limiters: list[Any] = []
    tokens: list[bool] = []
    for model, spec in zip(models_of(judge), portable.models, strict=True):
        rpm, tpm = spec.transport.rpm, spec.transport.tpm
        if rpm is None and tpm is None:
            limiters.append(None)
            tokens.append(False)
            continue
        if id(model) not in started:
            started[id(model)] = start_limiter(rpm, tpm)
        limiters.append(started[id(model)])
        tokens.append(tpm is not None)
    return Pacing(tuple(limiters), tuple(tokens))


def _stop_pacing(ray: Any, pacing: Pacing | None) -> None:
    if pacing is None:
        return
    for limiter in {id(x): x for x in pacing.limiters if x is not None}.values():
        with contextlib.suppress(Exception):
            ray.kill(limiter)


def _judged(
    ds: Any,
    blocks: int | None,
    *,
    entry: PortableJudge,
    table: PriceTable,
    retries: int,
    options: RayOptions,
    pacing: Pacing,
    secrets: Secrets,
    **actor: Any,
) -> Any:
    """``ds`` through the pool of :class:`JudgeActor` (no more actors than ``blocks``: an
    actor without a block only starts up); ``actor``: its other constructor arguments
    (``raw``, ``fields``, ``records``)."""
    return ds.map_batches(
        JudgeActor,
        fn_constructor_kwargs={
            "entry": entry,
            "table": table,
            "retries": retries,
            "pacing": pacing,
            "secrets": secrets,
            **actor,
        },
        **_pool_args(options, blocks=blocks),
    )


def _pool_args(options: RayOptions, blocks: int | None = None) -> dict[str, Any]:
    """The actor pool's settings. Fault tolerance is Ray Data's default for an actor
    pool (``max_restarts=-1``, ``max_task_retries=-1``: a killed actor is restarted and
    the batch it held runs again), so nothing here turns it off; Ray 2.60 deprecates
    passing those through ``map_batches``."""
    from ray.data import ActorPoolStrategy

    return {
        "batch_format": "pyarrow",
        "batch_size": options.batch_size,
        "compute": ActorPoolStrategy(size=min(options.actors, blocks or options.actors)),
        "num_cpus": options.num_cpus,
        "num_gpus": options.num_gpus or None,
    }


def _blocks(options: RayOptions, items: int) -> int:
    """Blocks for ``items`` items: whole batches each, and at least 32 per actor when
    there are enough, so work spreads over the pool and streams back steadily."""
    batches = math.ceil(items / options.batch_size)
    per_block = max(1, math.ceil(batches / (options.actors * 32)))
    return max(1, math.ceil(batches / per_block))


def _dataset(ray: Any, items: list[dict[str, Any]], options: RayOptions) -> Any:
    """A Ray Dataset of ``items`` in :func:`_blocks` blocks."""
    return ray.data.from_items(items, override_num_blocks=_blocks(options, len(items)))


def _wire(
    idx: int, digest: str, row: Mapping[str, Any], values: Mapping[str, Any]
) -> dict[str, Any]:
    return {"idx": idx, "digest": digest, "row": encode_json(row), "values": encode_json(values)}


def _windows(
    rows: Iterable[tuple[int, str, dict[str, Any], dict[str, Any]]], size: int
) -> Iterator[list[dict[str, Any]]]:
    window: list[dict[str, Any]] = []
    for idx, digest, row, values in rows:
        window.append(_wire(idx, digest, row, values))
        if len(window) >= size:
            yield window
            window = []
    if window:
        yield window


class Recorder:
    """Records each result once: a second row for an item already recorded in this
    session (a retried batch whose first run also came back) is refused and counted."""

    def __init__(self, record: Callable[[StoredResult], None]) -> None:
        self._record = record
        self._seen: set[int] = set()
        self.duplicates = 0

    def take(self, text: str) -> None:
        result = decode_result(text)
        if result.idx in self._seen:
            self.duplicates += 1
            log.warning("Ray returned a second result for item %d; kept the first", result.idx)
            return
        self._seen.add(result.idx)
        self._record(result)


async def _stream(ds: Any, take: Callable[[str], None]) -> None:
    """Iterate ``ds``'s ``result`` column in a thread, calling ``take`` on this loop for
    each value as its block arrives; cancelling stops the iteration."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stop = threading.Event()

    def post(kind: str, payload: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed after a cancel
            loop.call_soon_threadsafe(queue.put_nowait, (kind, payload))

    def pump() -> None:
        try:
            batches = ds.iter_batches(batch_size=None, batch_format="pyarrow")
            try:
                for batch in batches:
                    if stop.is_set():
                        return
                    post("rows", batch.column("result").to_pylist())
            finally:
                close = getattr(batches, "close", None)
                if close is not None:
                    close()
        except BaseException as e:  # handed to the driver's loop, raised there
            post("error", e)
        else:
            post("end", None)

    thread = threading.Thread(target=pump, name="jurist-ray-results", daemon=True)
    thread.start()
    try:
        while True:
            kind, payload = await queue.get()
            if kind == "rows":
                for text in payload:
                    take(text)
            elif kind == "error":
                raise payload
            else:
                return
    finally:
        stop.set()
        if thread.is_alive():  # cancelled (Ctrl-C) while Ray Data still streams
            _stop_execution(ds, thread)


def _stop_execution(ds: Any, thread: threading.Thread) -> None:
    """Stop Ray Data's executor of ``ds`` and wait for the thread reading it, before Ray
    itself is shut down: a Ray Data thread that touches the worker after
    ``ray.shutdown()`` makes Ray end the whole process (exit status 1) before the run can
    say it was interrupted. ``_current_executor`` is Ray Data's own handle on the running
    executor (what its blocking calls shut down when they finish)."""
    executor = getattr(ds, "_current_executor", None)
    if executor is not None:
        with contextlib.suppress(Exception):  # already stopping, or another Ray version
            executor.shutdown(force=True)
    thread.join(timeout=30)


async def judge_on_ray(ctx: EngineContext, options: RayOptions) -> None:
    """The Ray engine's loop over ``ctx.todo()`` (see the module docs)."""
    ray = import_ray()
    entry = _checked_entry(ctx.judge)
    secrets = Secrets.of(ctx.judge)
    started = False
    pacing: Pacing | None = None
    recorder = Recorder(ctx.record)
    try:
        for window in _windows(ctx.todo(), options.window):
            if pacing is None:  # Ray only when there is something to judge
                started = _start_ray(ray, options)
                pacing = _start_pacing(options, ctx.judge, entry)
            ds = _dataset(ray, window, options)
            ds = _judged(
                ds,
                _blocks(options, len(window)),
                entry=entry,
                table=ctx.table,
                retries=ctx.retries,
                options=options,
                pacing=pacing,
                secrets=secrets,
                files=ctx.source.files,
            )
            # jurist draws the run's progress (progress=True); Ray Data's bars stay off
            ds.context.enable_progress_bars = False
            ds.context.print_on_execution_start = False
            with _quiet_ray_data():
                await _stream(ds, recorder.take)
    finally:
        if recorder.duplicates:
            before = int(ctx.store.get_meta("duplicates_refused") or 0)
            ctx.store.set_meta("duplicates_refused", before + recorder.duplicates)
        _stop_pacing(ray, pacing)
        if started:
            ray.shutdown()


def judge_ray_dataset(
    data: Any,
    judge: ItemJudge,
    *,
    fields: Mapping[str, str] | None = None,
    retries: int = 0,
    options: RayOptions | None = None,
    prices: PriceTable | Mapping[str, Any] | None = None,
    files_root: Any = None,
) -> Any:
    """Judge ``data`` on Ray; a lazy ``ray.data.Dataset`` of results.jsonl records.

    ``data``: a ``ray.data.Dataset``, or any source :func:`~jurist.engines.evaluate`
    takes (read whole on the driver). Each output row is the item's columns followed by
    the ``judge_*`` columns of the local engine's results.jsonl (same names and values;
    a failed item has ``judge_score`` null and ``judge_error`` set). Nothing is stored:
    write the dataset where you like (``write_parquet``...). Ray is initialised if it is
    not (``options.address``) and left running, since the dataset runs when consumed;
    the ``rpm`` / ``tpm`` limiter lives as long as the dataset. ``files_root``: folders
    local image files may be read from besides a data file's own (see
    :mod:`jurist._local_files`).
    """
    ray = import_ray()
    options = options or RayOptions()
    check_judge(judge, retries)
    entry = _checked_entry(judge)
    table = resolve_prices(prices)
    required = tuple(judge.required_fields)
    _start_ray(ray, options)
    raw = isinstance(data, ray.data.Dataset)
    blocks = None
    files = LocalFiles.allowing(files_root)
    if not raw:  # items travel as JSON text, so they come back exactly as they were
        source = open_source(data, files_root=files_root)
        files = source.files  # a data file's folder, and the folders allowed
        wired = [
            _wire(
                idx,
                item_hash(row, files=files, where=where),
                row,
                map_fields(row, fields, required, where, files=files),
            )
            for idx, where, row in source
        ]
        data, blocks = _dataset(ray, wired, options), _blocks(options, len(wired))
    return _judged(
        data,
        blocks,
        entry=entry,
        table=table,
        retries=retries,
        options=options,
        pacing=_start_pacing(options, judge, entry),
        secrets=Secrets.of(judge),
        raw=raw,
        fields=dict(fields) if fields else None,
        records=True,
        files=files,
    )
