"""The batch engine: stream a dataset through any judge, durably, resumably.

:func:`aevaluate` (and its twin :func:`evaluate`) reads the items lazily, keeps at most
``concurrency`` judgments in flight, commits each finished one to the run store at once,
and returns a :class:`~jurist.runs.Run`. Started again on the same ``run_dir`` it
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

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jurist._secrets import scrub
from jurist._sync import run_sync
from jurist.data._source import ItemSource, open_source
from jurist.engines._engines import (
    Announce,
    BatchAPIEngine,
    Engine,
    LocalEngine,
    RayEngine,
    choose_engine,
)
from jurist.engines._item_path import ErrorOutcome, check_judge, judge_models
from jurist.engines._judge_entry import judge_entry_of
from jurist.engines._run_options import RunOptions, with_overrides
from jurist.engines._session import EngineContext, judge_locally, normalised, run_session
from jurist.errors import ConfigError
from jurist.judges._protocol import ItemJudge, models_of
from jurist.models import Model
from jurist.runs._cost import PriceTable, resolve_prices
from jurist.runs._folder import STORE_NAME, check_run_folder, claim_run_folder
from jurist.runs._manifest import DatasetInfo, Manifest
from jurist.runs._resume import open_run, refuse_changed
from jurist.runs._run import Run
from jurist.runs._store import RunStore

__all__ = [
    "BatchAPIEngine",
    "Engine",
    "EngineContext",
    "ErrorOutcome",
    "LocalEngine",
    "RayEngine",
    "RunOptions",
    "aevaluate",
    "evaluate",
    "judge_locally",
    "judge_models",
    "run_session",
]

DEFAULT_CONCURRENCY = 16


async def aevaluate(
    data: Any,
    judge: ItemJudge,
    options: RunOptions | None = None,
    *,
    engine: Engine | None = None,
    announce: Announce | None = None,
    run_dir: str | Path | None = None,
    resume: bool | None = None,
    retry_failed: bool | None = None,
    overwrite: bool | None = None,
    fields: Mapping[str, str] | None = None,
    retries: int | None = None,
    concurrency: int | None = None,
    progress: bool | None = None,
    prices: PriceTable | Mapping[str, Any] | None = None,
    repeats: int | None = None,
    adaptive: bool | None = None,
    min_repeats: int | None = None,
    files_root: str | Path | Sequence[str | Path] | None = None,
) -> Run:
    """Judge every item of ``data`` with ``judge`` into the run folder ``run_dir``.

    The run's settings come as one :class:`RunOptions` (``options``) or as keywords; a
    keyword given (not ``None``) overrides the options' field of that name.

    Args:
        data: a path (.jsonl, .json, .csv, .parquet), a pandas DataFrame, a
            ``datasets.Dataset``, or a sequence or iterable of dicts.
        judge: any judge kind meeting :class:`~jurist.judges.ItemJudge`.
        options: the run's settings in one object (the CLI builds one from its flags).
        engine: how the items travel: :class:`LocalEngine` (the default: in this
            process), :class:`RayEngine` (a Ray cluster, Ray Data) or
            :class:`BatchAPIEngine` (the provider's batch API, about half the price).
            Its checks run before any run folder is made, and it readies the judge's
            models (:meth:`Engine.prepare`: the local engine loads weights and reaches
            servers) before the first item; the models are closed when the run ends.
        announce: what each model's preparation runs inside (the CLI's spinner).
        run_dir: the run folder (``manifest.json`` and ``run.sqlite``); a fresh temporary
            folder when ``None``. A missing or empty folder, or a jurist run folder.
        resume: continue a run already in ``run_dir`` (same judge, data and options);
            ``False`` deletes its results and starts over. Default ``True``.
        retry_failed: on resume, judge again the items stored without a score (``False``
            keeps their failures). Default ``True``.
        overwrite: write into a folder that is not a jurist run folder anyway (a foreign
            ``run.sqlite`` there is replaced). Default ``False``.
        fields: judge field -> column (``{"prompt": "question"}``).
        retries: re-asks for an unreadable verdict, passed to ``judge.judge`` (default 0).
        concurrency: items in flight at once (default: the judge's, else 16).
        progress: draw a progress bar (items/s, ETA, failures, tokens, cost).
        prices: a :class:`PriceTable`, or spec -> ``{"prompt", "completion", "cached"}``
            (USD per million tokens) overriding the default table.
        repeats: judge each item this many times (default 1); each repeat is a fresh
            draw (never a cached answer of another repeat), stored and resumed on its own;
            the item's score is the mean over its repeats (local engine only).
        adaptive: with ``repeats``, judge ``min_repeats`` first and more, up to
            ``repeats``, only while the item's verdict is not settled (see
            :class:`~jurist.trust.RepeatPlan` for the stopping rule).
        min_repeats: with ``adaptive``, the repeats every item gets (default
            ``min(3, repeats)``).
        files_root: folders (one or several) the items' local image files may be read
            from. A data file's images are read from its own folder (real paths: a
            symlink leaving it is refused) and these; items in memory name no folder, so
            none of their local files is read unless given here. See docs/security.md.
    """
    chosen = choose_engine(engine)
    given = dict(
        run_dir=run_dir,
        resume=resume,
        retry_failed=retry_failed,
        overwrite=overwrite,
        fields=fields,
        retries=retries,
        concurrency=concurrency,
        progress=progress,
        prices=prices,
        repeats=repeats,
        adaptive=adaptive,
        min_repeats=min_repeats,
        files_root=files_root,
    )
    opts = with_overrides(options, given)
    return await _evaluate(data, judge, opts, chosen, announce)


async def _evaluate(
    data: Any, judge: ItemJudge, opts: RunOptions, engine: Engine, announce: Announce | None
) -> Run:
    """:func:`aevaluate` with its options and engine resolved: the whole life of a run.

    Every check comes before any folder is made or any model is loaded: the judge and the
    options, the engine's own (:meth:`Engine.check`), the folder, and a resume whose
    judge, data or options changed (the manifest is built once, here, and compared with
    the stored one read-only). Then the engine prepares the judge's models (behind
    ``announce``), the folder is claimed and the store opened, one session runs, and the
    store and the models are closed whatever happens.
    """
    check_judge(judge, opts.retries)
    models = list(models_of(judge))
    try:
        folder = await _run(data, judge, opts, engine, announce, models)
    finally:
        for model in models:
            await model.aclose()
    run = Run(folder)
    _write_review(judge, run)
    return run


async def _run(
    data: Any,
    judge: ItemJudge,
    opts: RunOptions,
    engine: Engine,
    announce: Announce | None,
    models: list[Model],
) -> Path:
    """One run of :func:`_evaluate` (its models closed by the caller); the run folder."""
    plan = opts.repeat_plan()
    if plan is not None and not isinstance(engine, LocalEngine):
        raise ConfigError(
            f"repeats are judged by the local engine only; the {engine.name} engine does not "
            "run them yet: use engine=LocalEngine() (the CLI's default), or repeats=1"
        )
    engine.check(judge, opts)  # before the folder and any model load
    workers = opts.concurrency or int(getattr(judge, "concurrency", 0) or DEFAULT_CONCURRENCY)
    if workers < 1:
        raise ConfigError(f"concurrency must be at least 1, got {workers}")
    folder = opts.run_dir or Path(tempfile.mkdtemp(prefix="jurist-run-"))
    inputs = [Path(data)] if isinstance(data, str | Path) else []
    source = open_source(data, files_root=opts.files_root)
    manifest, table = _manifest(source, judge, opts, engine, workers)
    manifest.check_storable()  # before the folder: a number SQLite cannot keep stops here
    check_run_folder(folder, overwrite=opts.overwrite, inputs=inputs)
    if opts.resume:
        refuse_changed(folder, manifest)  # before the weights load
    await engine.prepare(models, announce)
    with claim_run_folder(folder, overwrite=opts.overwrite, inputs=inputs) as kind:
        store = RunStore(folder / STORE_NAME)
        try:
            opened = open_run(
                store,
                folder,
                kind,
                manifest,
                resume=opts.resume,
                retry_failed=opts.retry_failed,
                repeats=plan is not None,
            )
            # the catalog entry that rebuilds the judge: for ingest() and calibrate
            store.set_meta("judge_entry", judge_entry_of(judge))
            ctx = EngineContext(
                source,
                judge,
                store,
                opened.manifest,
                opts.fields,
                opts.retries,
                workers,
                opts.progress,
                table,
                opts.retry_failed,
                plan,
                done=opened.done,
                stored=opened.stored,
            )
            await run_session(ctx, lambda: engine.run(ctx))
        finally:
            store.close()
    return folder


REVIEW_NAME = "review.jsonl"
"""The file of a cascade's run folder that lists the items for people."""


