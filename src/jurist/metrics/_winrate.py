"""``win_rate(preference)``: how often a system beats a baseline, as AlpacaEval reports it.

``preference[i]`` is the probability that the system's answer to item ``i`` beats the
baseline's: ``1`` a win, ``0`` a loss, ``0.5`` a tie, or any soft value in between (the
expected verdict from a judge's token probabilities, or the share of several verdicts).
The win rate is their mean on the 0-100 scale and its standard error is the sample
standard deviation of the preferences over ``sqrt(n)`` (also on the 0-100 scale), the
figures of AlpacaEval's leaderboard (``win_rate``, ``standard_error``).

>>> wr = win_rate([1, 0, 0.5, 1, 0.75])
>>> round(wr.value, 2), round(wr.standard_error, 2), wr.n, wr.n_wins, wr.n_draws, wr.n_losses
(65.0, 18.71, 5, 3, 1, 1)

AlpacaEval stores its preference in ``[1, 2]`` (``1`` the baseline wins, ``2`` the model
wins, ``1.5`` a draw) and writes ``0`` for a draw in old files;
:func:`preference_from_alpaca` maps those to this module's ``[0, 1]``:

>>> preference_from_alpaca([1.0, 2.0, 1.5, 0.0, 1.25]).tolist()
[0.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError

__all__ = ["WinRate", "as_float_array", "preference_from_alpaca", "win_rate"]

FloatArray = npt.NDArray[np.float64]


class WinRate(BaseModel):
    """A win rate against a baseline on the 0-100 scale.

    ``value`` is the mean preference times 100 (ties count half, soft preferences their
    value); ``standard_error`` the standard error of that mean, also times 100 (``nan``
    with a single item). ``n_wins`` / ``n_losses`` count the items whose preference is above
    / below 0.5 and ``n_draws`` those exactly at 0.5, so they add up to ``n``.
    """

    model_config = ConfigDict(frozen=True)

    value: float
    standard_error: float
    n: int
    n_wins: int
    n_draws: int
    n_losses: int


def as_float_array(values: Any, name: str, *, allow_nan: bool = False) -> FloatArray:
    """``values`` as a 1-D float array; a :class:`DataError` names ``name`` and the bad item."""
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        for i, v in enumerate(values):
            try:
                float(v)
            except (TypeError, ValueError):
                raise DataError(f"{name}[{i}] is not a number: {v!r}") from None
        raise DataError(f"{name} is not a sequence of numbers") from None
    if arr.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not allow_nan:
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            i = int(bad[0])
            raise DataError(f"{name}[{i}] is {float(arr[i])!r}: every item needs a finite value")
    return arr


def preference_from_alpaca(preference: Sequence[float] | npt.ArrayLike) -> FloatArray:
    """AlpacaEval's stored preference (``[1, 2]``, ``0`` for a draw) as a ``[0, 1]`` preference.

    ``p - 1``, with AlpacaEval's legacy ``0`` read as a draw (``0.5``). A value outside
    ``{0} ∪ [1, 2]`` is an error that names the item.
    """
    arr = as_float_array(preference, "preference")
    arr = np.where(arr == 0.0, 1.5, arr)
    bad = np.flatnonzero((arr < 1.0) | (arr > 2.0))
    if bad.size:
        i = int(bad[0])
        raise DataError(
            f"preference[{i}] is {float(np.asarray(preference, dtype=float)[i])!r}: "
            "AlpacaEval preferences lie in [1, 2] (0 for a draw)"
        )
    return arr - 1.0


def check_preference(preference: Any, name: str = "preference") -> FloatArray:
    """``preference`` as a float array in ``[0, 1]``, non-empty; errors name the item."""
    arr = as_float_array(preference, name)
    if arr.size == 0:
        raise DataError(f"{name} is empty: a win rate needs at least one item")
    bad = np.flatnonzero((arr < 0.0) | (arr > 1.0))
    if bad.size:
        i = int(bad[0])
        hint = " (AlpacaEval's [1, 2] scale? use preference_from_alpaca)" if arr[i] <= 2 else ""
        raise DataError(f"{name}[{i}] is {float(arr[i])!r}: a preference lies in [0, 1]{hint}")
    return arr


def win_rate(
    preference: Sequence[float] | npt.ArrayLike,
    *,
    weights: Sequence[float] | npt.ArrayLike | None = None,
) -> WinRate:
    """The win rate of a system against a baseline, with its standard error (0-100 scale).

    ``preference``: per item, the probability that the system beats the baseline
    (``1``, ``0``, ``0.5`` for a tie, or a soft value). ``weights`` (optional, one
    non-negative number per item) weight the mean; the standard error then uses the
    effective sample size ``(sum w)^2 / sum w^2``.

    >>> win_rate([1, 1, 0, 0.5]).value
    62.5
    >>> round(win_rate([1, 0], weights=[3, 1]).value, 1)
    75.0
    >>> win_rate([1.5, 2.0])
    Traceback (most recent call last):
    ...
    jurist.errors.DataError: preference[0] is 1.5: a preference lies in [0, 1] (AlpacaEval's ...
    """
    p = check_preference(preference)
    n = int(p.size)
    n_wins = int(np.sum(p > 0.5))
    n_draws = int(np.sum(p == 0.5))
    if weights is None:
        value = float(p.mean())
        se = float(p.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    else:
        w = as_float_array(weights, "weights")
        if w.size != n:
            raise DataError(f"weights has {w.size} items, preference has {n}")
        neg = np.flatnonzero(w < 0)
        if neg.size:
            raise DataError(f"weights[{int(neg[0])}] is {float(w[neg[0]])!r}: weights must be >= 0")
        total = float(w.sum())
        if total <= 0:
            raise DataError("weights sum to 0: at least one item needs a positive weight")
        value = float(np.dot(w, p) / total)
        n_eff = total**2 / float(np.dot(w, w))
        if n_eff > 1:
            var = float(np.dot(w, (p - value) ** 2) / total) * n_eff / (n_eff - 1)
            se = math.sqrt(var / n_eff)
        else:
            se = math.nan
    return WinRate(
        value=100.0 * value,
        standard_error=100.0 * se,
        n=n,
        n_wins=n_wins,
        n_draws=n_draws,
        n_losses=n - n_wins - n_draws,
    )
