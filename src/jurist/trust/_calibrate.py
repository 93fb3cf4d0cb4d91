"""Calibration: a monotone map from a judge's score to the labels' scale, checked held out.

:func:`fit_calibration` splits the labelled items at random (``calibration_fraction`` of
them to fit on, the rest to test on), fits the least-squares non-decreasing map from the
judge's 0-1 score (the expected score where the judge weighs logprobs) to the labels on
the calibration part, and measures agreement on the test part twice:

- *before*: the judge's score stretched linearly onto the labels' range (a 1-5 judge on
  1-5 labels gives its own verdicts back), rounded to the nearest label value when the
  labels are ordinal;
- *after*: the fitted map, rounded the same way.

Both come with bootstrap intervals, and each metric's gain with a *paired* interval (the
same resampled items on both sides). :attr:`CalibrationReport.supported` says whether the
headline metric's gain interval clears zero; a report never claims a gain it does not
support. The :class:`Calibration` keeps the map, the label values and a fingerprint of the
items it was fitted on (keys, scores and labels hashed), and is what
:class:`~jurist.trust.CalibratedJudge` applies.

>>> import random
>>> rng = random.Random(0)
>>> scores = [rng.random() for _ in range(400)]
>>> labels = [1 + round(4 * s**3) for s in scores]   # a judge whose scale bends
>>> report = fit_calibration(scores, labels, n_resamples=200)
>>> report.kind, report.headline, report.n_calibration, report.n_test
('ordinal', 'quadratic_kappa', 200, 200)
>>> report.after["accuracy"].value > report.before["accuracy"].value, report.supported
(True, True)
>>> report.calibration.verdict(0.5), report.calibration.fitted_on.items
(2.0, 200)
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError
from jurist.metrics import Agreement, Estimate, agreement
from jurist.metrics._agreement import metric_functions
from jurist.metrics._calibration import IsotonicMap, isotonic_fit, paired_gain
from jurist.metrics._labels import check_labels

__all__ = ["Calibration", "CalibrationReport", "FittedOn", "fit_calibration"]

LabelKind = Literal["ordinal", "interval"]

HEADLINE: dict[str, tuple[str, int]] = {"ordinal": ("quadratic_kappa", 1), "interval": ("rmse", -1)}
"""The metric whose gain decides :attr:`CalibrationReport.supported`, and its direction
(+1: higher is better, -1: lower is better)."""

MIN_ITEMS = 10


class FittedOn(BaseModel):
    """What a calibration was fitted on: a digest of its items, their count and source."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    items: int
    labels: str
    source: str | None = None


class Calibration(BaseModel):
    """A fitted map from a judge's 0-1 score to the labels' scale."""

    model_config = ConfigDict(frozen=True)

    map: IsotonicMap
    values: tuple[float, ...] | None
    """The label values verdicts round to (ordinal labels); ``None`` for interval labels."""
    low: float
    high: float
    fitted_on: FittedOn

    def value(self, score: float) -> float:
        """The mapped score, on the labels' scale."""
        return self.map(score)

    def verdict(self, score: float) -> float:
        """The mapped score rounded to the nearest label value (ties: the lower one)."""
        return nearest(self.map(score), self.values)

    def score(self, score: float) -> float:
        """The verdict normalised to [0, 1] over the labels' range."""
        span = self.high - self.low
        return 0.0 if span == 0 else (self.verdict(score) - self.low) / span


class CalibrationReport(BaseModel):
    """Held-out agreement before and after a calibration, with intervals and gains."""

    model_config = ConfigDict(frozen=True)

    calibration: Calibration
    kind: LabelKind
    n_calibration: int
    n_test: int
    before: Agreement
    after: Agreement
    gains: dict[str, Estimate]
    headline: str
    supported: bool

    def lines(self) -> list[str]:
        """The report as plain text lines: one per metric, then the verdict."""
        out = [
            f"fitted on {self.n_calibration} items, tested on {self.n_test} held-out items "
            f"({self.kind} labels)",
            f"{'metric':<20} {'before':>26} {'after':>26} {'gain':>26}",
        ]
        for name in self.before.metrics:
            out.append(
                f"{name:<20} {self.before[name]!s:>26} {self.after[name]!s:>26} "
                f"{self.gains[name]!s:>26}"
            )
        gain = self.gains[self.headline]
        out.append(
            f"{self.headline}: the gain's interval "
            + ("clears zero: the calibration helps" if self.supported else "does not clear zero")
            + f" ({gain})"
        )
        return out


