"""Check a selective judge's (or a cascade's) guarantee on labelled data, offline.

:func:`guarantee_study` splits the labelled items at random many times into a calibration
half and a test half, fits the thresholds on the first (:func:`~jurist.trust.fit_cascade`;
one tier is one judge and :func:`~jurist.metrics.selective_threshold`) and measures the
agreement of the items kept on the second. The guarantee says: in at least ``1 - delta``
of the splits the kept items' *true* agreement is ``>= target``. What a test half shows is
that agreement plus its own sampling noise: a test half keeping ``m`` items whose true
agreement is exactly ``target`` shows less than ``target`` about half of the time. So the
study reports, beside the raw share of splits at or above the target:

- ``noise_se``: the mean standard error of a test half's agreement at the target,
  ``sqrt(target (1 - target) / m)``;
- ``pass_within_noise``: the share of splits whose held-out agreement is at least
  ``target - z * se`` (``z`` the one-sided ``1 - delta`` normal quantile): below that, the
  shortfall is more than the test half's noise explains;
- ``boundary_pass``: the raw share a judge whose kept items agree at exactly ``target``
  would show with these test sizes (``P(Binomial(m, target) >= target m)``, averaged);
- ``population_pass``: a check without test noise: calibration sets drawn with
  replacement from all the items, each threshold's agreement taken over all of them (the
  items are then the whole population, so that agreement is the true one).

A split where no threshold is certified keeps nothing and breaks no promise; it counts as
a pass and ``certified`` says how often that happened (a procedure that never certifies
keeps the guarantee trivially: look at ``coverage``).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> conf = rng.uniform(0.5, 1.0, 600)
>>> ok = rng.uniform(size=600) < conf
>>> s = guarantee_study([conf], [ok], target=0.85, delta=0.1, splits=50, seed=1)
>>> s.pass_within_noise >= 0.9, round(s.coverage, 2)
(True, 0.51)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict

from jurist.metrics import binomial_cdf
from jurist.trust._fit import CascadeFit, DeltaSplit, fit_cascade, replay_cascade

__all__ = ["GuaranteeStudy", "guarantee_study"]


class GuaranteeStudy(BaseModel):
    """What :func:`guarantee_study` measured (see the module docs); per-split means are
    over every split, agreement means over the splits that kept items."""

    model_config = ConfigDict(frozen=True)

    target: float
    delta: float
    splits: int
    n_calibration: int
    n_test: int
    certified: float
    coverage: float
    coverage_q10: float
    coverage_q90: float
    agreement: float | None
    pass_raw: float
    noise_se: float | None
    pass_within_noise: float
    boundary_pass: float | None
    population_pass: float
    population_coverage: float
    tier_coverage: tuple[float, ...]
    tier_reached: tuple[float, ...]


def guarantee_study(
    confidence: Sequence[ArrayLike],
    correct: Sequence[ArrayLike],
    *,
    target: float,
    delta: float,
    splits: int = 200,
    seed: int = 0,
    min_selected: int = 30,
    resolution: float | None = 0.001,
    delta_split: DeltaSplit = "union",
) -> GuaranteeStudy:
    """Random 50/50 calibration/test splits of labelled items (see the module docs).

    ``confidence`` and ``correct`` are per tier (one tier: a single judge), one value per
    item, as :func:`~jurist.trust.fit_cascade` takes them.
    """
    conf = [np.asarray(c, dtype=float).ravel() for c in confidence]
    ok = [np.asarray(c).ravel().astype(bool) for c in correct]
    n = conf[0].size
    half = n // 2
    rng = np.random.default_rng(seed)

    def fit(rows: NDArray[np.intp]) -> CascadeFit:
        return fit_cascade(
            [c[rows] for c in conf],
            [o[rows] for o in ok],
            target=target,
            delta=delta,
            min_selected=min_selected,
            resolution=resolution,
            delta_split=delta_split,
        )

    z = NormalDist().inv_cdf(1 - delta)
    coverage, agreement, ses, within, boundary, raw, certified = [], [], [], [], [], [], 0
    tier_cov = np.zeros(len(conf))
    tier_reach = np.zeros(len(conf))
    for _ in range(splits):
        order = rng.permutation(n)
        cal, test = order[:half], order[half:]
        fitted = fit(cal)
        certified += any(t is not None for t in fitted.thresholds)
        out = replay_cascade(
            [c[test] for c in conf], fitted.thresholds, correct=[o[test] for o in ok]
        )
        coverage.append(out.coverage)
        tier_cov += [t.coverage for t in out.tiers]
        tier_reach += [t.calls / out.n for t in out.tiers]
        kept = out.n - out.abstained
        if out.agreement is None or kept == 0:
            raw.append(True)
            within.append(True)
            continue
        se = math.sqrt(target * (1 - target) / kept)
        agreement.append(out.agreement)
        ses.append(se)
        raw.append(out.agreement >= target)
        within.append(out.agreement >= target - z * se)
        need = math.ceil(target * kept - 1e-9)  # P(Bin(m, target) >= need)
        boundary.append(1.0 - (binomial_cdf(need - 1, kept, target) if need > 0 else 0.0))
    pop_pass, pop_cov = [], []
    for _ in range(splits):
        out = replay_cascade(conf, fit(rng.integers(0, n, half)).thresholds, correct=ok)
        pop_cov.append(out.coverage)
        pop_pass.append(out.agreement is None or out.agreement >= target)
    cov = np.array(coverage)
    return GuaranteeStudy(
        target=target,
        delta=delta,
        splits=splits,
        n_calibration=half,
        n_test=n - half,
        certified=certified / splits,
        coverage=float(cov.mean()),
        coverage_q10=float(np.quantile(cov, 0.1)),
        coverage_q90=float(np.quantile(cov, 0.9)),
        agreement=float(np.mean(agreement)) if agreement else None,
        pass_raw=float(np.mean(raw)),
        noise_se=float(np.mean(ses)) if ses else None,
        pass_within_noise=float(np.mean(within)),
        boundary_pass=float(np.mean(boundary)) if boundary else None,
        population_pass=float(np.mean(pop_pass)),
        population_coverage=float(np.mean(pop_cov)),
        tier_coverage=tuple(float(x) for x in tier_cov / splits),
        tier_reached=tuple(float(x) for x in tier_reach / splits),
    )
