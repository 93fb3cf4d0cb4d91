"""The verdict coverage of a logprob run: how much probability the judge put on its verdicts.

A logprob score is the expected score renormalised over the scale's verdicts; its
``coverage`` is the probability the model put on those verdicts at all. A run's summary
and report show the distribution of coverage over its weighed judgments (panels' judges
included) and how many fell below the judge's ``min_coverage`` (``low_coverage`` marks
them: failed, fallen back to the parsed verdict, or flagged).

>>> rows = [{"coverage": c, "low_coverage": c < 0.5, "scoring": "logprobs"}
...         for c in (0.0028, 0.6, 0.9, 0.95, 1.0)]
>>> s = CoverageSummary.of([v for r in rows for v in coverages(r)], 0.5)
>>> s.n, s.below, s.min, s.median, s.q1, s.q3
(5, 1, 0.0028, 0.9, 0.6, 0.95)
>>> s.describe()
'median 0.9, quartiles 0.6-0.95, min 0.0028, max 1; 1 of 5 below min_coverage 0.5'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["CoverageSummary", "coverages", "min_coverage_of"]


class CoverageSummary(BaseModel):
    """Coverage over a run's weighed judgments: quartiles, and how many fell below the
    threshold (``min_coverage``: the judge's, ``None`` when its judges differ)."""

    n: int
    min: float
    q1: float
    median: float
    q3: float
    max: float
    below: int
    min_coverage: float | None = None

    @classmethod
    def of(
        cls, values: Sequence[tuple[float, bool]], min_coverage: float | None
    ) -> CoverageSummary | None:
        """The summary of ``(coverage, low_coverage)`` pairs; ``None`` when there are none."""
        if not values:
            return None
        ordered = sorted(v for v, _ in values)
        return cls(
            n=len(ordered),
            min=ordered[0],
            q1=_quantile(ordered, 0.25),
            median=_quantile(ordered, 0.5),
            q3=_quantile(ordered, 0.75),
            max=ordered[-1],
            below=sum(1 for _, low in values if low),
            min_coverage=min_coverage,
        )

    def spread(self) -> str:
        """The median, the quartiles and the extremes."""
        return (
            f"median {self.median:.4g}, quartiles {self.q1:.4g}-{self.q3:.4g}, "
            f"min {self.min:.4g}, max {self.max:.4g}"
        )

    def threshold(self) -> str:
        """``min_coverage 0.5`` (or ``min_coverage`` alone when the judges differ)."""
        return "min_coverage" + ("" if self.min_coverage is None else f" {self.min_coverage:g}")

    def describe(self) -> str:
        """One line: the spread and the count below the threshold."""
        return f"{self.spread()}; {self.below} of {self.n} below {self.threshold()}"


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def coverages(outcome: Any, depth: int = 0) -> list[tuple[float, bool]]:
    """``(coverage, low_coverage)`` of each weighed judgment in a stored outcome: the
    outcome itself, or the judgments inside it (a panel's)."""
    if isinstance(outcome, Mapping):
        coverage = outcome.get("coverage")
        if isinstance(coverage, int | float) and not isinstance(coverage, bool):
            return [(float(coverage), bool(outcome.get("low_coverage")))]
        found: list[tuple[float, bool]] = []
        if depth < 3:
            for value in outcome.values():
                if isinstance(value, Mapping | list):
                    found += coverages(value, depth + 1)
        return found
    if isinstance(outcome, list) and depth < 3:
        return [c for value in outcome for c in coverages(value, depth + 1)]
    return []


def min_coverage_of(judge: Any) -> float | None:
    """The ``min_coverage`` of a run manifest's judge config (a panel's judges included);
    ``None`` when there is none, or when its judges use different ones."""
    found: set[float] = set()
    _collect(judge, found, 0)
    return found.pop() if len(found) == 1 else None


def _collect(config: Any, found: set[float], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(config, Mapping):
        value = config.get("min_coverage")
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.add(float(value))
        for sub in config.values():
            if isinstance(sub, Mapping | list):
                _collect(sub, found, depth + 1)
    elif isinstance(config, list):
        for sub in config:
            _collect(sub, found, depth + 1)
