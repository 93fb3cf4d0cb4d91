"""Fit and replay a :class:`~jurist.trust.CascadeJudge` from recorded outcomes, no call.

Judge the labelled items once with every tier (for example a
:class:`~jurist.Panel` of the tiers through :func:`jurist.evaluate`: each row's
``outcome["judgments"]`` holds every tier's outcome), then fit the cascade's thresholds,
or replay given thresholds, as often as you like without calling a model. The outcomes
may be the objects or their stored form (``run.rows()``); the cascade's own confidence
function and :meth:`~jurist.trust.CascadeJudge.step` read them, so a replay decides
exactly as a live run would.

>>> from jurist.types import Judgment
>>> from jurist.trust import CascadeJudge
>>> class Tier:
...     required_fields = ("prompt",)
...     def __init__(self, name): self.name = name
...     def describe(self): return {"kind": "stub", "name": self.name}
...     async def judge(self, item, *, retries=0): raise AssertionError("no call")
>>> cheap = [{"score": 1.0, "confidence": 0.99}] * 40 + [{"score": 0.0, "confidence": 0.6}] * 40
>>> strong = [Judgment(score=1.0, confidence=0.98)] * 80
>>> labels = [1.0] * 80
>>> cascade = fit_recorded(CascadeJudge([Tier("cheap"), Tier("strong")]), [cheap, strong],
...                        labels, target=0.85, delta=0.1)
>>> cascade.thresholds
(0.99, 0.98)
>>> out = replay_recorded(cascade, [cheap, strong], labels)
>>> [t.decided for t in out.tiers], out.coverage, out.agreement
([40, 40], 1.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jurist.errors import DataError
from jurist.trust._cascade import CascadeJudge
from jurist.trust._fit import CascadeReplay, DeltaSplit, fit_cascade, replay_cascade

__all__ = ["fit_recorded", "replay_recorded"]

Agree = Callable[[float, Any], bool]


def _equal(score: float, label: Any) -> bool:
    return label is not None and math.isclose(score, float(label), abs_tol=1e-9)


def _tables(
    cascade: CascadeJudge,
    outcomes: Sequence[Sequence[Any]],
    labels: Sequence[Any] | None,
    agree: Agree | None,
) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    k = len(cascade.tiers)
    if len(outcomes) != k:
        raise DataError(f"outcomes of {len(outcomes)} tiers for a cascade of {k}")
    n = len(outcomes[0])
    for t, column in enumerate(outcomes):
        if len(column) != n:
            raise DataError(f"tier {t} has {len(column)} outcomes, tier 0 has {n}")
    if labels is not None and len(labels) != n:
        raise DataError(f"{len(labels)} labels for {n} items")
    same = agree or _equal
    conf = [np.full(n, np.nan) for _ in range(k)]
    right = [np.zeros(n, dtype=bool) for _ in range(k)]
    for t, column in enumerate(outcomes):
        for i, outcome in enumerate(column):
            step = cascade.step(t, outcome, None)
            if step.score is None or step.confidence is None:
                continue
            conf[t][i] = step.confidence
            if labels is not None:
                right[t][i] = bool(same(step.score, labels[i]))
    return conf, (right if labels is not None else None)


def fit_recorded(
    cascade: CascadeJudge,
    outcomes: Sequence[Sequence[Any]],
    labels: Sequence[Any],
    *,
    target: float,
    delta: float,
    agree: Agree | None = None,
    min_selected: int = 30,
    resolution: float | None = 0.001,
    delta_split: DeltaSplit = "union",
) -> CascadeJudge:
    """``cascade`` with thresholds fitted on recorded outcomes (``outcomes[t][i]``: tier
    ``t`` on item ``i``), as :meth:`~jurist.trust.CascadeJudge.fit` would fit them live."""
    conf, right = _tables(cascade, outcomes, labels, agree)
    assert right is not None
    fit = fit_cascade(
        conf,
        right,
        target=target,
        delta=delta,
        names=cascade.tier_names,
        min_selected=min_selected,
        resolution=resolution,
        delta_split=delta_split,
    )
    return cascade.with_thresholds(fit.thresholds, fit)


def replay_recorded(
    cascade: CascadeJudge,
    outcomes: Sequence[Sequence[Any]],
    labels: Sequence[Any] | None = None,
    *,
    agree: Agree | None = None,
    cost_per_call: Sequence[float] | None = None,
) -> CascadeReplay:
    """The fitted ``cascade`` replayed on recorded outcomes: which tier decides each item,
    coverage, and with labels the agreement per tier and overall (no model call)."""
    if cascade.thresholds is None:
        raise DataError(f"cascade {cascade.name!r} has no thresholds to replay")
    conf, right = _tables(cascade, outcomes, labels, agree)
    return replay_cascade(
        conf,
        cascade.thresholds,
        correct=right,
        names=cascade.tier_names,
        cost_per_call=cost_per_call,
    )
