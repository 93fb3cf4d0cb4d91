"""Combining several judges' scores for one item: NaN-aware, saying how many counted.

Every aggregation skips the judges that gave no score (``None`` or NaN) and works on the
scores that remain:

- ``mean``, ``median``, ``min``, ``max``: as named.
- ``weighted``: the weighted mean, with the weights of the scoring judges renormalised
  (a failed judge's weight is left out, not counted as a 0 score).
- ``majority``: the most common score. Scores are compared after rounding to 9 decimals,
  so judges on the same scale vote for the same value. **Tie rule**: when several scores
  share the top count, the *lowest* of them wins (the conservative verdict: a split panel
  does not pass an answer), and the result says ``tie=True``. The rule depends only on the
  scores, never on the order of the judges.

>>> aggregate([1.0, None, 0.0, 1.0], "majority")
Aggregate(score=1.0, n_counted=3, n_failed=1, spread=1.0, tie=False)
>>> aggregate([1.0, 0.0], "majority").score  # a 1-1 split: the lower score wins
0.0
>>> aggregate([0.5, 1.0, None], "weighted", weights=[1.0, 3.0, 5.0]).score
0.875
>>> aggregate([None, None], "mean")
Aggregate(score=None, n_counted=0, n_failed=2, spread=None, tie=False)
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Literal, NamedTuple, get_args

from jurist.errors import ConfigError

__all__ = ["AGGREGATIONS", "Aggregate", "Aggregation", "aggregate", "check_weights", "is_scored"]

Aggregation = Literal["mean", "median", "min", "max", "majority", "weighted"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)


class Aggregate(NamedTuple):
    """One item's combined score and what went into it.

    ``spread`` is ``max - min`` of the counted scores (0 when the judges agree, ``None``
    when none scored); ``tie`` is set by ``majority`` when the top vote count was shared.
    """

    score: float | None
    n_counted: int
    n_failed: int
    spread: float | None
    tie: bool = False


def is_scored(score: float | None) -> bool:
    """Whether ``score`` counts: not ``None`` and not NaN."""
    return score is not None and not math.isnan(score)


def check_weights(
    aggregation: str, weights: Sequence[float] | None, n_judges: int
) -> tuple[float, ...] | None:
    """Validate an aggregation name and its weights; returns the weights as a tuple.

    >>> check_weights("weighted", [1, 2], 2)
    (1.0, 2.0)
    >>> check_weights("weighted", None, 2)
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: aggregation='weighted' needs weights, one per judge (2 judges)
    """
    if aggregation not in AGGREGATIONS:
        raise ConfigError(
            f"unknown aggregation {aggregation!r}; use one of {', '.join(AGGREGATIONS)}"
        )
    if aggregation != "weighted":
        if weights is not None:
            raise ConfigError(
                f"weights are only used with aggregation='weighted', not {aggregation!r}"
            )
        return None
    if weights is None:
        raise ConfigError(
            f"aggregation='weighted' needs weights, one per judge ({n_judges} judges)"
        )
    out = tuple(float(w) for w in weights)
    if len(out) != n_judges:
        raise ConfigError(f"got {len(out)} weights for {n_judges} judges; give one per judge")
    for i, w in enumerate(out):
        if not math.isfinite(w) or w < 0:
            raise ConfigError(f"weight {i} is {w}; weights must be finite and not negative")
    if sum(out) <= 0:
        raise ConfigError("the weights sum to 0; at least one judge needs a positive weight")
    return out


def aggregate(
    scores: Sequence[float | None],
    how: str,
    weights: Sequence[float] | None = None,
) -> Aggregate:
    """Combine one item's judge scores with aggregation ``how`` (see the module doc)."""
    counted = [(i, float(s)) for i, s in enumerate(scores) if s is not None and is_scored(s)]
    n_failed = len(scores) - len(counted)
    if not counted:
        return Aggregate(None, 0, n_failed, None)
    values = [s for _, s in counted]
    spread = max(values) - min(values)
    tie = False
    if how == "mean":
        score = math.fsum(values) / len(values)
    elif how == "median":
        score = float(statistics.median(values))
    elif how == "min":
        score = min(values)
    elif how == "max":
        score = max(values)
    elif how == "majority":
        score, tie = _majority(values)
    elif how == "weighted":
        if weights is None or len(weights) != len(scores):
            raise ConfigError("aggregation='weighted' needs one weight per judge")
        total = math.fsum(weights[i] for i, _ in counted)
        if total <= 0:
            return Aggregate(None, len(counted), n_failed, spread)
        score = math.fsum(weights[i] * s for i, s in counted) / total
    else:
        raise ConfigError(f"unknown aggregation {how!r}; use one of {', '.join(AGGREGATIONS)}")
    return Aggregate(score, len(counted), n_failed, spread, tie)


def _majority(values: Sequence[float]) -> tuple[float, bool]:
    keys = [round(v, 9) for v in values]
    counts = Counter(keys)
    top = max(counts.values())
    leaders = sorted(k for k, c in counts.items() if c == top)
    winner = leaders[0]
    # report the first exact score that rounds to the winner, not the rounded key
    exact = next(v for v, k in zip(values, keys, strict=True) if k == winner)
    return exact, len(leaders) > 1
