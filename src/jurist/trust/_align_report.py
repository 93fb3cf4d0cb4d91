"""What an alignment reports: the plan and its cost, each candidate tried, and held-out
agreement before and after with intervals and paired gains.

:attr:`AlignReport.supported` is True only when the headline metric's paired gain
interval lies wholly on the better side of zero and the aligned judge fails on no more
held-out items than the judge it started from; otherwise the report says
"no supported gain" and claims nothing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.judges._examples import Example
from jurist.metrics import Agreement, Estimate
from jurist.trust._align_data import LabelSpace
from jurist.trust._calibrate import Calibration, FittedOn

__all__ = ["AlignPlan", "AlignReport", "Candidate"]


class AlignPlan(BaseModel):
    """The sizes of the search and the most judge calls it may take (said up front)."""

    model_config = ConfigDict(frozen=True)

    items: int
    pick: int
    score: int
    held_out: int
    pool: int
    max_examples: int
    proposer_rounds: int
    budget: int
    baseline_calls: int
    """Calls to judge the score slice and the held-out part with the starting judge
    (0 when the run's recorded scores are used)."""
    search_calls: int
    """The most the search could take: every step tries every candidate left, each judged
    on the score slice, plus each proposal (1 proposer call and the score slice)."""
    final_calls: int
    """The held-out part judged once by the aligned judge."""

    def lines(self) -> list[str]:
        most = self.baseline_calls + self.search_calls + self.final_calls
        return [
            f"{self.items} labelled items: {self.pick} to pick examples from, {self.score} to "
            f"score candidates on, {self.held_out} held out",
            f"plan: up to {self.max_examples} example(s) from a pool of {self.pool}"
            + (f", {self.proposer_rounds} proposer round(s)" if self.proposer_rounds else "")
            + f"; each candidate costs {self.score} judge calls",
            f"cost: at most {most} calls ({self.baseline_calls} baseline, {self.search_calls} "
            f"search, {self.final_calls} held-out check); budget {self.budget}",
        ]


class Candidate(BaseModel):
    """One change tried on the score slice, and what it gave there."""

    model_config = ConfigDict(frozen=True)

    step: int
    kind: Literal["example", "instructions"]
    key: str | None = None
    """The example's item key (for ``example``)."""
    metric: float
    failed: int
    accepted: bool = False


class AlignReport(BaseModel):
    """The whole alignment, as JSON (see the module docs)."""

    model_config = ConfigDict(frozen=True)

    plan: AlignPlan
    space: LabelSpace
    headline: str
    fitted_on: FittedOn
    """The train part (pick and score slices): a digest of its keys, scores and labels."""
    examples: tuple[Example, ...]
    example_keys: tuple[str, ...]
    instructions: str | None
    """New instructions from the proposer, when one was kept."""
    calibration: Calibration | None
    train_before: float
    train_after: float
    candidates: tuple[Candidate, ...]
    stopped: str
    """Why the search stopped."""
    calls: int
    """Judge and proposer calls made (items judged, proposals asked)."""
    n_test: int
    before: Agreement
    after: Agreement
    failed_before: int
    failed_after: int
    gains: dict[str, Estimate]
    supported: bool
    changed: bool
    """False when nothing raised train agreement: the judge is the one it started from."""

    def verdict(self) -> str:
        """One line: the gain supported, or ``no supported gain`` and why."""
        gain = self.gains[self.headline]
        if not self.changed:
            return "no supported gain: nothing raised agreement on the train slice"
        if self.supported:
            return f"supported gain: held-out {self.headline} {gain} (paired, 95%)"
        if self.failed_after > self.failed_before:
            return (
                f"no supported gain: the aligned judge failed on {self.failed_after} held-out "
                f"items, the judge before on {self.failed_before}"
            )
        return f"no supported gain: held-out {self.headline} gain {gain} includes zero"

    def lines(self) -> list[str]:
        """The report as plain text lines."""
        out = self.plan.lines()
        tried = len(self.candidates)
        out.append(
            f"search: {tried} candidate(s) tried, {self.calls} calls; {self.stopped}; "
            f"train {self.headline} {self.train_before:.4f} -> {self.train_after:.4f}"
        )
        out.append(
            "examples chosen: " + (", ".join(self.example_keys) if self.example_keys else "none")
        )
        if self.instructions is not None:
            out.append("instructions: the proposer's, kept")
        if self.calibration is not None:
            out.append("calibration: a monotone map on top (it raised cross-fitted agreement)")
        out.append(
            f"held out: {self.n_test} items; failed before {self.failed_before}, "
            f"after {self.failed_after}"
        )
        out.append(f"{'metric':<20} {'before':>26} {'after':>26} {'gain':>26}")
        for name in self.before.metrics:
            out.append(
                f"{name:<20} {self.before[name]!s:>26} {self.after[name]!s:>26} "
                f"{self.gains[name]!s:>26}"
            )
        out.append(self.verdict())
        return out

    def record(self) -> dict[str, Any]:
        """What a saved catalog entry keeps of this alignment (``alignment:``)."""

        def figure(est: Estimate) -> dict[str, Any]:
            return {"value": est.value, "low": est.low, "high": est.high}

        return {
            "fitted_on": self.fitted_on.model_dump(mode="json"),
            "examples": list(self.example_keys),
            "instructions_changed": self.instructions is not None,
            "calibrated": self.calibration is not None,
            "metric": self.headline,
            "held_out": self.n_test,
            "before": figure(self.before[self.headline]),
            "after": figure(self.after[self.headline]),
            "gain": figure(self.gains[self.headline]),
            "supported": self.supported,
            "calls": self.calls,
        }
