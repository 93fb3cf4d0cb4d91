"""From a scalar reward model's rewards to judge scores: the maps, and fitting them.

A reward model gives each (prompt, response) an unbounded real number. A
:class:`~jurist.judges.RewardModelJudge` turns it into a score by one documented map:

- **pointwise**, ``squash="sigmoid"`` (the default): ``score = sigmoid((reward - center) /
  temperature)``, in (0, 1); ``squash="none"``: the raw reward is the score (unbounded: for
  RL rewards and rankings, not for a 0-1 scale);
- **pairwise**: both responses scored, ``P(A better) = sigmoid((reward_A - reward_B) /
  temperature)`` (the Bradley-Terry model reward models are trained under, with
  ``temperature=1`` their training scale).

``temperature`` (and ``center``) are given, or fitted to labels by maximum likelihood
(:func:`fit_map`: a one-feature logistic regression, Newton's method), so that the score is a
calibrated probability and a confidence (``max(p, 1 - p)``) that selective judging and
cascades can threshold.

>>> sigmoid(0.0), round(pair_probability(2.0, 1.0, temperature=1.0), 4)
(0.5, 0.7311)
>>> round(squash(3.0, center=1.0, temperature=2.0), 4)
0.7311
>>> fit = fit_map([2.0, 1.0, -1.0, 0.5, -2.0, -0.3], [1, 1, 0, 0, 0, 1], center=False)
>>> fit.temperature > 0, fit.center
(True, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from jurist.errors import DataError

__all__ = ["MapFit", "fit_map", "pair_probability", "sigmoid", "squash"]


def sigmoid(x: float) -> float:
    """The logistic function, without overflow for large ``|x|``."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def squash(reward: float, *, center: float = 0.0, temperature: float = 1.0) -> float:
    """A pointwise reward as a score in (0, 1): ``sigmoid((reward - center) / temperature)``."""
    return sigmoid((reward - center) / temperature)


def pair_probability(reward_a: float, reward_b: float, *, temperature: float = 1.0) -> float:
    """The probability that A is better: ``sigmoid((reward_a - reward_b) / temperature)``."""
    return sigmoid((reward_a - reward_b) / temperature)


@dataclass(frozen=True)
class MapFit:
    """A fitted map: ``sigmoid((x - center) / temperature)``; ``n`` the labelled values it was
    fitted on and ``log_loss`` their mean negative log-likelihood under it."""

    temperature: float
    center: float
    n: int
    log_loss: float


def fit_map(
    values: Sequence[float],
    labels: Sequence[float],
    *,
    center: bool,
    max_iter: int = 100,
    max_temperature: float = 1e6,
) -> MapFit:
    """Fit ``P(label = 1) = sigmoid((value - center) / temperature)`` by maximum likelihood.

    ``values``: rewards (pointwise) or reward margins A - B (pairwise); ``labels`` in [0, 1]
    (1: good / A better, 0: bad / B better, 0.5: a tie, counted half each way).
    ``center=False`` keeps the center at 0 (a pairwise margin has no offset: the map must
    give 0.5 when both rewards are equal). The temperature is at least ``1e-6`` and at most
    ``max_temperature`` (values that do not predict the labels at all give the widest map,
    a constant 0.5 or base rate).
    """
    xs = [float(v) for v in values]
    ys = [float(y) for y in labels]
    if len(xs) != len(ys):
        raise DataError(f"fit_map: {len(xs)} values for {len(ys)} labels")
    if len(xs) < 2:
        raise DataError("fit_map: at least 2 labelled values are needed to fit a map")
    for i, y in enumerate(ys):
        if not 0.0 <= y <= 1.0 or math.isnan(y):
            raise DataError(f"fit_map: label {i} is {y!r}, not in [0, 1]")
        if not math.isfinite(xs[i]):
            raise DataError(f"fit_map: value {i} is {xs[i]!r}, not a finite number")
    a, b = 0.0, 0.0  # logit = a * x + b; temperature = 1 / a, center = -b / a
    for _ in range(max_iter):
        g_a = g_b = h_aa = h_ab = h_bb = 0.0
        for x, y in zip(xs, ys, strict=True):
            p = sigmoid(a * x + b)
            w = max(p * (1.0 - p), 1e-12)
            g_a += (p - y) * x
            h_aa += w * x * x
            if center:
                g_b += p - y
                h_ab += w * x
                h_bb += w
        h_aa += 1e-9  # a whisker of ridge: separable labels stay finite
        if center:
            h_bb += 1e-9
            det = h_aa * h_bb - h_ab * h_ab
            step_a = (h_bb * g_a - h_ab * g_b) / det
            step_b = (h_aa * g_b - h_ab * g_a) / det
        else:
            step_a, step_b = g_a / h_aa, 0.0
        a, b = a - step_a, b - step_b
        a = min(max(a, 1.0 / max_temperature), 1e6)
        if abs(step_a) < 1e-10 and abs(step_b) < 1e-10:
            break
    temperature = 1.0 / a
    mid = -b / a if center else 0.0
    loss = 0.0
    for x, y in zip(xs, ys, strict=True):
        p = min(max(sigmoid((x - mid) / temperature), 1e-15), 1 - 1e-15)
        loss -= y * math.log(p) + (1 - y) * math.log(1 - p)
    return MapFit(temperature=temperature, center=mid, n=len(xs), log_loss=loss / len(xs))
