"""Bradley-Terry scores with bootstrap intervals, as Arena-Hard-Auto reports them.

Each model ``m`` gets a strength ``r_m``; model ``a`` beats ``b`` with probability
``logistic(r_a - r_b)``, a tie counting half a win for each side. The strengths are the
maximum-likelihood fit over all battles (a logistic regression without intercept, as
Arena-Hard-Auto fits it), with the baseline's strength fixed at 0. A model's **score** is
its predicted win rate against the baseline on the 0-100 scale, ``100 * logistic(r_m)``
(the baseline scores 50), and its interval the percentile bootstrap interval of that score
over ``bootstrap`` resamples of the battles (2.5 and 97.5 percentiles for ``level=0.95``).
``rating`` is the strength on the Elo scale, ``1000 + 400 * r_m / ln(10)``.

**Style control** (``style``): per-battle feature differences between the two answers
(``model_a``'s minus ``model_b``'s), e.g. Arena-Hard-Auto's length term
``(len_a - len_b) / (len_a + len_b)`` and markdown header / list / bold densities. Each
feature is standardised (mean 0, sample std 1) and fitted jointly with the strengths, so
scores are what remains once style is accounted for; the features' coefficients (per
standard deviation, on the logit scale) are reported with their intervals.

>>> battles = [("gpt", "base", "model_a")] * 30 + [("gpt", "base", "model_b")] * 10
>>> res = bradley_terry(battles, baseline="base", bootstrap=200)
>>> round(res["gpt"].score, 6), round(res["base"].score, 6)
(75.0, 50.0)
>>> lo, hi = res["gpt"].lower, res["gpt"].upper
>>> bool(60 < lo < 75 < hi < 90)
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError
from jurist.metrics._battles import Battles, read_battles
from jurist.metrics._bt_fit import fit_bradley_terry, fit_bradley_terry_many, model_design
from jurist.metrics._glm import logistic
from jurist.metrics._winrate import as_float_array

__all__ = [
    "BradleyTerryResult",
    "BradleyTerryRow",
    "StyleCoefficient",
    "bootstrap_interval",
    "bradley_terry",
    "win_rate_from_ratings",
]

FloatArray = npt.NDArray[np.float64]
ELO_PER_LOGIT = 400.0 / math.log(10.0)


def bootstrap_interval(
    samples: Sequence[float] | npt.ArrayLike, level: float = 0.95
) -> tuple[float, float]:
    """The percentile interval of bootstrap ``samples``: their ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles, linearly interpolated (numpy's and pandas' default).

    >>> bootstrap_interval([0, 1, 2, 3, 4], level=0.5)
    (1.0, 3.0)
    """
    arr = as_float_array(samples, "samples")
    if arr.size == 0:
        raise DataError("samples is empty: an interval needs at least one bootstrap sample")
    if not 0.0 < level < 1.0:
        raise DataError(f"level must lie in (0, 1), got {level!r}")
    q = (1.0 - level) / 2.0
    low, high = np.quantile(arr, [q, 1.0 - q])
    return float(low), float(high)


def win_rate_from_ratings(
    ratings: Mapping[str, float], baseline: str, *, scale: float = 400.0, base: float = 10.0
) -> dict[str, float]:
    """Each model's predicted win rate (0-100) against ``baseline`` from Elo-scale ratings:
    ``100 / (1 + base ** ((r_baseline - r_m) / scale))``, how Arena-Hard-Auto turns its
    Bradley-Terry ratings into scores.

    >>> {m: round(v, 2) for m, v in win_rate_from_ratings({"a": 1200.0, "b": 1000.0}, "b").items()}
    {'a': 75.97, 'b': 50.0}
    """
    if baseline not in ratings:
        raise DataError(f"baseline {baseline!r} has no rating (models: {sorted(ratings)})")
    ref = ratings[baseline]
    return {m: 100.0 / (1.0 + base ** ((ref - r) / scale)) for m, r in ratings.items()}


class BradleyTerryRow(BaseModel):
    """One model's score (win rate against the baseline, 0-100) with its interval."""

    model_config = ConfigDict(frozen=True)

    model: str
    score: float
    lower: float
    upper: float
    rating: float
    n_battles: int


