"""The batch-API engine: the same judges, their requests sent in files instead of calls.

Judges stay as they are. The engine builds a :class:`~jurist.batching.BatchSession` over
the run store's batch tables (the journal it records to), wraps each of the judge's
models in a :class:`~jurist.batching.Batcher` (under the cache, over retries and limits:
:meth:`~jurist.batching.BatchSession.wrap`), and runs the items in *passes*: each item
runs until it has an outcome (recorded) or every request it makes is parked (its task is
dropped: only its requests' ids stay, in the round's request files on disk). After each
pass the session sends one round and reads the answers into the journal; the next pass
runs the items still to do again, and their stored answers return at once, so re-asks of
unreadable verdicts park again and make the next round (or go live with
``followup="live"``). No backend knows it is batched.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from jurist._secrets import get_logger
from jurist.batching import BatchAPIOptions, BatchSession, drain
from jurist.batching._export import exported_files
from jurist.batching._journal import Chunk
from jurist.batching._recover import resend_cost
from jurist.engines._item_path import judge_one, stored_result
from jurist.engines._session import EngineContext
from jurist.errors import ConfigError
from jurist.judges._protocol import models_of, with_models_of
from jurist.models import Model, server_spec
from jurist.runs._batch_store import BatchStore

__all__ = ["AWAITING_RESULTS", "WORKERS", "judge_through_batches"]

AWAITING_RESULTS = "awaiting results"
WORKERS = 256
"""Items run at once in a pass: a parked item holds no task, so this bounds memory, not
the size of a round (a round holds every item parked in the pass)."""

logger = get_logger("jurist.engines")


def _carried(model: Model) -> bool:
    """Whether ``model``'s requests can travel through its provider's batch API."""
    return model.capabilities.batch_api


def batch_providers() -> str:
    """The specs a batch API can carry, for messages (what the backends declare)."""
    from jurist.models._backends import backends

    return ", ".join(
        f"{b.provider}:NAME" + (" with the server's base_url" if b.any_server else "")
        for b in backends()
        if b.batch_api is not None
    )


async def judge_through_batches(ctx: EngineContext, options: BatchAPIOptions) -> str | None:
    """The batch-API engine's session (see the module docs); the run status it ends in
    when not the usual one (``"awaiting results"`` after writing ``file_out``)."""
    models = models_of(ctx.judge)
    if models and not any(_carried(m) for m in models):
        specs = ", ".join(dict.fromkeys(m.spec for m in models))
        raise ConfigError(
            "the batch-API engine sends the requests of models whose provider has a batch "
            f"API ({batch_providers()}); this judge calls {specs}, which would all run live: "
            "use the local engine"
        )
    run_id = ctx.manifest.run_id or "run"
    store = ctx.store.batch_tables(run_id)
    session: BatchSession | None = None
    try:
        if ctx.retry_failed:
            store.forget(r["idx"] for r in ctx.store.rows(failed_only=True))
        session = BatchSession(
            store,
            options,
            run_id=run_id,
            folder=ctx.store.path.parent,
            resend_cost=lambda chunk: _resend_cost(ctx, store, chunk),
            on_status=lambda text: ctx.bar.describe(text) if ctx.bar is not None else None,
            on_note=logger.warning,
        )
        ctx.store.set_meta("batch_api", options.model_dump(mode="json"))
        from jurist.engines._session import run_decisions

        # decisions recorded, held: every session builds the same requests (replay)
        with run_decisions(ctx, restore=False, hold=True):
            written = await drain(session, lambda: _one_pass(ctx, session))
        if written is not None:
            ctx.store.set_meta("batch_file_out", [str(p) for p in exported_files(store)])
            return AWAITING_RESULTS
        ctx.store.set_meta(
            "batch_counts", {**store.counts(), "http_calls": session.transfers.http_calls}
        )
        return None
    finally:
        if session is not None:
            await session.aclose()


async def _one_pass(ctx: EngineContext, session: BatchSession) -> int:
    """Run every item still to do until it ends or parks; how many parked.

    Each item runs on a copy of the judge with models of its own (batchers over the same
    backends): what a judge learns from one item's replies (``output="auto"`` turning
    JSON off after text replies) cannot change the requests another item makes when it
    runs again, so every run of an item asks exactly what its first run asked.
    """
    rows = ctx.todo()
    parked = 0

    async def worker() -> None:
        nonlocal parked
        for idx, digest, row, values in rows:
            judge = with_models_of(ctx.judge, session.wrap)
            outcome = await session.run_item(idx, judge_one(judge, values, idx, ctx.retries))
            if outcome is None:
                parked += 1
            else:
                ctx.record(stored_result(idx, digest, row, outcome, ctx.coster))

    async with asyncio.TaskGroup() as group:
        for _ in range(WORKERS):
            group.create_task(worker())
    return parked


def _resend_cost(ctx: EngineContext, store: BatchStore, chunk: Chunk) -> str:
    """What creating ``chunk``'s batch again may cost twice, estimated from its request
    file while it is on disk (it is removed once its batch is made)."""
    provider, name = chunk.model.get("provider"), str(chunk.model.get("name", ""))
    spec = f"{provider}:{name}" if provider else server_spec(name)
    ids = {cid for cid, _ in store.ids_of(chunk.chunk_id)}
    return resend_cost(
        _bodies(ctx.store.path.parent / "batch", ids), chunk.requests, spec, ctx.table
    )


def _bodies(folder: Path, ids: set[str]) -> list[dict[str, Any]]:
    """The request bodies of ``ids`` in the request files under ``folder``."""
    bodies: list[dict[str, Any]] = []
    for path in sorted(folder.glob("requests-*.jsonl")) if folder.is_dir() else ():
        with path.open("rb") as f:
            for line in f:
                value = orjson.loads(line)
                if value.get("custom_id") in ids:
                    body = value.get("body") or value.get("params")
                    if isinstance(body, dict):
                        bodies.append(body)
    return bodies