def nearest(value: float, values: Sequence[float] | None) -> float:
    """``value`` rounded to the nearest of ``values`` (ties: the lower); as is without."""
    if not values:
        return value
    return min(values, key=lambda v: (abs(v - value), v))


def fingerprint(keys: Sequence[Any], scores: Sequence[float], labels: Sequence[float]) -> str:
    """A digest of (key, score, label) triples, independent of their order."""
    rows = sorted(
        orjson.dumps([str(k), s, y]) for k, s, y in zip(keys, scores, labels, strict=True)
    )
    return hashlib.sha256(b"\n".join(rows)).hexdigest()[:16]


def _kind_of(labels: Sequence[float], kind: LabelKind | None) -> LabelKind:
    if kind is not None:
        return kind
    whole = all(float(v).is_integer() for v in labels)
    return "ordinal" if whole and len(set(labels)) <= 10 else "interval"


def fit_calibration(
    scores: Sequence[float | None],
    labels: Sequence[Any],
    *,
    kind: LabelKind | None = None,
    keys: Sequence[Any] | None = None,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    label_field: str = "label",
    source: str | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> CalibrationReport:
    """Fit and check a calibration (see the module docs).

    ``scores``: the judge's 0-1 scores (None where it gave none); ``labels``: numeric labels
    (None or NaN where missing), checked first (:func:`jurist.metrics._labels.check_labels`:
    finite, at least two values, at least 10 labelled); ``keys``: the items' ids for the
    fingerprint (default: their positions); ``kind``: ``ordinal`` (verdicts round to the
    label values) or ``interval``; by default ordinal for at most 10 whole-number values.
    """
    if len(scores) != len(labels):
        raise DataError(f"{len(scores)} scores but {len(labels)} labels")
    if not 0 < calibration_fraction < 1:
        raise DataError(f"calibration_fraction must be in (0, 1), not {calibration_fraction}")
    check_labels(labels, field=label_field, keys=keys, least=MIN_ITEMS, where=source)
    keys = list(range(len(scores))) if keys is None else list(keys)
    rows: list[tuple[Any, float, float]] = []
    for i, (key, s, y) in enumerate(zip(keys, scores, labels, strict=True)):
        if s is None or y is None or (isinstance(y, float) and math.isnan(y)):
            continue
        if isinstance(y, bool) or not isinstance(y, int | float):
            raise DataError(
                f"item {key!r} (row {i + 1}): label {y!r} is not a number; calibration maps "
                "scores onto numeric labels"
            )
        rows.append((key, float(s), float(y)))
    if len(rows) < MIN_ITEMS:
        raise DataError(
            f"calibration needs at least {MIN_ITEMS} items with both a score and a label; "
            f"{len(rows)} of {len(scores)} have both"
        )
    kind = _kind_of([y for _, _, y in rows], kind)
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    cut = min(max(1, round(len(rows) * calibration_fraction)), len(rows) - 1)
    fit_rows = [rows[i] for i in sorted(order[:cut])]
    test_rows = [rows[i] for i in sorted(order[cut:])]
    all_labels = [y for _, _, y in rows]
    low, high = min(all_labels), max(all_labels)
    values = tuple(sorted(set(all_labels))) if kind == "ordinal" else None
    fitted = isotonic_fit([s for _, s, _ in fit_rows], [y for _, _, y in fit_rows])
    calibration = Calibration(
        map=fitted,
        values=values,
        low=low,
        high=high,
        fitted_on=FittedOn(
            fingerprint=fingerprint(*zip(*fit_rows, strict=True)),
            items=len(fit_rows),
            labels=label_field,
            source=source,
        ),
    )
    truth = [y for _, _, y in test_rows]
    before = [nearest(low + s * (high - low), values) for _, s, _ in test_rows]
    after = [calibration.verdict(s) for _, s, _ in test_rows]
    opts: dict[str, Any] = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    gains = {
        name: paired_gain(fn, before, after, truth, **opts) for name, fn in metric_functions(kind)
    }
    headline, sign = HEADLINE[kind]
    gain = gains[headline]
    bound = gain.low if sign > 0 else gain.high
    supported = bound is not None and sign * bound > 0
    return CalibrationReport(
        calibration=calibration,
        kind=kind,
        n_calibration=len(fit_rows),
        n_test=len(test_rows),
        before=agreement(before, truth, kind=kind, **opts),
        after=agreement(after, truth, kind=kind, **opts),
        gains=gains,
        headline=headline,
        supported=supported,
    )