def _write_review(judge: ItemJudge, run: Run) -> None:
    """A cascade's run: the items no tier decided, for people, in ``review.jsonl`` of the
    run folder (written again from the store after every session)."""
    from jurist.trust import CascadeJudge, write_review  # here: `import jurist` stays light

    if isinstance(judge, CascadeJudge):
        write_review(run.records(), run.run_dir / REVIEW_NAME)


def _manifest(
    source: ItemSource, judge: ItemJudge, opts: RunOptions, engine: Engine, workers: int
) -> tuple[Manifest, PriceTable]:
    """The manifest of a run of ``judge`` over ``source``, built once (a re-iterable source
    is read once here: counted, checked and hashed), and the run's price table."""
    plan = opts.repeat_plan()
    fields = opts.fields
    table = resolve_prices(opts.prices)
    if source.reiterable:
        scan = source.scan(fields, tuple(judge.required_fields))
        dataset = DatasetInfo(source=source.description, items=scan.items, hash=scan.dataset_hash)
    else:
        dataset = DatasetInfo(source=source.description, items=None, hash=None)
    manifest = Manifest(
        # scrubbed here, so a stored manifest and a new one compare alike
        judge=scrub(normalised(judge.describe())),
        dataset=dataset,
        options={
            "fields": dict(fields or {}),
            "retries": opts.retries,
            **({"repeats": plan.describe()} if plan is not None else {}),
        },
        prices=table.model_dump(mode="json")["prices"],
        settings={
            "concurrency": workers,
            "retry_failed": opts.retry_failed,
            "engine": engine.name,
            **opts.notes,
        },
    )
    return manifest, table


