"""INTERIM stand-ins for ``jurist.metrics.win_rate``, ``length_controlled_win_rate``,
``fit_length_controlled``, ``bradley_terry`` and ``style_differences`` (issue 23 item 2,
written on another branch), with their names, arguments and the result fields the
leaderboard reads.

The leaderboard (:mod:`jurist.runs._leaderboard`) imports these names in one statement;
at merge that line becomes ``from jurist.metrics import ...`` and this module goes.
Minimal but honest computations, numpy only:

- ``win_rate``: the mean preference x 100 and its standard error (``ddof=1``), as
  AlpacaEval reports them;
- ``length_controlled_win_rate``: AlpacaEval 2.0's GLM without instruction difficulty,
  ``logit p = theta + phi * tanh(dlen / sd(dlen))`` fitted by Newton's method on the soft
  preferences; the controlled rate is ``100 * sigmoid(theta)`` (length term set to 0);
- ``fit_length_controlled``: here only that fit per system (the real one estimates the
  instructions' difficulty jointly across the systems first);
- ``style_differences``: Arena-Hard-Auto's style features of answer pairs (length in
  words, header, list and bold densities, as normalised differences);
- ``bradley_terry``: Arena-Hard-Auto's logistic Bradley-Terry fit (a tie counts half a
  win to each side), ratings on the Elo scale (400 / ln 10 per unit, the baseline at
  1000), scores the win rate against the baseline (0-100), 95% percentile intervals from
  ``bootstrap`` resamples of the battles; ``style``: per-battle features (standardised)
  fitted beside the strengths, the scores read at their mean (style control).

>>> win_rate([1, 1, 0, 0.5]).value
62.5
>>> bt = bradley_terry([("x", "y", "model_a")] * 3 + [("x", "y", "model_b")], baseline="y",
...                    bootstrap=20)
>>> [(r.model, round(r.score)) for r in bt.rows]
[('x', 75), ('y', 50)]
"""

from __future__ import annotations

import math
import re
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
    "StyleCoefficient",
    "WinRate",
    "bradley_terry",
    "fit_length_controlled",
    "length_controlled_win_rate",
    "style_differences",
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


class StyleCoefficient(BaseModel):
    name: str
    value: float
    lower: float
    upper: float


class BradleyTerryResult(BaseModel):
    rows: list[BradleyTerryRow]
    baseline: str
    bootstrap: int
    n_battles: int
    style: list[StyleCoefficient] = []
    unbounded: list[str] = []
    """(The real one names the models with no finite strength; this stand-in does not.)"""


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
    i: npt.NDArray[np.int64],
    j: npt.NDArray[np.int64],
    w: _Array,
    s: _Array,
    z: _Array | None,
    m: int,
    base: int,
) -> tuple[_Array, _Array]:
    """Strengths (natural-log units, the baseline's 0) and style coefficients, from rows
    of weight ``w`` with the weighted wins of the first side ``s`` (and features ``z``)."""
    keep = [k for k in range(m) if k != base]
    x = np.zeros((i.size, m))
    x[np.arange(i.size), i] = 1.0
    x[np.arange(i.size), j] -= 1.0
    x = x[:, keep] if z is None else np.hstack([x[:, keep], z])
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (s - w * p) - 1e-6 * beta
        info = (x * (w * p * (1 - p))[:, None]).T @ x + 1e-6 * np.eye(x.shape[1])
        step = np.linalg.solve(info, grad)
        beta += step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    full = np.zeros(m)
    full[keep] = beta[: len(keep)]
    return full, beta[len(keep) :]


def _style(style: Mapping[str, Any], n: int) -> tuple[list[str], _Array]:
    names = list(style)
    z = np.column_stack([np.asarray(style[k], dtype=float) for k in names])
    if z.shape[0] != n:
        raise DataError(f"style has {z.shape[0]} rows, there are {n} battles")
    sd = z.std(axis=0, ddof=1)
    for name, v in zip(names, sd, strict=True):
        if not v > 0:
            raise DataError(f"style feature {name!r} does not vary across battles")
    return names, (z - z.mean(axis=0)) / sd


