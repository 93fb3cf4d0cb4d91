"""The audit's results: one :class:`ProbeResult` per probe, gathered in an :class:`AuditReport`.

Every probe measures an **effect on the scale of verdicts**, in ``[-1, 1]``: the share of
verdicts the bias swings. For the position probe it is ``P(first shown wins) - P(second
shown wins)``; for verbosity and format, ``P(rewritten copy wins) - P(original wins)`` over
both orders (so position cancels); for self-preference, how much more the judge's own
model's answers win under it than under a reference judge. 0 is no bias.

The verdict compares the effect's interval with the threshold ``t``: **pass** when the whole
interval lies inside ``[-t, t]``, **fail** when it lies wholly outside, **inconclusive**
otherwise (more items would settle it); **skipped** when the probe could not run, with the
reason.

>>> r = ProbeResult.measured("position", [0.2, 0.4, 0.0, 0.2] * 25, threshold=0.1, n_failed=0)
>>> round(r.effect, 2), r.verdict
(0.2, 'fail')
>>> ProbeResult.skip("self_preference", "needs a reference judge").verdict
'skipped'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from jurist.metrics import bootstrap_interval

__all__ = ["AuditReport", "ProbeResult", "Verdict"]

Verdict = Literal["pass", "fail", "inconclusive", "skipped"]

DESCRIPTIONS = {
    "position": "P(first shown wins) - P(second shown wins), on the user's pairs",
    "verbosity": "P(padded copy wins) - P(original wins); the copy adds only filler",
    "format": "P(markdown copy wins) - P(original wins); same sentences as a list",
    "self_preference": "win rate of the judge model's own answers: this judge minus a reference",
}


class ProbeResult(BaseModel):
    """One probe: its effect with a percentile bootstrap interval, threshold and verdict."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    effect: float | None
    lower: float | None
    upper: float | None
    level: float
    threshold: float
    verdict: Verdict
    n: int
    n_failed: int
    reason: str | None = None

    @classmethod
    def measured(
        cls,
        name: str,
        effects: Sequence[float],
        *,
        threshold: float,
        n_failed: int,
        level: float = 0.95,
        n_resamples: int = 2000,
        seed: int = 0,
    ) -> ProbeResult:
        """The result from per-item effects (items whose judging failed already left out)."""
        e = np.asarray(effects, dtype=float)
        if e.size == 0:
            return cls.skip(name, f"no item was judged in both orders ({n_failed} failed)",
                            threshold=threshold, n_failed=n_failed)  # fmt: skip
        rng = np.random.default_rng(seed)
        means = e[rng.integers(0, e.size, (n_resamples, e.size))].mean(axis=1)
        lower, upper = bootstrap_interval(means, level)
        if -threshold <= lower and upper <= threshold:
            verdict: Verdict = "pass"
        elif lower > threshold or upper < -threshold:
            verdict = "fail"
        else:
            verdict = "inconclusive"
        return cls(
            name=name,
            description=DESCRIPTIONS.get(name, name),
            effect=float(e.mean()),
            lower=lower,
            upper=upper,
            level=level,
            threshold=threshold,
            verdict=verdict,
            n=int(e.size),
            n_failed=n_failed,
        )

    @classmethod
    def skip(
        cls, name: str, reason: str, *, threshold: float = math.nan, n_failed: int = 0
    ) -> ProbeResult:
        """A probe that did not run, and why."""
        return cls(
            name=name,
            description=DESCRIPTIONS.get(name, name),
            effect=None,
            lower=None,
            upper=None,
            level=0.95,
            threshold=threshold,
            verdict="skipped",
            n=0,
            n_failed=n_failed,
            reason=reason,
        )


class AuditReport(BaseModel):
    """All probes of one judge on one data set."""

    model_config = ConfigDict(frozen=True)

    judge: str
    reference: str | None
    n_items: int
    probes: list[ProbeResult]

    def __getitem__(self, name: str) -> ProbeResult:
        for p in self.probes:
            if p.name == name:
                return p
        raise KeyError(f"no probe {name!r}; ran: {[p.name for p in self.probes]}")

    @property
    def passed(self) -> bool:
        """True when no probe failed (skipped and inconclusive ones do not fail the audit)."""
        return all(p.verdict != "fail" for p in self.probes)

    def to_markdown(self) -> str:
        """The report as a markdown page (what ``jurist audit`` writes to audit.md)."""
        lines = [
            f"# Bias audit of {self.judge}",
            "",
            f"{self.n_items} items"
            + (f"; reference judge {self.reference}" if self.reference else "")
            + ". Effects are shares of verdicts swung by the bias, in [-1, 1]; 0 is none.",
            "",
            "| probe | effect | interval | threshold | verdict | items | failed |",
            "| --- | ---: | --- | ---: | --- | ---: | ---: |",
        ]
        for p in self.probes:
            if p.effect is None or p.lower is None or p.upper is None:
                lines.append(f"| {p.name} | - | - | - | skipped: {p.reason} | 0 | {p.n_failed} |")
                continue
            lines.append(
                f"| {p.name} | {p.effect:+.3f} | [{p.lower:+.3f}, {p.upper:+.3f}] "
                f"({p.level:.0%}) | {p.threshold:.2f} | {p.verdict} | {p.n} | {p.n_failed} |"
            )
        lines += ["", *(f"- **{p.name}**: {p.description}" for p in self.probes), ""]
        return "\n".join(lines)
