"""How stable a judge is when it judges the same items again: repeat statistics.

A run with repeats gives each item several verdicts (``scores[i]`` holds item ``i``'s
scores, one per repeat, ``None`` for a repeat that failed). From them:

- :func:`repeat_stats`: per item, the mean, the mode and the **flip rate**: the share of
  pairs of its repeats whose verdicts differ, i.e. the estimated probability that two
  independent judgments of the item disagree (0 for a judge that always says the same; for
  a fair coin between two verdicts it is about 0.5);
- :func:`self_consistency`: Krippendorff's alpha with the repeats as raters (1: the
  repeats agree perfectly; 0: they agree no more than chance);
- :func:`two_level_interval`: an interval for the mean score that includes the judge's own
  variance: each bootstrap resample draws items with replacement, then, within each drawn
  item, its repeats with replacement (a two-level bootstrap), so an item judged unstably
  widens the interval as a sample of items does.

Verdicts are compared by value rounded to 9 decimals (scores are normalised to [0, 1]).

>>> stats = repeat_stats([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0, 0.0]])
>>> [(s.mean, s.mode, round(s.flip_rate, 3)) for s in stats]
[(1.0, 1.0, 0.0), (0.5, 0.0, 0.667)]
>>> round(self_consistency([[1, 1, 1], [0, 0, 0], [1, 1, 1], [0, 0, 1]]), 3)
0.686
>>> low, high = two_level_interval([[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], seed=1)
>>> 0.0 <= low <= 0.5 <= high <= 1.0
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError
from jurist.metrics._stats import FloatArray, alpha

__all__ = [
    "ItemRepeats",
    "flip_rate",
    "mode_of",
    "repeat_stats",
    "self_consistency",
    "two_level_difference",
    "two_level_interval",
]

Scores = Sequence[float | None]


def _key(score: float) -> float:
    return round(float(score), 9)


def _scored(scores: Scores) -> list[float]:
    return [float(s) for s in scores if s is not None and not math.isnan(s)]


def mode_of(scores: Scores) -> float | None:
    """The most frequent verdict (ties: the smallest value); ``None`` when none is scored.

    >>> mode_of([0.5, 1.0, 1.0, None]), mode_of([1.0, 0.0]), mode_of([None])
    (1.0, 0.0, None)
    """
    counts: dict[float, int] = {}
    for s in _scored(scores):
        counts[_key(s)] = counts.get(_key(s), 0) + 1
    if not counts:
        return None
    return min(counts, key=lambda v: (-counts[v], v))


def flip_rate(scores: Scores) -> float | None:
    """The share of pairs of scored repeats whose verdicts differ (``None`` under two).

    >>> round(flip_rate([1.0, 1.0, 0.0]) or 0, 4), flip_rate([1.0]), flip_rate([0.0, 0.0])
    (0.6667, None, 0.0)
    """
    values = _scored(scores)
    n = len(values)
    if n < 2:
        return None
    counts: dict[float, int] = {}
    for v in values:
        counts[_key(v)] = counts.get(_key(v), 0) + 1
    same = sum(c * (c - 1) for c in counts.values())
    return 1.0 - same / (n * (n - 1))


class ItemRepeats(BaseModel):
    """One item's repeats: its verdicts, their mean and mode, and its flip rate."""

    model_config = ConfigDict(frozen=True)

    scores: list[float | None]
    """One per repeat, in repeat order (``None``: that repeat failed)."""
    mean: float | None
    mode: float | None
    flip_rate: float | None
    """Share of pairs of scored repeats that disagree (``None``: fewer than two scored)."""

    @classmethod
    def of(cls, scores: Scores) -> ItemRepeats:
        values = _scored(scores)
        return cls(
            scores=list(scores),
            mean=sum(values) / len(values) if values else None,
            mode=mode_of(scores),
            flip_rate=flip_rate(scores),
        )


def repeat_stats(scores: Sequence[Scores]) -> list[ItemRepeats]:
    """:class:`ItemRepeats` of each item (``scores[i]``: item ``i``'s repeat scores)."""
    return [ItemRepeats.of(s) for s in scores]


