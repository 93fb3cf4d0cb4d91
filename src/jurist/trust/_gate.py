"""A CI gate on a judged run: does its score clear the bar, given its uncertainty?

:func:`gate_scores` takes the run's scores (one list of repeat scores per item; a run
without repeats has one score per item) and a :class:`Bar`, and checks each part of the
bar against an interval at ``bar.level`` (a two-level bootstrap: items, then each item's
repeats, so a judge that answers unstably widens it; see
:func:`jurist.metrics.two_level_interval`):

- ``min_score``: the mean score must be at least ``min_score``;
- ``max_drop`` (with a baseline run): the mean score may fall below the baseline's by at
  most ``max_drop`` (paired over items when both runs judged the same items).

**The rule.** Each check is ``pass`` when the whole interval clears the bar, ``fail``
when the whole interval misses it, and ``inconclusive`` when the interval straddles it.
By default only a ``fail`` fails the gate: the data say the bar is missed (an
inconclusive check passes with a warning, so a noisy run does not block a pull request on
chance). With ``strict=True`` the gate passes only when every check passes: the data
must say the bar is cleared.

>>> result = gate_scores([[1.0], [1.0], [0.0], [1.0]] * 5, Bar(min_score=0.5))
>>> result.status, result.checks[0].outcome, result.passed
('pass', 'pass', True)
>>> gate_scores([[1.0], [0.0]] * 10, Bar(min_score=0.55)).status
'warn'
>>> gate_scores([[1.0], [0.0]] * 10, Bar(min_score=0.55, strict=True)).passed
False
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from jurist.errors import ConfigError, DataError

if TYPE_CHECKING:
    from jurist.metrics._ppi import PPIEstimate

__all__ = ["Bar", "Check", "GateResult", "gate_corrected", "gate_scores"]

Scores = Sequence[Sequence[float | None]]
Outcome = Literal["pass", "fail", "inconclusive"]


class Bar(BaseModel):
    """What a run must reach: a least mean score and/or a largest drop from a baseline."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_score: float | None = None
    max_drop: float | None = None
    level: float = 0.95
    """The intervals' confidence level."""
    strict: bool = False
    """Pass only when every interval clears its bar (default: fail only when one misses)."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:
            problems = "; ".join(str(p["msg"]).removeprefix("Value error, ") for p in e.errors())
            raise ConfigError(f"gate bar: {problems}") from None

    @model_validator(mode="after")
    def _check(self) -> Bar:
        if self.min_score is None and self.max_drop is None:
            raise ValueError("a gate needs a bar: min_score, or max_drop with a baseline")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be between 0 and 1, got {self.level}")
        if self.max_drop is not None and self.max_drop < 0:
            raise ValueError(f"max_drop must be >= 0, got {self.max_drop}")
        return self


class Check(BaseModel):
    """One part of the bar: the figure, its interval, the bar and the outcome."""

    model_config = ConfigDict(frozen=True)

    name: str
    value: float
    low: float
    high: float
    bar: float
    outcome: Outcome


class GateResult(BaseModel):
    """The gate's verdict: ``status`` ``pass``, ``warn`` (an inconclusive check, default
    rule) or ``fail``; ``passed`` is what a CI job acts on."""

    model_config = ConfigDict(frozen=True)

    status: Literal["pass", "warn", "fail"]
    checks: list[Check]
    level: float
    strict: bool
    items: int
    scored: int
    repeats: int
    """The most repeats an item had (1: a run without repeats)."""

    @property
    def passed(self) -> bool:
        return self.status != "fail"

    def markdown(self, title: str = "jurist gate", *, note: str | None = None) -> str:
        """A short markdown summary for a pull request (or ``$GITHUB_STEP_SUMMARY``)."""
        mark = {"pass": "✅ pass", "warn": "⚠️ inconclusive (passes)", "fail": "❌ fail"}
        pct = f"{self.level:.0%}".rstrip("%") + "%"
        lines = [
            f"### {title}: {mark[self.status]}",
            "",
            f"| check | value | {pct} interval | bar | result |",
            "|---|---|---|---|---|",
        ]
        for c in self.checks:
            lines.append(
                f"| {c.name} | {c.value:.4f} | [{c.low:.4f}, {c.high:.4f}] | ≥ {c.bar:.4f}"
                f" | {c.outcome} |"
            )
        spread = (
            f"{self.repeats} repeats per item at most; intervals resample items, then "
            "repeats within items"
            if self.repeats > 1
            else "one judgment per item; intervals resample items"
        )
        rule = (
            "strict: every interval must clear its bar"
            if self.strict
            else "fails when an interval lies wholly below its bar"
        )
        lines += ["", f"{self.scored} of {self.items} items scored; {spread}. Rule: {rule}."]
        if note:
            lines.append(note)
        return "\n".join(lines) + "\n"


def _outcome(low: float, high: float, bar: float) -> Outcome:
    if low >= bar:
        return "pass"
    if high < bar:
        return "fail"
    return "inconclusive"


def _scored_mean(scores: Scores) -> float:
    means = [
        sum(v) / len(v)
        for v in (
            [float(s) for s in item if s is not None and not math.isnan(s)] for item in scores
        )
        if v
    ]
    return sum(means) / len(means) if means else float("nan")


def _status(checks: list[Check], strict: bool) -> Literal["pass", "warn", "fail"]:
    outcomes = {c.outcome for c in checks}
    if "fail" in outcomes or (strict and outcomes != {"pass"}):
        return "fail"
    if "inconclusive" in outcomes:
        return "warn"
    return "pass"


def gate_corrected(estimate: PPIEstimate, bar: Bar, *, items: int, scored: int) -> GateResult:
    """The gate on an estimate corrected by people's labels (``jurist gate --labels``):
    ``min_score`` against the PPI++ interval (:func:`jurist.metrics.ppi_mean`) instead of
    the judge's own; the judge-only figure is not checked. ``max_drop`` is refused."""
    if bar.min_score is None or bar.max_drop is not None:
        raise ConfigError("a gate on labels checks min_score only (no max_drop / baseline)")
    if abs(estimate.level - bar.level) > 1e-12:
        raise ConfigError(f"the estimate's level {estimate.level} is not the bar's {bar.level}")
    check = Check(
        name=f"mean score corrected by {estimate.labels} labels",
        value=estimate.estimate,
        low=estimate.lower,
        high=estimate.upper,
        bar=bar.min_score,
        outcome=_outcome(estimate.lower, estimate.upper, bar.min_score),
    )
    return GateResult(
        status=_status([check], bar.strict),
        checks=[check],
        level=bar.level,
        strict=bar.strict,
        items=items,
        scored=scored,
        repeats=1,
    )