def bradley_terry(
    battles: Sequence[Any],
    *,
    baseline: str | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    style: Mapping[str, Any] | None = None,
) -> BradleyTerryResult:
    rows = [(str(a), str(b), _OUTCOMES[str(w)]) for a, b, w in battles]
    if not rows:
        raise DataError("battles is empty")
    models = sorted({a for a, _, _ in rows} | {b for _, b, _ in rows})
    fought = dict.fromkeys(models, 0)
    for a, b, _ in rows:
        fought[a] += 1
        fought[b] += 1
    base_name = baseline if baseline is not None else min(models, key=lambda n: (-fought[n], n))
    if base_name not in models:
        raise DataError(f"baseline {base_name!r} fought no battle")
    index = {name: k for k, name in enumerate(models)}
    outcome = np.array([o for _, _, o in rows])
    base, m, n = index[base_name], len(models), len(rows)
    names, z = _style(style, n) if style is not None else ([], None)
    if z is None:  # pooled per ordered pair of models: the same likelihood, fewer rows
        matchups = sorted({(index[a], index[b]) for a, b, _ in rows})
        at = {mu: k for k, mu in enumerate(matchups)}
        which = np.array([at[(index[a], index[b])] for a, b, _ in rows])
        i = np.array([a for a, _ in matchups], dtype=np.int64)
        j = np.array([b for _, b in matchups], dtype=np.int64)
    else:  # one row per battle: its features differ
        which = np.arange(n)
        i = np.array([index[a] for a, _, _ in rows], dtype=np.int64)
        j = np.array([index[b] for _, b, _ in rows], dtype=np.int64)

    def fit(counts: _Array) -> tuple[_Array, _Array]:
        w = np.bincount(which, weights=counts, minlength=i.size).astype(float)
        s = np.bincount(which, weights=counts * outcome, minlength=i.size).astype(float)
        return _bt_fit(i, j, w, s, z, m, base)

    def score(beta: _Array) -> _Array:
        return np.asarray(100 / (1 + np.exp(beta[base] - beta)), dtype=float)

    strengths, coefs = fit(np.ones(n))
    rng = np.random.default_rng(seed)
    draws = [fit(rng.multinomial(n, np.full(n, 1 / n)).astype(float)) for _ in range(bootstrap)]
    samples = np.array([score(st) for st, _ in draws]) if bootstrap else np.empty((0, m))
    coef_samples = np.array([c for _, c in draws]) if bootstrap else np.empty((0, len(names)))

    def interval(values: _Array, point: float) -> tuple[float, float]:
        if not bootstrap:
            return point, point
        return float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))

    point = score(strengths)
    out = []
    for k, name in enumerate(models):
        lower, upper = interval(samples[:, k], float(point[k]))
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
    out.sort(key=lambda r: (-r.score, r.model))
    style_out = [
        StyleCoefficient(name=name, value=float(coefs[k]), lower=lo, upper=hi)
        for k, name in enumerate(names)
        for lo, hi in [interval(coef_samples[:, k], float(coefs[k]))]
    ]
    return BradleyTerryResult(
        rows=out, baseline=base_name, bootstrap=bootstrap, n_battles=n, style=style_out
    )


_WORDS = re.compile(r"\S+")
_CODE = re.compile(r"```[^`]*```")
_MARKS = (
    re.compile(r"^#{1,6}\s", re.MULTILINE),
    re.compile(r"^\s*(?:\d+\.|[-*+])\s", re.MULTILINE),
    re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__"),
)


def style_differences(answers_a: Sequence[str], answers_b: Sequence[str]) -> dict[str, _Array]:
    def features(text: str) -> tuple[float, list[float]]:
        length = float(len(_WORDS.findall(text)))
        plain = _CODE.sub("", text)
        counts = [float(len(mark.findall(plain))) for mark in _MARKS]
        return length, [c / length if length else 0.0 for c in counts]

    fa = [features(t) for t in answers_a]
    fb = [features(t) for t in answers_b]
    la = np.array([f[0] for f in fa])
    lb = np.array([f[0] for f in fb])
    total = la + lb
    out = {"length": np.divide(la - lb, total, out=np.zeros_like(la), where=total > 0)}
    for k, name in enumerate(("header", "list", "bold")):
        da = np.array([f[1][k] for f in fa])
        db = np.array([f[1][k] for f in fb])
        out[name] = (da - db) / (da + db + 1)
    return out
