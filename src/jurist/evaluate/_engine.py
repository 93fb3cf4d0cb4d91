"""The batch engine: stream a dataset through any judge, durably, resumably.

:func:`aevaluate` (and its twin :func:`evaluate`) reads the items lazily, keeps at most
``concurrency`` judgments in flight, commits each finished one to the run store at once,
and returns a :class:`~jurist.evaluate.Run`. Started again on the same ``run_dir`` it
skips the items already scored and judges again the ones that failed (unless
``retry_failed=False``), so a killed run completes with exactly one result per item and no
scored call is sent again. A changed judge, dataset or option stops the resume with the
list of differences; settings that cannot change a successful judgment (concurrency,
timeouts, transport retries, rate limits, the cache, how a server takes JSON) do not.
A folder that is not a jurist run folder is refused (``overwrite=True`` writes into it
anyway), and one process at a time works on a run folder. Interrupted (Ctrl-C, a
cancelled task), the run is recorded as ``interrupted``.

>>> import jurist, tempfile
>>> judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["Correct", "Incorrect"]))
>>> items = [{"prompt": "2+2?", "response": "4"}, {"prompt": "2+3?", "response": "6"}]
>>> run = jurist.evaluate(items, judge, run_dir=tempfile.mkdtemp())
>>> [r["judge_score"] for r in run.records()]
[1.0, 0.0]
>>> run.summary().calls
2
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist._progress import BatchProgress
from jurist._secrets import scrub
from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError, JuristError, JuristRuntimeError
from jurist.evaluate._cost import PriceTable, bill, resolve_prices
from jurist.evaluate._folder import STORE_NAME, FolderKind, claim_run_folder
from jurist.evaluate._manifest import DatasetInfo, Manifest
from jurist.evaluate._run import Run
from jurist.evaluate._source import item_hash, map_fields, open_source
from jurist.evaluate._store import FORMAT, RunStore, StoredResult
from jurist.judges._protocol import ItemJudge
from jurist.types import Usage

__all__ = ["ErrorOutcome", "aevaluate", "evaluate", "judge_models"]

DEFAULT_CONCURRENCY = 16


class ErrorOutcome(BaseModel):
    """The outcome recorded when a judge raised a runtime error instead of returning one."""

    model_config = ConfigDict(frozen=True)

    score: float | None = None
    error: str
    usage: Usage = Usage()


def judge_models(judge: Any) -> list[str]:
    """The model specs a judge calls (``[]`` when it does not say).

    >>> import jurist
    >>> judge_models(jurist.LLMJudge("mock:a"))
    ['mock:a']
    """
    from jurist.models import Model

    model = getattr(judge, "model", None)
    if isinstance(model, Model):
        return [model.spec]
    specs: list[str] = []
    for sub in getattr(judge, "judges", None) or ():
        specs.extend(s for s in judge_models(sub) if s not in specs)
    if not specs and hasattr(judge, "describe"):
        _models_in(judge.describe(), specs)
    return specs


def _models_in(config: Any, specs: list[str]) -> None:
    """Collect ``provider:name`` of every model identity (``{"model": {...}}``) in a config."""
    if isinstance(config, dict):
        model = config.get("model")
        if isinstance(model, dict) and "provider" in model and "name" in model:
            spec = f"{model['provider']}:{model['name']}"
            if spec not in specs:
                specs.append(spec)
        for value in config.values():
            _models_in(value, specs)
    elif isinstance(config, list | tuple):
        for value in config:
            _models_in(value, specs)


class _Coster:
    """Prices one outcome by the judge's model(s).

    One price for every model the judge calls: the outcome's total usage prices exactly.
    Otherwise a judge with sub-judges (a panel) whose outcome keeps each sub-judge's own
    outcome (``judgments``, in the same order) is priced sub-judge by sub-judge; anything
    else is unpriced (``None``), never guessed.
    """

    def __init__(self, judge: Any, table: PriceTable) -> None:
        self.specs = judge_models(judge)
        prices = {table.price_for(s) for s in self.specs}
        self.price = prices.pop() if len(prices) == 1 else None
        subs = getattr(judge, "judges", None) or ()
        self.subs = [] if self.price is not None else [_Coster(j, table) for j in subs]

    @property
    def priced(self) -> bool:
        return self.price is not None or (bool(self.subs) and all(s.priced for s in self.subs))

    def cost(self, outcome: Any) -> tuple[float | None, bool]:
        usage: Usage = outcome.usage
        if usage.calls == 0 and usage.cache_hits == 0 and usage.total_tokens == 0:
            # no usage came back (an API error): a priced model billed nothing; an unpriced
            # one may have billed anything, so its cost stays unknown
            return (0.0, False) if self.priced else (None, False)
        if self.price is not None:
            return bill(outcome.usage, self.price)
        parts = getattr(outcome, "judgments", None)
        if not self.subs or parts is None or len(parts) != len(self.subs):
            return None, False
        total, estimated = 0.0, False
        for coster, part in zip(self.subs, parts, strict=True):
            cost, est = coster.cost(part)
            if cost is None:
                return None, False
            total, estimated = total + cost, estimated or est
        return total, estimated


def _normalised(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


async def aevaluate(
    data: Any,
    judge: ItemJudge,
    *,
    run_dir: str | Path | None = None,
    resume: bool = True,
    retry_failed: bool = True,
    overwrite: bool = False,
    fields: Mapping[str, str] | None = None,
    retries: int = 0,
    concurrency: int | None = None,
    progress: bool = False,
    prices: PriceTable | Mapping[str, Any] | None = None,
) -> Run:
    """Judge every item of ``data`` with ``judge`` into the run folder ``run_dir``.

    Args:
        data: a path (.jsonl, .json, .csv, .parquet), a pandas DataFrame, a
            ``datasets.Dataset``, or a sequence or iterable of dicts.
        judge: any judge kind meeting :class:`~jurist.judges.ItemJudge`.
        run_dir: the run folder (``manifest.json`` and ``run.sqlite``); a fresh temporary
            folder when ``None``. A missing or empty folder, or a jurist run folder.
        resume: continue a run already in ``run_dir`` (same judge, data and options);
            ``False`` deletes its results and starts over.
        retry_failed: on resume, judge again the items stored without a score (``False``
            keeps their failures).
        overwrite: write into a folder that is not a jurist run folder anyway (a foreign
            ``run.sqlite`` there is replaced).
        fields: judge field -> column (``{"prompt": "question"}``).
        retries: re-asks for an unreadable verdict, passed to ``judge.judge``.
        concurrency: items in flight at once (default: the judge's, else 16).
        progress: draw a progress bar (items/s, ETA, failures, tokens, cost).
        prices: a :class:`PriceTable`, or spec -> ``{"prompt", "completion", "cached"}``
            (USD per million tokens) overriding the default table.
    """
    if not isinstance(judge, ItemJudge):
        raise ConfigError(
            f"{type(judge).__name__} is not a judge: it needs name, required_fields, "
            "describe() and async judge(item)"
        )
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries}")
    workers = concurrency or int(getattr(judge, "concurrency", 0) or DEFAULT_CONCURRENCY)
    if workers < 1:
        raise ConfigError(f"concurrency must be at least 1, got {workers}")
    source = open_source(data)
    required = tuple(judge.required_fields)
    if source.reiterable:
        scan = source.scan(fields, required)
        dataset = DatasetInfo(source=source.description, items=scan.items, hash=scan.dataset_hash)
    else:
        dataset = DatasetInfo(source=source.description, items=None, hash=None)
    folder = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="jurist-run-"))
    table = resolve_prices(prices)
    manifest = Manifest(
        # scrubbed here, so a stored manifest and a new one compare alike
        judge=scrub(_normalised(judge.describe())),
        dataset=dataset,
        options={"fields": dict(fields or {}), "retries": retries},
        prices=table.model_dump(mode="json")["prices"],
        settings={"concurrency": workers, "retry_failed": retry_failed},
    )
    inputs = [Path(data)] if isinstance(data, str | Path) else []
    with claim_run_folder(folder, overwrite=overwrite, inputs=inputs) as kind:
        store = RunStore(folder / STORE_NAME)
        try:
            manifest = _open_run(store, folder, kind, manifest, resume)
            await _judge_all(
                source,
                judge,
                store,
                manifest,
                fields,
                retries,
                workers,
                progress,
                table,
                retry_failed,
            )
        finally:
            store.close()
    return Run(folder)


def stored_manifest(store: RunStore, folder: Path) -> Manifest | None:
    """The manifest the store's rows belong to (``manifest.json`` for an older store)."""
    kept = store.get_meta("manifest")
    if kept is not None:
        return Manifest.model_validate(kept)
    return Manifest.read(folder)


def _open_run(
    store: RunStore, folder: Path, kind: FolderKind, manifest: Manifest, resume: bool
) -> Manifest:
    """Resume the run in ``store`` (after checking it is the same run), or start a new one."""
    existing = stored_manifest(store, folder) if kind == "run" else None
    if existing is not None and resume:
        diffs = existing.differences(manifest)
        if diffs:
            listed = "\n  ".join(diffs)
            totals = store.totals()
            lost = (
                f"None of its {totals.items} stored items has a score: starting over loses "
                "nothing.\n"
                if totals.items and not totals.scored
                else ""
            )
            raise ConfigError(
                f"{folder}: cannot resume this run: its judge, data or options changed:\n"
                f"  {listed}\n{lost}Use another run folder, or start over with resume=False "
                "(--no-resume)."
            )
        # this session's settings and prices; the run's identity stays
        resumed = existing.model_copy(
            update={"settings": manifest.settings, "prices": manifest.prices}
        )
        if existing.run_id is None:  # a store from before the manifest was kept in it
            resumed = resumed.model_copy(update={"run_id": manifest.run_id or _new_id()})
            store.set_meta("format", FORMAT)
        store.set_meta("manifest", resumed.model_dump(mode="json"))
        resumed.write(folder)
        return resumed
    run_id = store.start(manifest.model_dump(mode="json"))
    started = manifest.model_copy(update={"run_id": run_id})
    started.write(folder)
    return started


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex


def _mark(store: RunStore, status: str) -> None:
    """Record the run's status on the way out; a store that cannot take it (a full disk)
    must not hide the error that ended the run."""
    with contextlib.suppress(JuristError):
        store.set_meta("status", status)


async def _judge_all(
    source: Any,
    judge: ItemJudge,
    store: RunStore,
    manifest: Manifest,
    fields: Mapping[str, str] | None,
    retries: int,
    workers: int,
    progress: bool,
    table: PriceTable,
    retry_failed: bool,
) -> None:
    done = store.done_bitmap(scored_only=retry_failed)
    stored = store.done_bitmap() if retry_failed else done
    check_each = manifest.dataset.hash is None
    coster = _Coster(judge, table)
    required = tuple(judge.required_fields)
    rows = iter(source)
    started = time.perf_counter()
    store.set_meta("status", "running")
    sessions = int(store.get_meta("sessions") or 0) + 1
    store.set_meta("sessions", sessions)

    with BatchProgress(
        manifest.dataset.items,
        enabled=progress,
        completed=done.count,
        show_cost=coster.priced,
    ) as bar:

        async def worker() -> None:
            for idx, where, row in rows:
                digest = item_hash(row)
                if check_each and stored.has(idx) and store.hash_of(idx) != digest:
                    raise DataError(
                        f"{where}: this item differs from item {idx} of the run in "
                        f"{store.path.parent}; the data changed since the run began"
                    )
                if done.has(idx):
                    continue
                values = map_fields(row, fields, required, where)
                try:
                    outcome: Any = await judge.judge(values, retries=retries)
                except JuristRuntimeError as e:
                    sent = int(getattr(e, "attempts", 0) or 0)
                    outcome = ErrorOutcome(error=f"{e.category}: {e}", usage=Usage(attempts=sent))
                usage: Usage = outcome.usage
                cost, estimated = coster.cost(outcome)
                dumped = outcome.model_dump(mode="json", exclude={"usage"})
                store.write(
                    StoredResult(
                        idx=idx,
                        item_hash=digest,
                        item=row,
                        score=outcome.score,
                        error=outcome.error,
                        outcome=dumped,
                        usage=usage,
                        cost=cost,
                        cost_estimated=estimated,
                        latency=float(dumped.get("latency") or 0.0),
                    )
                )
                done.add(idx)
                bar.advance(ok=outcome.score is not None, tokens=usage.total_tokens, cost=cost)

        try:
            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(workers):
                        group.create_task(worker())
            except BaseExceptionGroup as eg:
                # one worker's error (bad data, a bug, a full disk) ends the run; finished
                # items stay stored
                raise eg.exceptions[0] from None
        except (asyncio.CancelledError, KeyboardInterrupt):
            _mark(store, "interrupted")
            raise
        except BaseException:
            _mark(store, "failed")
            raise
        finally:
            elapsed = float(store.get_meta("seconds") or 0.0) + time.perf_counter() - started
            with contextlib.suppress(JuristError):
                store.set_meta("seconds", round(elapsed, 6))
    complete = manifest.dataset.items is None or store.count() >= manifest.dataset.items
    if manifest.dataset.items is None:
        store.set_meta("items", store.count())
    store.set_meta("status", "complete" if complete else "incomplete")


def evaluate(
    data: Any,
    judge: ItemJudge,
    *,
    run_dir: str | Path | None = None,
    resume: bool = True,
    retry_failed: bool = True,
    overwrite: bool = False,
    fields: Mapping[str, str] | None = None,
    retries: int = 0,
    concurrency: int | None = None,
    progress: bool = False,
    prices: PriceTable | Mapping[str, Any] | None = None,
) -> Run:
    """Sync twin of :func:`aevaluate` (works inside a running event loop too)."""
    return run_sync(
        aevaluate(
            data,
            judge,
            run_dir=run_dir,
            resume=resume,
            retry_failed=retry_failed,
            overwrite=overwrite,
            fields=fields,
            retries=retries,
            concurrency=concurrency,
            progress=progress,
            prices=prices,
        )
    )