class StyleCoefficient(BaseModel):
    """A style feature's coefficient (logit per standard deviation) with its interval."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: float
    lower: float
    upper: float


class BradleyTerryResult(BaseModel):
    """Rows sorted by score, best first. ``unbounded`` names models whose strength against
    the baseline has no finite estimate (e.g. a model that never loses, or never wins): their
    score is the limit the fit heads to (100 or 0) and ``converged`` is false.
    ``bootstrap_unconverged`` counts resamples with such a model."""

    model_config = ConfigDict(frozen=True)

    rows: list[BradleyTerryRow]
    baseline: str
    level: float
    bootstrap: int
    style: list[StyleCoefficient]
    n_battles: int
    converged: bool
    unbounded: list[str]
    bootstrap_unconverged: int

    def __getitem__(self, model: str) -> BradleyTerryRow:
        for row in self.rows:
            if row.model == model:
                return row
        raise KeyError(f"no model {model!r}; scored: {[r.model for r in self.rows]}")

    def to_pandas(self) -> Any:
        """The rows as a DataFrame (model, score, lower, upper, rating, n_battles)."""
        import pandas as pd

        return pd.DataFrame([row.model_dump() for row in self.rows])


def _style_matrix(style: Any, n: int) -> tuple[list[str], FloatArray]:
    if isinstance(style, Mapping):
        names = [str(k) for k in style]
        cols = [as_float_array(style[k], f"style[{k!r}]") for k in style]
    else:
        arr = np.asarray(style, dtype=float)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise DataError(f"style must be a mapping of features or a 2-D array, got {arr.shape}")
        names = [f"style_{j}" for j in range(arr.shape[1])]
        cols = [as_float_array(arr[:, j], f"style[:, {j}]") for j in range(arr.shape[1])]
    if not cols:
        raise DataError("style has no features")
    out = np.empty((n, len(cols)))
    for j, (name, col) in enumerate(zip(names, cols, strict=True)):
        if col.size != n:
            raise DataError(f"style feature {name!r} has {col.size} values, there are {n} battles")
        sd = float(col.std(ddof=1)) if n > 1 else 0.0
        if not sd > 0:
            raise DataError(f"style feature {name!r} does not vary across battles")
        out[:, j] = (col - col.mean()) / sd
    return names, out


def _unbounded(b: Battles, counts: FloatArray, base: int) -> list[str]:
    """Models outside the baseline's strongly connected class of the "beat or tied" graph:
    their strength relative to the baseline has no finite maximum-likelihood estimate."""
    m = len(b.models)
    w = b.weight * counts
    win = np.zeros((m, m), dtype=bool)
    np.logical_or.at(win, (b.a, b.b), (w * b.outcome) > 0)
    np.logical_or.at(win, (b.b, b.a), (w * (1.0 - b.outcome)) > 0)
    present = np.zeros(m, dtype=bool)
    present[b.a[w > 0]] = True
    present[b.b[w > 0]] = True

    def reach(adj: npt.NDArray[np.bool_], start: int) -> npt.NDArray[np.bool_]:
        seen = np.zeros(m, dtype=bool)
        seen[start] = True
        frontier = seen.copy()
        while frontier.any():
            frontier = adj[frontier].any(axis=0) & ~seen
            seen |= frontier
        return seen

    both = reach(win, base) & reach(win.T, base)
    return [b.models[k] for k in range(m) if present[k] and not both[k]]


def _fit(
    b: Battles,
    counts: FloatArray,
    z: FloatArray | None,
    base: int,
    start: FloatArray | None,
    pooled: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
) -> tuple[FloatArray, bool]:
    """Strengths (baseline 0, others in model order) and style coefficients for one sample
    (``counts``: each battle's multiplicity; ``pooled``: the ordered pairs and each battle's
    pair, computed once)."""
    m = len(b.models)
    w = b.weight * counts
    if z is None:  # pool the battles per ordered pair: the same likelihood, far fewer rows
        pairs, inv = pooled
        tot = np.bincount(inv, w, minlength=pairs.size).astype(float)
        won = np.bincount(inv, w * b.outcome, minlength=pairs.size).astype(float)
        use = tot > 0
        return fit_bradley_terry(
            pairs[use] // m, pairs[use] % m, won[use] / tot[use], tot[use], None, m, base, start
        )
    use = w > 0
    # a model absent from a resample has no rows: the jitter in the Newton step keeps its
    # strength where it started (the full-data estimate)
    return fit_bradley_terry(b.a[use], b.b[use], b.outcome[use], w[use], z[use], m, base, start)


def _fit_pooled_many(
    b: Battles,
    counts: FloatArray,
    base: int,
    start: FloatArray,
    pooled: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """:func:`_fit` without style for each row of ``counts`` (one resample a row), all at
    once: each resample's battles pooled per ordered pair, a pair it lacks weighing 0.
    (With style every battle is a row of its own; there the structured one-at-a-time
    Newton step of :func:`fit_bradley_terry` is cheaper than a dense one for all.)"""
    m = len(b.models)
    pairs, inv = pooled
    w = b.weight * counts  # resamples x battles
    tot = np.stack([np.bincount(inv, row, minlength=pairs.size) for row in w])
    won = np.stack([np.bincount(inv, row * b.outcome, minlength=pairs.size) for row in w])
    has = tot > 0
    y = np.divide(won, tot, out=np.full(tot.shape, 0.5), where=has)
    design = model_design(pairs // m, pairs % m, m, base)
    return fit_bradley_terry_many(design, y, np.where(has, tot, 0.0), start)


def bradley_terry(
    battles: Any,
    *,
    baseline: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    style: Mapping[str, Sequence[float] | npt.ArrayLike] | npt.ArrayLike | None = None,
    level: float = 0.95,
) -> BradleyTerryResult:
    """Bradley-Terry scores against ``baseline`` with percentile bootstrap intervals.

    ``battles``: see :mod:`jurist.metrics._battles` (a DataFrame or list of dicts with
    ``model_a``, ``model_b``, ``winner`` and an optional ``weight``, or 3-tuples).
    ``baseline``: the model every score is a win rate against; by default the model in the
    most battles (the baseline of an Arena-Hard-style design), ties broken by name.
    ``bootstrap``: resamples of the battles (0 for none: the interval is then the score).
    ``style``: per-battle feature differences for style control (see the module docstring).
    """
    b = read_battles(battles)
    n = len(b)
    if bootstrap < 0:
        raise DataError(f"bootstrap must be >= 0, got {bootstrap}")
    if not 0.0 < level < 1.0:
        raise DataError(f"level must lie in (0, 1), got {level!r}")
    counts_per_model = np.bincount(b.a, minlength=len(b.models)) + np.bincount(
        b.b, minlength=len(b.models)
    )
    if baseline is None:
        baseline = min(b.models, key=lambda m: (-counts_per_model[b.models.index(m)], m))
    elif baseline not in b.models:
        raise DataError(f"baseline {baseline!r} is in no battle (models: {b.models})")
    base = b.models.index(baseline)
    names, z = _style_matrix(style, n) if style is not None else ([], None)
    ones = np.ones(n)
    pairs, inv = np.unique(b.a * len(b.models) + b.b, return_inverse=True)
    pooled = (pairs.astype(np.int64), inv.astype(np.int64).ravel())
    coef, converged = _fit(b, ones, z, base, None, pooled)
    unbounded = _unbounded(b, ones, base)
    m = len(b.models)
    rng = np.random.default_rng(seed)
    samples = np.empty((bootstrap, coef.size))
    bad = 0
    if z is None and bootstrap:  # every resample's pooled fit at once
        counts = np.stack(
            [np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(bootstrap)]
        )
        samples, ok = _fit_pooled_many(b, counts.astype(float), base, coef, pooled)
        bad = int((~ok).sum())
    for r in range(bootstrap if z is not None else 0):  # a row per battle: one at a time
        counts_r = np.bincount(rng.integers(0, n, n), minlength=n).astype(float)
        samples[r], ok_r = _fit(b, counts_r, z, base, coef, pooled)
        bad += not ok_r
    strengths = np.insert(coef[: m - 1], base, 0.0)
    boot_strengths = np.insert(samples[:, : m - 1], base, 0.0, axis=1)
    scores = 100.0 * logistic(strengths)
    boot_scores = 100.0 * logistic(boot_strengths)
    rows = []
    for k, model in enumerate(b.models):
        low, high = (
            bootstrap_interval(boot_scores[:, k], level) if bootstrap else (scores[k], scores[k])
        )
        rows.append(
            BradleyTerryRow(
                model=model,
                score=float(scores[k]),
                lower=low,
                upper=high,
                rating=1000.0 + ELO_PER_LOGIT * float(strengths[k]),
                n_battles=int(counts_per_model[k]),
            )
        )
    rows.sort(key=lambda row: (-row.score, row.model))
    coefs = []
    for j, name in enumerate(names):
        value = float(coef[m - 1 + j])
        low, high = (
            bootstrap_interval(samples[:, m - 1 + j], level) if bootstrap else (value, value)
        )
        coefs.append(StyleCoefficient(name=name, value=value, lower=low, upper=high))
    return BradleyTerryResult(
        rows=rows,
        baseline=baseline,
        level=level,
        bootstrap=bootstrap,
        style=coefs,
        n_battles=n,
        converged=converged and not unbounded,
        unbounded=unbounded,
        bootstrap_unconverged=bad,
    )
