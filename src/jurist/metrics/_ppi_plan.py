"""Which items to label, and how many labels a target width needs.

A weighted PPI estimate's variance is smallest when an item's chance of a label grows
with how far its label may fall from the judge's prediction (Zrnic and Candes, 2024:
``pi_i`` proportional to the residual's standard deviation). :func:`residual_spread`
says how far, per item: from the labels so far when there are enough (the squared
residual ``(Y - lam f)^2`` averaged within bins of the judge's score, shrunk toward the
overall mean), else from the judge's own uncertainty (``f (1 - f)`` for a 0-1 score) and,
when given, the disagreement between several judges. :func:`inclusion_probabilities`
turns the spread into probabilities that sum to the number of labels asked for, with a
uniform share so no item's probability is near zero (a weight ``1 / pi`` stays bounded);
:func:`draw_plan` draws exactly that many items with those probabilities (systematic
sampling over a random order) and lists them in random order, so the first ``k`` of a
plan are themselves a random part of it.

>>> import numpy as np
>>> pi = inclusion_probabilities(np.array([0.1, 0.5, 0.5, 0.1, 0.3]), 2, uniform_share=0.2)
>>> float(round(pi.sum(), 6)), bool(pi[1] > pi[0])
(2.0, True)
>>> sorted(draw_plan(pi, np.random.default_rng(0)).tolist()) == sorted(set(
...     draw_plan(pi, np.random.default_rng(0)).tolist()))
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from jurist.errors import ConfigError
from jurist.metrics._ppi_core import uniform_ppi

__all__ = [
    "draw_plan",
    "inclusion_probabilities",
    "labels_for_width",
    "residual_spread",
]

_BINS = 8
_SHRINK = 5.0
_LEAST_FITTED = 30


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def residual_spread(
    judge: Sequence[float | None],
    labels: Sequence[float | None] | None = None,
    *,
    disagreement: Sequence[float | None] | None = None,
) -> tuple[np.ndarray, str]:
    """Per item, how far its label may fall from the judge's prediction, and where that
    came from (``labels so far``, ``judge uncertainty``, ``judge disagreement``)."""
    f = _array(judge)
    if np.isnan(f).all():
        raise ConfigError("the judge scored no item: nothing to plan from")
    f = np.where(np.isnan(f), np.nanmean(f), f)
    y = _array(labels) if labels is not None else np.full(f.size, np.nan)
    lab = ~np.isnan(y)
    if lab.sum() >= _LEAST_FITTED and np.ptp(y[lab]) > 0:
        _, _, lam = uniform_ppi(y[lab][None], f[lab][None], f)
        r = y[lab] - lam[0] * f[lab]
        r2 = (r - r.mean()) ** 2
        edges = np.unique(np.quantile(f, np.linspace(0, 1, _BINS + 1)[1:-1]))
        bins_all, bins_lab = np.digitize(f, edges), np.digitize(f[lab], edges)
        overall = float(r2.mean())
        per_bin = np.array(
            [
                (r2[bins_lab == b].sum() + _SHRINK * overall) / ((bins_lab == b).sum() + _SHRINK)
                for b in range(edges.size + 1)
            ]
        )
        return np.sqrt(per_bin[bins_all]), "labels so far"
    if disagreement is not None:
        d = _array(disagreement)
        d = np.where(np.isnan(d), np.nanmax(d) if not np.isnan(d).all() else 1.0, d)
        return d + max(float(np.mean(d)), 1e-6) * 0.25, "judge disagreement"
    if f.min() >= 0 and f.max() <= 1:
        return np.sqrt(f * (1 - f)) + 0.05, "judge uncertainty"
    return np.ones(f.size), "uniform (no labels yet, and the judge's scores are not 0-1)"


def inclusion_probabilities(
    spread: np.ndarray, n: int, *, uniform_share: float = 0.3, exclude: np.ndarray | None = None
) -> np.ndarray:
    """Probabilities proportional to ``spread`` mixed with a uniform share, summing to
    ``n`` and capped at 1; items in ``exclude`` (already labelled) get 0."""
    if not 0 <= uniform_share <= 1:
        raise ConfigError(f"uniform_share must be in [0, 1], got {uniform_share}")
    s = np.asarray(spread, dtype=float).copy()
    open_ = np.ones(s.size, dtype=bool) if exclude is None else ~exclude
    if n < 1 or n > int(open_.sum()):
        raise ConfigError(f"cannot plan {n} labels among {int(open_.sum())} unlabelled items")
    s = np.where(open_, np.clip(s, 1e-12, None), 0.0)
    share = (1 - uniform_share) * s / s.sum() + uniform_share * open_ / open_.sum()
    pi = np.zeros(s.size)
    capped = np.zeros(s.size, dtype=bool)
    for _ in range(s.size):
        free = open_ & ~capped
        pi[free] = share[free] * (n - capped.sum()) / share[free].sum()
        new = free & (pi > 1)
        if not new.any():
            break
        capped |= new
        pi[capped] = 1.0
    return np.minimum(pi, 1.0)


def draw_plan(pi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``round(sum(pi))`` items, item ``i`` chosen with probability ``pi[i]``
    (systematic sampling over a random order), listed in random order."""
    order = rng.permutation(pi.size)
    cum = np.cumsum(pi[order])
    u = rng.random()
    hits = np.floor(cum - u) - np.floor(np.concatenate([[0.0], cum[:-1]]) - u)
    chosen = order[hits > 0]
    return rng.permutation(chosen)


def labels_for_width(
    judge: Sequence[float | None],
    labels: Sequence[float | None],
    width: float,
    *,
    level: float = 0.95,
) -> tuple[int | None, int | None]:
    """How many uniformly drawn labels give a ``level`` interval ``width`` wide: with the
    judge (PPI++, the power tuned on the labels so far) and with the labels alone, from
    the spread of the labels so far. ``None`` when even every item labelled would not."""
    if width <= 0:
        raise ConfigError(f"a target width must be above 0, got {width}")
    f = _array(judge)
    f = np.where(np.isnan(f), np.nanmean(f), f)
    y = _array(labels)
    lab = ~np.isnan(y)
    if lab.sum() < 2:
        raise ConfigError("at least two labels are needed to say how many more a width needs")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    half2 = (width / (2 * z)) ** 2
    _, _, lam = uniform_ppi(y[lab][None], f[lab][None], f)
    resid = y[lab] - lam[0] * f[lab]
    floor = lam[0] ** 2 * float(f.var(ddof=1)) / f.size
    alone = float(y[lab].var(ddof=1)) / half2
    with_judge = float(resid.var(ddof=1)) / (half2 - floor) if half2 > floor else math.inf
    best = min(with_judge, alone)
    cap = f.size

    def fit(x: float) -> int | None:
        return None if x > cap else max(2, math.ceil(x))

    return fit(best), fit(alone)