def self_consistency(scores: Sequence[Scores], *, level: str = "interval") -> float:
    """Krippendorff's alpha across repeats: the repeats are the raters, the items the units
    (a missing or failed repeat is a missing value). NaN when it is undefined (fewer than
    two values, or all alike).

    ``level``: ``"interval"`` (default; scores are numbers in [0, 1], and for two verdicts
    it equals the nominal alpha), ``"ordinal"`` or ``"nominal"``.
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise DataError(
            f"self_consistency: level must be nominal, ordinal or interval, not {level!r}"
        )
    width = max((len(s) for s in scores), default=0)
    table = np.full((width, len(scores)), np.nan)
    for unit, item in enumerate(scores):
        for rater, s in enumerate(item):
            if s is not None:
                table[rater, unit] = float(s)
    return alpha(table, level)  # type: ignore[arg-type]


class _Repeats:
    """Items' scored repeats in one padded array, for drawing bootstrap resamples."""

    def __init__(self, items: Sequence[Sequence[float]]) -> None:
        self.n = len(items)
        self.sizes = np.array([len(v) for v in items])
        self.width = int(self.sizes.max())
        self.padded = np.zeros((self.n, self.width))
        for i, v in enumerate(items):
            self.padded[i, : len(v)] = v

    def means(self, picked: npt.NDArray[np.int64], rng: np.random.Generator) -> FloatArray:
        """The mean of the item means of each row of ``picked`` (drawn item indices), the
        repeats of each drawn item drawn with replacement."""
        k = self.sizes[picked]
        within = (rng.random((*picked.shape, self.width)) * k[..., None]).astype(np.int64)
        draws = self.padded[picked[..., None], within]
        mask = np.arange(self.width)[None, None, :] < k[..., None]
        means: FloatArray = ((draws * mask).sum(axis=-1) / k).mean(axis=-1)
        return means


def _check(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise DataError(f"confidence must be between 0 and 1, got {confidence}")
    return (1 - confidence) / 2


def _ends(values: FloatArray, tail: float) -> tuple[float, float]:
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def two_level_interval(
    scores: Sequence[Scores],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile interval for the mean of the items' mean scores, resampling items and
    then each drawn item's scored repeats (see the module's docs). Items with no scored
    repeat are left out; with one repeat per item it is the usual item bootstrap. NaN ends
    when fewer than two items are scored.
    """
    tail = _check(confidence)
    items = [v for v in (_scored(s) for s in scores) if v]
    if len(items) < 2:
        return float("nan"), float("nan")
    table, rng = _Repeats(items), np.random.default_rng(seed)
    out = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // (table.n * table.width))  # bounded memory for a large run
    for start in range(0, n_resamples, chunk):
        count = min(chunk, n_resamples - start)
        picked = rng.integers(0, table.n, (count, table.n))
        out[start : start + count] = table.means(picked, rng)
    return _ends(out, tail)


def two_level_difference(
    scores: Sequence[Scores],
    baseline: Sequence[Scores],
    *,
    paired: bool = False,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(difference, low, high)``: the mean score of ``scores`` less that of
    ``baseline``, with a two-level bootstrap interval. ``paired``: item ``i`` of both is
    the same item (the same data judged twice), so items are drawn once for both (only
    items scored in both count); otherwise each is drawn on its own.

    >>> d, low, high = two_level_difference([[1.0], [1.0], [0.0]], [[0.0], [1.0], [0.0]],
    ...                                     paired=True)
    >>> round(d, 3), low <= d <= high
    (0.333, True)
    """
    tail = _check(confidence)
    if paired:
        if len(scores) != len(baseline):
            raise DataError(
                f"paired runs need the same items: {len(scores)} and {len(baseline)} items"
            )
        both = [
            (a, b)
            for a, b in zip(map(_scored, scores), map(_scored, baseline), strict=True)
            if a and b
        ]
        mine, theirs = [a for a, _ in both], [b for _, b in both]
    else:
        mine = [v for v in map(_scored, scores) if v]
        theirs = [v for v in map(_scored, baseline) if v]
    if len(mine) < 2 or len(theirs) < 2:
        return float("nan"), float("nan"), float("nan")
    value = float(np.mean([np.mean(v) for v in mine]) - np.mean([np.mean(v) for v in theirs]))
    a, b, rng = _Repeats(mine), _Repeats(theirs), np.random.default_rng(seed)
    out = np.empty(n_resamples)
    width = max(a.n * a.width, b.n * b.width)
    chunk = max(1, 2_000_000 // width)
    for start in range(0, n_resamples, chunk):
        count = min(chunk, n_resamples - start)
        picked_a = rng.integers(0, a.n, (count, a.n))
        picked_b = picked_a if paired else rng.integers(0, b.n, (count, b.n))
        out[start : start + count] = a.means(picked_a, rng) - b.means(picked_b, rng)
    low, high = _ends(out, tail)
    return value, low, high
