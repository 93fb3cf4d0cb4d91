"""Monotone calibration maps and paired before/after gains; numpy alone.

:func:`isotonic_fit` fits the non-decreasing function of a judge's score that is closest to
the labels in squared error (pool-adjacent-violators; ties in the score are pooled first,
as scikit-learn's ``IsotonicRegression`` does). The :class:`IsotonicMap` it returns
interpolates linearly between the fitted knots and holds its end values outside them, so a
score never seen in fitting still maps into the labels' range.

:func:`paired_gain` says whether a change (a calibration, a new prompt) moved agreement on
the same items: the bootstrap resamples items once and measures ``metric(after)`` and
``metric(before)`` on the same draw, so the interval is the gain's, not two intervals that
overlap by construction.

>>> m = isotonic_fit([0.1, 0.2, 0.3, 0.4], [1, 3, 2, 4])
>>> m.x, m.y
((0.1, 0.2, 0.3, 0.4), (1.0, 2.5, 2.5, 4.0))
>>> m(0.25), m(0.0), m(0.9)
(2.5, 1.0, 4.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, model_validator

from jurist.errors import DataError
from jurist.metrics._agreement import Estimate
from jurist.metrics._batched import Batched, IntArray, batched
from jurist.metrics._measures import is_missing
from jurist.metrics._stats import bootstrap_interval

__all__ = ["IsotonicMap", "isotonic_fit", "paired_gain"]


class IsotonicMap(BaseModel):
    """A non-decreasing piecewise-linear map: knots ``x`` (increasing) -> values ``y``."""

    model_config = ConfigDict(frozen=True)

    x: tuple[float, ...]
    y: tuple[float, ...]

    @model_validator(mode="after")
    def _check(self) -> IsotonicMap:
        if not self.x or len(self.x) != len(self.y):
            raise ValueError("x and y must be non-empty and of equal length")
        if any(b <= a for a, b in zip(self.x, self.x[1:], strict=False)):
            raise ValueError("x must be strictly increasing")
        if any(b < a for a, b in zip(self.y, self.y[1:], strict=False)):
            raise ValueError("y must be non-decreasing")
        return self

    def __call__(self, value: float) -> float:
        """The mapped value (linear between knots, the end values outside them)."""
        return float(np.interp(value, self.x, self.y))

    def many(self, values: Sequence[float]) -> list[float]:
        """:meth:`__call__` over a sequence."""
        return [float(v) for v in np.interp(np.asarray(values, dtype=float), self.x, self.y)]


def isotonic_fit(
    x: Sequence[float], y: Sequence[float], *, weights: Sequence[float] | None = None
) -> IsotonicMap:
    """The least-squares non-decreasing fit of ``y`` on ``x`` (see the module docs).

    Pairs where either value is missing (None, NaN) are left out; at least one must remain.
    """
    w_in = [1.0] * len(x) if weights is None else list(weights)
    if not len(x) == len(y) == len(w_in):
        raise DataError(f"isotonic_fit: x, y and weights differ in length ({len(x)}, {len(y)})")
    rows = [
        (float(a), float(b), float(w))
        for a, b, w in zip(x, y, w_in, strict=True)
        if not (is_missing(a) or is_missing(b))
    ]
    if not rows:
        raise DataError("isotonic_fit: no pair with both a score and a label")
    if any(w <= 0 or math.isnan(w) for _, _, w in rows):
        raise DataError("isotonic_fit: weights must be positive")
    rows.sort(key=lambda r: r[0])
    # pool equal scores first: one block per distinct x
    xs: list[float] = []
    sums: list[float] = []
    wts: list[float] = []
    for a, b, w in rows:
        if xs and a == xs[-1]:
            sums[-1] += b * w
            wts[-1] += w
        else:
            xs.append(a)
            sums.append(b * w)
            wts.append(w)
    # pool adjacent violators: blocks of (weighted sum, weight, how many knots)
    blocks: list[list[float]] = []
    for s, w in zip(sums, wts, strict=True):
        blocks.append([s, w, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s2, w2, n2 = blocks.pop()
            blocks[-1][0] += s2
            blocks[-1][1] += w2
            blocks[-1][2] += n2
    ys: list[float] = []
    for s, w, n in blocks:
        ys += [s / w] * int(n)
    return IsotonicMap(x=tuple(xs), y=tuple(ys))


def paired_gain(
    metric: Callable[[Sequence[Any], Sequence[Any]], float],
    before: Sequence[Any],
    after: Sequence[Any],
    truth: Sequence[Any],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """``metric(after, truth) - metric(before, truth)`` with a paired bootstrap interval.

    Items where ``before``, ``after`` or ``truth`` is missing are left out of both sides.

    >>> from jurist.metrics import accuracy
    >>> truth = [1, 0, 1, 1, 1, 1] * 3
    >>> g = paired_gain(accuracy, [0, 0, 1, 1, 0, 1] * 3, truth, truth)
    >>> print(g)  # the gain of 1/3 in accuracy, and its interval
    0.3333 [0.1111, 0.5556]
    """
    if not len(before) == len(after) == len(truth):
        raise DataError(
            f"paired_gain: before, after and truth differ in length "
            f"({len(before)}, {len(after)}, {len(truth)})"
        )
    keep = [
        i
        for i in range(len(truth))
        if not (is_missing(before[i]) or is_missing(after[i]) or is_missing(truth[i]))
    ]
    b = np.array([before[i] for i in keep], dtype=object)
    a = np.array([after[i] for i in keep], dtype=object)
    t = np.array([truth[i] for i in keep], dtype=object)

    def statistic(idx: Any) -> float:
        return metric(list(a[idx]), list(t[idx])) - metric(list(b[idx]), list(t[idx]))

    value = statistic(np.arange(len(keep)))
    if len(keep) < 3 or math.isnan(value):
        return Estimate(value=value, confidence=confidence)
    low, high = bootstrap_interval(
        statistic,
        len(keep),
        n_resamples=n_resamples,
        confidence=confidence,
        method="percentile",
        seed=seed,
        batched=_batched_gain(metric, list(b), list(a), list(t)),
    )
    return Estimate(
        value=value,
        low=None if math.isnan(low) else low,
        high=None if math.isnan(high) else high,
        confidence=confidence,
    )


def _batched_gain(
    metric: Callable[[Sequence[Any], Sequence[Any]], float],
    before: list[Any],
    after: list[Any],
    truth: list[Any],
) -> Batched | None:
    """The gain on every resample at once, where ``metric`` has a kernel for both sides."""
    on_after, on_before = batched(metric, after, truth), batched(metric, before, truth)
    if on_after is None or on_before is None:
        return None
    a, b = on_after, on_before

    def gain(idx: IntArray) -> npt.NDArray[np.float64]:
        return a(idx) - b(idx)

    return gain
