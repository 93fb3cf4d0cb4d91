"""INTERIM stand-ins for ``jurist.metrics.win_rate``, ``length_controlled_win_rate``,
``fit_length_controlled`` and ``bradley_terry`` (issue 23 item 2, written on another
branch), with their names, arguments and the result fields the leaderboard reads.

The leaderboard (:mod:`jurist.runs._leaderboard`) imports these four names in one line;
at merge that line becomes ``from jurist.metrics import ...`` and this module goes.
Minimal but honest computations, numpy only:

- ``win_rate``: the mean preference x 100 and its standard error (``ddof=1``), as
  AlpacaEval reports them;
- ``length_controlled_win_rate``: AlpacaEval 2.0's GLM without instruction difficulty,
  ``logit p = theta + phi * tanh(dlen / sd(dlen))`` fitted by Newton's method on the soft
  preferences; the controlled rate is ``100 * sigmoid(theta)`` (length term set to 0);
- ``fit_length_controlled``: here only that fit per system (the real one estimates the
  instructions' difficulty jointly across the systems first);
- ``bradley_terry``: Arena-Hard-Auto's logistic Bradley-Terry fit (a tie counts half a
  win to each side), ratings on the Elo scale (400 / ln 10 per unit, the baseline at
  1000), scores the win rate against the baseline (0-100), 95% percentile intervals from
  ``bootstrap`` resamples of the battles.

>>> win_rate([1, 1, 0, 0.5]).value
62.5
>>> bt = bradley_terry([("x", "y", "model_a")] * 3 + [("x", "y", "model_b")], baseline="y",
...                    bootstrap=20)
>>> [(r.model, round(r.score)) for r in bt.rows]
[('x', 75), ('y', 50)]
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from jurist.errors import DataError

__all__ = [
    "BradleyTerryResult",
    "BradleyTerryRow",
    "LengthControlledWinRate",
    "WinRate",
    "bradley_terry",
    "fit_length_controlled",
    "length_controlled_win_rate",
    "win_rate",
]

_Array = npt.NDArray[np.float64]
_OUTCOMES = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}


class WinRate(BaseModel):
    value: float
    standard_error: float
    n: int
    n_wins: int
    n_draws: int
    n_losses: int


class LengthControlledWinRate(BaseModel):
    value: float
    raw: float
    standard_error: float
    n: int
    model_coef: float
    length_coef: float


class BradleyTerryRow(BaseModel):
    model: str
    score: float
    lower: float
    upper: float
    rating: float
    n_battles: int


class BradleyTerryResult(BaseModel):
    rows: list[BradleyTerryRow]
    baseline: str
    bootstrap: int
    n_battles: int


def _preferences(preference: Sequence[float] | Any) -> _Array:
    p = np.asarray(preference, dtype=float)
    if p.ndim != 1 or p.size == 0:
        raise DataError("preference must be a non-empty list of numbers")
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise DataError("a preference lies in [0, 1]")
    return p


def win_rate(preference: Sequence[float] | Any, *, weights: Any = None) -> WinRate:
    p = _preferences(preference)
    n = int(p.size)
    se = float(p.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return WinRate(
        value=100 * float(p.mean()),
        standard_error=100 * se,
        n=n,
        n_wins=int(np.sum(p > 0.5)),
        n_draws=int(np.sum(p == 0.5)),
        n_losses=int(np.sum(p < 0.5)),
    )


def _logistic_fit(x: _Array, y: _Array, ridge: _Array) -> tuple[_Array, _Array]:
    """Newton's method for a logistic model with soft targets; the coefficients and the
    inverse information matrix."""
    beta = np.zeros(x.shape[1])
    info = np.eye(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (y - p) - ridge * beta
        info = (x * (p * (1 - p))[:, None]).T @ x + np.diag(ridge)
        step = np.linalg.solve(info, grad)
        beta += step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return beta, np.asarray(np.linalg.inv(info), dtype=float)


def length_controlled_win_rate(
    preference: Sequence[float] | Any,
    system_length: Sequence[float] | Any,
    baseline_length: Sequence[float] | Any,
    *,
    instruction_difficulty: Any = None,
) -> LengthControlledWinRate:
    p = _preferences(preference)
    delta = np.asarray(system_length, dtype=float) - np.asarray(baseline_length, dtype=float)
    if delta.shape != p.shape:
        raise DataError("system_length and baseline_length need one length per preference")
    sd = float(delta.std())
    term = np.tanh(delta / sd) if sd > 0 else np.zeros_like(delta)
    x = np.column_stack([np.ones_like(p), term])
    beta, cov = _logistic_fit(x, p, np.array([1e-6, 1.0]))
    theta = float(beta[0])
    value = 1 / (1 + math.exp(-theta))
    return LengthControlledWinRate(
        value=100 * value,
        raw=win_rate(p).value,
        standard_error=100 * value * (1 - value) * math.sqrt(float(cov[0, 0])),
        n=int(p.size),
        model_coef=theta,
        length_coef=float(beta[1]),
    )


def fit_length_controlled(
    preferences: Mapping[str, Sequence[float]],
    system_lengths: Mapping[str, Sequence[float]],
    baseline_lengths: Mapping[str, Sequence[float]],
    *,
    items: Mapping[str, Sequence[Hashable]] | None = None,
) -> dict[str, LengthControlledWinRate]:
    for name, ids in (items or {}).items():
        if len(set(ids)) != len(ids):
            raise DataError(f"items[{name!r}] repeats an item id")
    return {
        name: length_controlled_win_rate(p, system_lengths[name], baseline_lengths[name])
        for name, p in preferences.items()
    }


def _bt_fit(
    i: npt.NDArray[np.int64], j: npt.NDArray[np.int64], w: _Array, s: _Array, m: int, base: int
) -> _Array:
    """Strengths (natural-log units, the baseline's 0) from per-matchup totals: weight
    ``w`` and the weighted wins of the first side ``s``."""
    keep = [k for k in range(m) if k != base]
    x = np.zeros((i.size, m))
    x[np.arange(i.size), i] = 1.0
    x[np.arange(i.size), j] -= 1.0
    x = x[:, keep]
    beta = np.zeros(len(keep))
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (s - w * p) - 1e-6 * beta
        info = (x * (w * p * (1 - p))[:, None]).T @ x + 1e-6 * np.eye(len(keep))
        step = np.linalg.solve(info, grad)
        beta += step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    full = np.zeros(m)
    full[keep] = beta
    return full


def bradley_terry(
    battles: Sequence[Any],
    *,
    baseline: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    style: Any = None,
) -> BradleyTerryResult:
    rows = [(str(a), str(b), _OUTCOMES[str(w)]) for a, b, w in battles]
    if not rows:
        raise DataError("battles is empty")
    models = sorted({a for a, _, _ in rows} | {b for _, b, _ in rows})
    fought = {name: 0 for name in models}
    for a, b, _ in rows:
        fought[a] += 1
        fought[b] += 1
    base_name = baseline if baseline is not None else min(models, key=lambda n: (-fought[n], n))
    if base_name not in models:
        raise DataError(f"baseline {base_name!r} fought no battle")
    index = {name: k for k, name in enumerate(models)}
    matchups = sorted({(index[a], index[b]) for a, b, _ in rows})
    at = {mu: k for k, mu in enumerate(matchups)}
    which = np.array([at[(index[a], index[b])] for a, b, _ in rows])
    outcome = np.array([o for _, _, o in rows])
    i = np.array([a for a, _ in matchups], dtype=np.int64)
    j = np.array([b for _, b in matchups], dtype=np.int64)
    base, m = index[base_name], len(models)

    def fit(counts: _Array) -> _Array:
        w = np.bincount(which, weights=counts, minlength=len(matchups)).astype(float)
        s = np.bincount(which, weights=counts * outcome, minlength=len(matchups)).astype(float)
        return _bt_fit(i, j, w, s, m, base)

    def score(beta: _Array) -> _Array:
        return np.asarray(100 / (1 + np.exp(beta[base] - beta)), dtype=float)

    strengths = fit(np.ones(len(rows)))
    rng = np.random.default_rng(seed)
    samples = (
        np.array(
            [
                score(
                    fit(rng.multinomial(len(rows), np.full(len(rows), 1 / len(rows))).astype(float))
                )
                for _ in range(bootstrap)
            ]
        )
        if bootstrap
        else np.empty((0, m))
    )
    point = score(strengths)
    out = []
    for k, name in enumerate(models):
        lower, upper = (
            (float(np.percentile(samples[:, k], 2.5)), float(np.percentile(samples[:, k], 97.5)))
            if bootstrap
            else (float(point[k]), float(point[k]))
        )
        out.append(
            BradleyTerryRow(
                model=name,
                score=float(point[k]),
                lower=lower,
                upper=upper,
                rating=1000 + 400 / math.log(10) * float(strengths[k]),
                n_battles=fought[name],
            )
        )
    out.sort(key=lambda r: -r.score)
    return BradleyTerryResult(
        rows=out, baseline=base_name, bootstrap=bootstrap, n_battles=len(rows)
    )
