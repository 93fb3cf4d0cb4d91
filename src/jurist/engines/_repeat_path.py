"""One item's repeats, from judge to store (a run with ``repeats=N``; local engine).

Each repeat is judged by the judge of that repeat (:func:`jurist.trust.judge_for_repeat`)
and committed to the run store's ``repeats`` table as it finishes; a resumed run reads an
item's stored repeats first and judges only the missing ones (and, with
``retry_failed``, the failed ones), so no (item, repeat) pair is judged twice and none is
left out. The first repeats of an item (all N, or ``min_repeats`` when adaptive) go at
once, within the session's ``concurrency``, which bounds the judge calls in flight over
every item's repeats; an adaptive item then takes one more at a time until
:meth:`~jurist.trust.RepeatPlan.settled` says its verdict is settled. The item's row in
``results`` (:func:`jurist.trust.aggregate_repeats` over the repeats the stopping rule
counted) is written last, so an item counts as done only once its repeats are.

A resumed item walks its stored repeats through the same rule. When a failed repeat judged
again settles the item earlier than the first session did, the stored repeats after the
stop are set aside (:meth:`~jurist.runs._repeat_store.RepeatTable.set_aside`: what they
spent stays in the run's totals as superseded), so the item's row, the run's repeat figures
and its exports are those of a fresh run with the same answers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from jurist.engines._item_path import Coster, judge_one
from jurist.judges._protocol import ItemJudge
from jurist.runs._repeat_store import StoredRepeat
from jurist.runs._store import RunStore, StoredResult
from jurist.trust._repeats import RepeatPlan, aggregate_repeats, judge_for_repeat
from jurist.types import Usage

__all__ = ["RepeatContext", "item_row", "judge_repeats", "repeat_row"]


class RepeatContext(Protocol):
    """What :func:`judge_repeats` reads of an engine session
    (:class:`~jurist.engines.EngineContext` has it)."""

    judge: ItemJudge
    store: RunStore
    retries: int
    retry_failed: bool
    plan: RepeatPlan | None
    coster: Coster
    repeat_judges: dict[int, Any]
    slots: asyncio.Semaphore | None


def repeat_row(idx: int, repeat: int, outcome: Any, coster: Coster) -> StoredRepeat:
    """The store row of one repeat's outcome (priced by ``coster``)."""
    cost, estimated = coster.cost(outcome)
    dumped = outcome.model_dump(mode="json", exclude={"usage"})
    return StoredRepeat(
        idx=idx,
        repeat=repeat,
        score=outcome.score,
        error=outcome.error,
        outcome=dumped,
        usage=outcome.usage,
        cost=cost,
        cost_estimated=estimated,
        latency=float(dumped.get("latency") or 0.0),
    )


def item_row(
    idx: int, digest: str, row: Mapping[str, Any], repeats: Sequence[StoredRepeat]
) -> StoredResult:
    """An item's ``results`` row from its stored repeats: their aggregate outcome, their
    usage, cost and latency summed (cost unknown when one repeat's is)."""
    outcome = aggregate_repeats([r.outcome for r in repeats])
    usage = sum((r.usage for r in repeats), Usage())
    costs = [r.cost for r in repeats]
    return StoredResult(
        idx=idx,
        item_hash=digest,
        item=dict(row),
        score=outcome["score"],
        error=outcome.get("error") if outcome["score"] is None else None,
        outcome=outcome,
        usage=usage,
        cost=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        cost_estimated=any(r.cost_estimated for r in repeats),
        latency=sum(r.latency for r in repeats),
    )


async def judge_repeats(
    ctx: RepeatContext, idx: int, digest: str, row: Mapping[str, Any], values: Mapping[str, Any]
) -> StoredResult:
    """Judge item ``idx``'s missing repeats, store each, and give its ``results`` row."""
    plan = ctx.plan
    table = ctx.store.repeat_table()
    assert plan is not None and table is not None  # a run with repeats has both
    kept = {r.repeat: r for r in table.of(idx) if r.score is not None or not ctx.retry_failed}

    async def one(repeat: int) -> StoredRepeat:
        if repeat in kept:
            return kept[repeat]
        judge = ctx.repeat_judges.get(repeat)
        if judge is None:
            judge = ctx.repeat_judges[repeat] = judge_for_repeat(ctx.judge, repeat)
        async with ctx.slots or contextlib.nullcontext():
            outcome = await judge_one(judge, values, idx, ctx.retries)
        stored = repeat_row(idx, repeat, outcome, ctx.coster)
        table.write(stored)
        return stored

    done = list(await asyncio.gather(*(one(r) for r in range(plan.first))))
    while not plan.settled([d.score for d in done]):
        done.append(await one(len(done)))
    stored = table.of(idx)
    if any(r.repeat >= len(done) for r in stored):  # an earlier session's, past the stop
        table.set_aside(idx, len(done))
        stored = [r for r in stored if r.repeat < len(done)]
    return item_row(idx, digest, row, stored)
