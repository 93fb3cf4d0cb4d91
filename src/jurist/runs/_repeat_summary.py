"""A run's scores per item and repeat, and the repeat figures of its summary.

:func:`item_scores` reads a run store as one list per item (in dataset order) of its
repeats' scores: a run without repeats gives one score per item, so the same code (the
gate, the pytest plugin) reads either kind. :func:`repeat_summary` is the
:class:`~jurist.runs.RepeatSummary` of :meth:`jurist.Run.summary`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jurist.runs._run_types import RepeatSummary
from jurist.runs._store import RunStore

__all__ = ["item_scores", "repeat_summary"]


def item_scores(store: RunStore) -> list[list[float | None]]:
    """Each finished item's repeat scores, in dataset order (a run without repeats, or an
    item with no stored repeat: its one score). Items not finished yet are left out."""
    table = store.repeat_table()
    repeats: dict[int, list[float | None]] = {}
    if table is not None:
        for r in table.all():
            repeats.setdefault(r.idx, []).append(r.score)
    return [repeats.get(row["idx"], [row["score"]]) for row in store.rows()]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def repeat_summary(
    options: Mapping[str, Any], scores: list[list[float | None]], *, level: float = 0.95
) -> RepeatSummary | None:
    """The repeat figures of a run whose manifest ``options`` name repeats (else
    ``None``), from its :func:`item_scores`."""
    plan = options.get("repeats")
    if not isinstance(plan, dict):
        return None
    from jurist.metrics._repeats import flip_rate, self_consistency, two_level_interval

    flips = [f for f in (flip_rate(s) for s in scores) if f is not None]
    low, high = two_level_interval(scores, confidence=level)
    means = [[sum(v) / len(v)] for v in ([x for x in s if x is not None] for s in scores) if v]
    items_low, items_high = two_level_interval(means, confidence=level)
    return RepeatSummary(
        repeats=int(plan["repeats"]),
        adaptive=bool(plan["adaptive"]),
        min_repeats=int(plan["min_repeats"]),
        judgments=sum(len(s) for s in scores),
        failed=sum(1 for s in scores for x in s if x is None),
        unstable_items=sum(1 for f in flips if f > 0),
        mean_flip_rate=sum(flips) / len(flips) if flips else None,
        self_consistency=_number(self_consistency(scores)),
        level=level,
        mean_low=_number(low),
        mean_high=_number(high),
        items_low=_number(items_low),
        items_high=_number(items_high),
    )
