"""Selective judging with a guarantee: the confidence threshold above which a judge agrees
with people at a chosen level, with a chosen confidence (Jung et al., "Trust or Escalate",
ICLR 2025).

A judge that may abstain keeps only the items whose confidence is at least a threshold
``t``. :func:`selective_threshold` picks ``t`` on labelled (calibration) items so that,
with probability at least ``1 - delta`` over the draw of those items, the disagreement
rate with the labels among the items kept at ``t`` is at most ``1 - target`` on new items
from the same distribution. The procedure is fixed-sequence testing: the candidate
thresholds are the distinct confidences, from the highest down, starting at the first
that keeps ``min_selected`` items (the order depends on the confidences only, never on
the labels); at each one the null "disagreement > 1 - target" is rejected when the exact
binomial tail ``P(Binomial(n_t, 1 - target) <= errors_t)`` is at most ``delta``, that is
when the Clopper-Pearson upper bound on the disagreement is at most ``1 - target``; the
first threshold that fails stops the sequence and the last one that passed is returned.
Because every test is at level ``delta`` and the sequence stops at its first failure,
the whole procedure errs with probability at most ``delta``. When the first test fails no
threshold is certified and the answer is ``None``: no guarantee can be given on these
data (abstain on every item, or use a stronger judge).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> conf = rng.uniform(0.5, 1.0, 400)
>>> correct = rng.uniform(size=400) < conf          # a calibrated judge
>>> sel = selective_threshold(conf, correct, target=0.85, delta=0.1)
>>> round(sel.threshold, 3), round(sel.coverage, 3), sel.upper_bound_disagreement <= 0.15
(0.762, 0.525, True)
>>> selective_threshold(conf, ~correct, target=0.85, delta=0.1) is None
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict

from jurist.errors import ConfigError, DataError
from jurist.metrics._binomial import binomial_cdfs, clopper_pearson_upper

__all__ = [
    "Confidences",
    "SelectiveThreshold",
    "confidence_from_logprobs",
    "confidence_from_panel",
    "confidence_from_probs",
    "confidence_from_repeats",
    "selective_agreement",
    "selective_threshold",
]

_CHUNK = 256  # thresholds tested per vectorised step


class SelectiveThreshold(BaseModel):
    """A certified confidence threshold (see :func:`selective_threshold`).

    ``threshold``: keep an item when its confidence is ``>= threshold``. ``coverage`` is
    ``n_selected / n`` on the data it was fitted on; ``empirical_agreement`` the share of
    the kept items that agree with their labels there, and ``upper_bound_disagreement``
    the exact ``1 - delta`` upper bound on the disagreement rate of kept items (at most
    ``1 - target``). ``n_tested`` is how many thresholds the fixed sequence tested (the
    last one failed, unless the sequence ran out).
    """

    model_config = ConfigDict(frozen=True)

    threshold: float
    coverage: float
    n: int
    n_selected: int
    empirical_agreement: float
    upper_bound_disagreement: float
    target: float
    delta: float
    n_tested: int


def _check_rates(target: float, delta: float) -> None:
    if not 0 < target < 1:
        raise ConfigError(f"target must be in (0, 1), got {target}")
    if not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1), got {delta}")


def _vectors(confidence: ArrayLike, correct: ArrayLike) -> tuple[NDArray[Any], NDArray[Any]]:
    conf = np.asarray(confidence, dtype=float).ravel()
    ok = np.asarray(correct).ravel()
    if conf.shape != ok.shape:
        raise DataError(f"confidence and correct differ in length: {conf.size} and {ok.size} items")
    if ok.dtype != bool:
        if not np.all(np.isin(ok, (0, 1))):
            raise DataError("correct must hold booleans (or 0/1): does the judge agree?")
        ok = ok.astype(bool)
    return conf, ok


def selective_threshold(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    target: float,
    delta: float,
    min_selected: int = 30,
    resolution: float | None = 0.001,
) -> SelectiveThreshold | None:
    """The smallest confidence threshold certified to keep agreement ``>= target`` with
    probability ``>= 1 - delta`` (fixed-sequence testing, exact binomial bounds; see the
    module docs), or ``None`` when no threshold is certified.

    Args:
        confidence: one confidence per item (higher: surer); ``NaN`` for an item with none,
            which is never kept (it counts in the coverage's denominator).
        correct: per item, whether the judge's verdict agrees with the human label.
        target: the agreement to guarantee among the kept items (e.g. 0.85).
        delta: the chance the guarantee may fail (e.g. 0.1).
        min_selected: the sequence starts at the highest threshold that keeps at least
            this many items (30, as in the paper): fewer cannot pass an exact test at
            usual targets, and a first failure would end the sequence at once.
        resolution: the candidate thresholds are the multiples of this step (confidences
            are floored to it first): differences in confidence finer than it (0.001 by
            default) are noise that would only reorder the most confident items. The
            paper's code uses 5000 steps over [0, 1] (``resolution=1/4999``); ``None``
            tests every distinct confidence.
    """
    _check_rates(target, delta)
    if min_selected < 1:
        raise ConfigError(f"min_selected must be at least 1, got {min_selected}")
    conf, ok = _vectors(confidence, correct)
    if resolution is not None and not resolution > 0:
        raise ConfigError(f"resolution must be positive, got {resolution}")
    finite = ~np.isnan(conf)
    order = np.argsort(-conf[finite], kind="stable")
    sorted_conf = conf[finite][order]
    errors = np.cumsum(~ok[finite][order])
    grid = sorted_conf if resolution is None else np.floor(sorted_conf / resolution) * resolution
    thresholds = np.unique(grid)[::-1]  # descending; each keeps the items >= it
    n_kept = np.searchsorted(-sorted_conf, -thresholds, side="right")
    start = int(np.searchsorted(n_kept, min_selected))
    thresholds, candidates = thresholds[start:], n_kept[start:] - 1
    alpha = 1.0 - target
    passed: int | None = None  # index into candidates of the last threshold that passed
    tested = 0
    for lo in range(0, candidates.size, _CHUNK):
        chunk = candidates[lo : lo + _CHUNK]
        tails = binomial_cdfs(errors[chunk], chunk + 1, alpha)
        fails = np.flatnonzero(tails > delta)
        if fails.size:
            tested += int(fails[0]) + 1
            if fails[0] > 0:
                passed = lo + int(fails[0]) - 1
            break
        tested += chunk.size
        passed = lo + chunk.size - 1
    if passed is None:
        return None
    threshold = float(thresholds[passed])
    passed = int(candidates[passed])
    n_sel = passed + 1
    k = int(errors[passed])
    return SelectiveThreshold(
        threshold=threshold,
        coverage=n_sel / conf.size,
        n=int(conf.size),
        n_selected=n_sel,
        empirical_agreement=1.0 - k / n_sel,
        upper_bound_disagreement=clopper_pearson_upper(k, n_sel, delta),
        target=target,
        delta=delta,
        n_tested=tested,
    )


def selective_agreement(
    confidence: ArrayLike, correct: ArrayLike, threshold: float
) -> tuple[float, float | None]:
    """``(coverage, agreement)`` of keeping the items at or above ``threshold``: the share
    kept, and the share of those that agree (``None`` when none is kept).

    >>> coverage, agreement = selective_agreement([0.9, 0.8, 0.6], [True, False, True], 0.8)
    >>> round(coverage, 4), agreement
    (0.6667, 0.5)
    """
    conf, ok = _vectors(confidence, correct)
    kept = conf >= threshold  # NaN compares False: never kept
    if conf.size == 0:
        return 0.0, None
    n_kept = int(kept.sum())
    return n_kept / conf.size, (float(ok[kept].mean()) if n_kept else None)


class Confidences(NamedTuple):
    """Per item: the confidence (``NaN`` when none) and the verdict it is the confidence of."""

    confidence: NDArray[np.float64]
    verdict: list[Any]


def confidence_from_probs(probs: ArrayLike) -> Confidences:
    """The top probability of each item's verdict distribution and its index (the
    "simulated annotators" confidence of the paper: the max over the classes).

    ``probs`` is ``(items, classes)``; rows are normalised to sum to 1 first.

    >>> c = confidence_from_probs([[0.2, 0.6], [0.9, 0.1]])
    >>> c.confidence.round(2).tolist(), c.verdict
    ([0.75, 0.9], [1, 0])
    """
    p = np.asarray(probs, dtype=float)
    if p.ndim != 2 or p.shape[1] < 2:
        raise DataError(f"probs must be (items, classes) with 2+ classes, got shape {p.shape}")
    if np.any(p < 0):
        raise DataError("probs must be non-negative")
    total = p.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = p / total
    conf = p.max(axis=1)
    verdict = [
        int(i) if np.isfinite(c) else None for i, c in zip(p.argmax(axis=1), conf, strict=True)
    ]
    return Confidences(conf, verdict)


def confidence_from_logprobs(logprobs: ArrayLike) -> Confidences:
    """:func:`confidence_from_probs` of ``exp(logprobs)``: each item's log-probabilities
    of the verdicts (``(items, classes)``, ``-inf`` for a verdict never given).

    >>> c = confidence_from_logprobs(np.log([[0.25, 0.75]]))
    >>> round(float(c.confidence[0]), 6), c.verdict
    (0.75, [1])
    """
    lp = np.asarray(logprobs, dtype=float)
    if lp.ndim != 2:
        raise DataError(f"logprobs must be (items, classes), got shape {lp.shape}")
    top = np.max(lp, axis=1, keepdims=True)
    return confidence_from_probs(np.exp(lp - np.where(np.isfinite(top), top, 0.0)))


def _mode_share(values: Sequence[Any], digits: int | None) -> tuple[float, Any]:
    seen = [v for v in values if v is not None and not (isinstance(v, float) and np.isnan(v))]
    if not seen:
        return float("nan"), None
    keyed = [round(float(v), digits) if digits is not None else v for v in seen]
    counts = Counter(keyed)
    best = max(counts.values())
    mode = next(v for v in keyed if counts[v] == best)  # ties: the first seen
    return best / len(seen), mode


def confidence_from_repeats(verdicts: Sequence[Sequence[Any]]) -> Confidences:
    """Per item, the share of its repeats that gave the most frequent verdict (the mode
    share) and that verdict; failed repeats (``None``/``NaN``) are left out, an item with
    none gets ``NaN``. Ties go to the verdict seen first.

    >>> c = confidence_from_repeats([["A", "A", "B"], ["B", None, "B"], [None]])
    >>> [round(x, 3) for x in c.confidence.tolist()], c.verdict
    ([0.667, 1.0, nan], ['A', 'B', None])
    """
    pairs = [_mode_share(list(v), None) for v in verdicts]
    return Confidences(np.array([p[0] for p in pairs], dtype=float), [p[1] for p in pairs])


def confidence_from_panel(scores: Sequence[Sequence[float | None]]) -> Confidences:
    """Per item, the share of a panel's scoring judges that gave the most common score
    (their agreement) and that score; judges that failed (``None``) are left out.
    Scores are compared to 9 decimals. ``PanelResults.judge_scores`` gives the scores by
    judge: pass ``list(zip(*results.judge_scores.values()))``.

    >>> c = confidence_from_panel([[1.0, 1.0, 0.0], [0.5, None, 0.5]])
    >>> [round(x, 3) for x in c.confidence.tolist()], c.verdict
    ([0.667, 1.0], [1.0, 0.5])
    """
    pairs = [_mode_share(list(s), 9) for s in scores]
    return Confidences(np.array([p[0] for p in pairs], dtype=float), [p[1] for p in pairs])