def gate_scores(
    scores: Scores,
    bar: Bar,
    *,
    baseline: Scores | None = None,
    paired: bool = False,
    n_resamples: int = 2000,
    seed: int = 0,
) -> GateResult:
    """Check ``scores`` (per item, its repeats' scores) against ``bar`` (see the module's
    docs); ``baseline``: the baseline run's scores, for ``max_drop``; ``paired``: both runs
    judged the same items, in the same order."""
    from jurist.metrics._repeats import two_level_difference, two_level_interval

    if bar.max_drop is not None and baseline is None:
        raise ConfigError("max_drop needs a baseline run to compare with")
    scored = sum(1 for item in scores if any(s is not None for s in item))
    if scored < 2:
        raise DataError(f"a gate needs at least two scored items; this run has {scored}")
    checks: list[Check] = []
    if bar.min_score is not None:
        low, high = two_level_interval(
            scores, confidence=bar.level, n_resamples=n_resamples, seed=seed
        )
        checks.append(
            Check(
                name="mean score",
                value=_scored_mean(scores),
                low=low,
                high=high,
                bar=bar.min_score,
                outcome=_outcome(low, high, bar.min_score),
            )
        )
    if bar.max_drop is not None and baseline is not None:
        diff, low, high = two_level_difference(
            scores,
            baseline,
            paired=paired,
            confidence=bar.level,
            n_resamples=n_resamples,
            seed=seed,
        )
        if math.isnan(diff):
            raise DataError("the baseline run needs at least two scored items")
        checks.append(
            Check(
                name="change from baseline",
                value=diff,
                low=low,
                high=high,
                bar=-bar.max_drop,
                outcome=_outcome(low, high, -bar.max_drop),
            )
        )
    status = _status(checks, bar.strict)
    return GateResult(
        status=status,
        checks=checks,
        level=bar.level,
        strict=bar.strict,
        items=len(scores),
        scored=scored,
        repeats=max((len(item) for item in scores), default=1),
    )