def evaluate(
    data: Any,
    judge: ItemJudge,
    options: RunOptions | None = None,
    *,
    engine: Engine | None = None,
    announce: Announce | None = None,
    run_dir: str | Path | None = None,
    resume: bool | None = None,
    retry_failed: bool | None = None,
    overwrite: bool | None = None,
    fields: Mapping[str, str] | None = None,
    retries: int | None = None,
    concurrency: int | None = None,
    progress: bool | None = None,
    prices: PriceTable | Mapping[str, Any] | None = None,
    repeats: int | None = None,
    adaptive: bool | None = None,
    min_repeats: int | None = None,
    files_root: str | Path | Sequence[str | Path] | None = None,
) -> Run:
    """Sync twin of :func:`aevaluate` (works inside a running event loop too): it
    resolves the options and the engine here and forwards them as two objects."""
    chosen = choose_engine(engine)
    given = dict(
        run_dir=run_dir,
        resume=resume,
        retry_failed=retry_failed,
        overwrite=overwrite,
        fields=fields,
        retries=retries,
        concurrency=concurrency,
        progress=progress,
        prices=prices,
        repeats=repeats,
        adaptive=adaptive,
        min_repeats=min_repeats,
        files_root=files_root,
    )
    opts = with_overrides(options, given)
    return run_sync(aevaluate(data, judge, opts, engine=chosen, announce=announce))
