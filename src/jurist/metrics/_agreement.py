"""``agreement(judge, human, kind=...)``: the usual figures for one pair of series, with CIs.

``kind`` says what the labels are:

- ``"nominal"``: categories. Accuracy, Cohen's kappa, Krippendorff's alpha (nominal).
- ``"ordinal"``: ordered categories (numbers). Adds linear and quadratic weighted kappa,
  Spearman, Kendall tau-b, and alpha at the ordinal level.
- ``"interval"``: numbers on a scale. Pearson, Spearman, Kendall tau-b, RMSE, MAE and
  alpha at the interval level. RMSE / MAE only mean something when both series use the
  same scale.

Pairs with a missing value are left out and counted in ``dropped``.

>>> res = agreement([1, 2, 3, 4, 5, None], [1, 2, 3, 5, 5, 3], kind="ordinal", ci=False)
>>> res.n, res.dropped, round(res["quadratic_kappa"].value, 4)
(5, 1, 0.9565)

Confidence intervals come from :func:`bootstrap_ci` (numpy; the same draws and interval as
``scipy.stats.bootstrap`` with ``rng=np.random.default_rng(seed)``, which the tests check): items
are resampled in pairs (judge score with its label), ``n_resamples`` times, with a
fixed ``seed`` so the interval is reproducible. The measures here are computed on all the
resamples at once (:mod:`jurist.metrics._batched`); any other metric is called once a
resample. The percentile method is the default
because it never fails on the ties and degenerate resamples small label sets produce;
``method="BCa"`` is available.

>>> est = bootstrap_ci(accuracy, [1, 1, 0, 1, 0, 1, 1, 1], [1, 1, 0, 1, 1, 1, 0, 1], seed=1)
>>> est.value, est.low <= est.value <= est.high
(0.75, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError
from jurist.metrics._batched import alpha_kernel, batched, kappa_kernel, register
from jurist.metrics._measures import (
    accuracy,
    cohen_kappa,
    kendall_tau,
    krippendorff_alpha,
    mae,
    paired,
    pearson,
    rmse,
    spearman,
)
from jurist.metrics._stats import bootstrap_interval

__all__ = ["Agreement", "Estimate", "Kind", "agreement", "bootstrap_ci", "metric_functions"]


class Estimate(BaseModel):
    """A metric's value with its bootstrap interval (``low``/``high``: ``None`` if not computed)."""

    model_config = ConfigDict(frozen=True)

    value: float
    low: float | None = None
    high: float | None = None
    confidence: float | None = None

    def __str__(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.value:.4f}"
        return f"{self.value:.4f} [{self.low:.4f}, {self.high:.4f}]"


def bootstrap_ci(
    metric: Callable[[Sequence[Any], Sequence[Any]], float],
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: Literal["percentile", "basic", "BCa"] = "percentile",
    seed: int = 0,
) -> Estimate:
    """``metric(a, b)`` with a paired bootstrap interval."""
    xs, ys = paired(a, b)
    value = metric(xs, ys)
    if len(xs) < 3 or math.isnan(value):
        return Estimate(value=value, confidence=confidence)
    x_arr, y_arr = np.array(xs, dtype=object), np.array(ys, dtype=object)

    def statistic(idx: Any) -> float:
        return metric(list(x_arr[idx]), list(y_arr[idx]))

    low, high = bootstrap_interval(
        statistic,
        len(xs),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        batched=batched(metric, xs, ys) if method != "BCa" else None,
    )
    return Estimate(
        value=value,
        low=None if math.isnan(low) else low,
        high=None if math.isnan(high) else high,
        confidence=confidence,
    )


Kind = Literal["nominal", "ordinal", "interval"]
"""The level of measurement of the scores, which picks the agreement statistics."""
Metric = Callable[[Sequence[Any], Sequence[Any]], float]


def _alpha(level: Literal["nominal", "ordinal", "interval"]) -> Metric:
    def alpha(a: Sequence[Any], b: Sequence[Any]) -> float:
        return krippendorff_alpha([list(a), list(b)], level=level)

    register(alpha, alpha_kernel(level))
    return alpha


def _kappa(weights: Literal["linear", "quadratic"] | None) -> Metric:
    def kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
        return cohen_kappa(a, b, weights=weights)

    register(kappa, kappa_kernel(weights))
    return kappa


_METRICS: dict[str, list[tuple[str, Metric]]] = {
    "nominal": [
        ("accuracy", accuracy),
        ("cohen_kappa", _kappa(None)),
        ("krippendorff_alpha", _alpha("nominal")),
    ],
    "ordinal": [
        ("accuracy", accuracy),
        ("cohen_kappa", _kappa(None)),
        ("linear_kappa", _kappa("linear")),
        ("quadratic_kappa", _kappa("quadratic")),
        ("spearman", spearman),
        ("kendall_tau", kendall_tau),
        ("krippendorff_alpha", _alpha("ordinal")),
    ],
    "interval": [
        ("pearson", pearson),
        ("spearman", spearman),
        ("kendall_tau", kendall_tau),
        ("rmse", rmse),
        ("mae", mae),
        ("krippendorff_alpha", _alpha("interval")),
    ],
}


class Agreement(BaseModel):
    """The figures of one comparison: ``metrics[name]`` is an :class:`Estimate`."""

    model_config = ConfigDict(frozen=True)

    kind: Kind
    n: int
    dropped: int
    metrics: dict[str, Estimate]

    def __getitem__(self, name: str) -> Estimate:
        return self.metrics[name]

    def values(self) -> dict[str, float]:
        """Just the point values."""
        return {k: v.value for k, v in self.metrics.items()}


def metric_functions(kind: Kind) -> list[tuple[str, Metric]]:
    """The ``(name, metric(predicted, truth))`` pairs :func:`agreement` reports for ``kind``."""
    if kind not in _METRICS:
        raise ConfigError(f"unknown kind {kind!r}; use one of {sorted(_METRICS)}")
    return list(_METRICS[kind])


def agreement(
    judge: Sequence[Any],
    human: Sequence[Any],
    *,
    kind: Kind = "ordinal",
    ci: bool = True,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Agreement:
    """Compare a judge's values with human labels (see the module docs for ``kind``)."""
    if kind not in _METRICS:
        raise ConfigError(f"unknown kind {kind!r}; use one of {sorted(_METRICS)}")
    xs, ys = paired(judge, human)
    if kind == "ordinal" and len({type(v) for v in [*xs, *ys]} - {int, float}) > 0:
        raise ConfigError("kind='ordinal' needs numeric labels; use kind='nominal' for text")
    metrics: dict[str, Estimate] = {}
    for name, fn in _METRICS[kind]:
        if ci:
            metrics[name] = bootstrap_ci(
                fn, xs, ys, n_resamples=n_resamples, confidence=confidence, seed=seed
            )
        else:
            metrics[name] = Estimate(value=fn(xs, ys))
    return Agreement(kind=kind, n=len(xs), dropped=len(judge) - len(xs), metrics=metrics)
