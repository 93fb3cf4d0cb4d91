"""What a cascade records per item, and how a tier's confidence is read from its outcome.

:class:`CascadeJudgment` is a cascade's verdict on one item: the score of the tier that
decided (``tier``, ``tier_name``, ``confidence``), or, when no tier was confident enough,
``score=None`` with ``abstained=True`` and an ``"abstain: ..."`` error (the item is for
people, never given a made-up score). ``steps`` holds one :class:`TierStep` per tier
that was asked; ``judgments`` holds each tier's own outcome in tier order, a
:class:`NotAsked` for the tiers the item never reached (so a cost can be read per tier).

:func:`outcome_confidence` reads a tier's confidence from its outcome:

- an outcome with a ``confidence`` (an :class:`~jurist.LLMJudge` scoring from logprobs:
  the top verdict's probability);
- a panel's outcome: the share of its judges that gave the most common score (a judge
  that failed does not agree);
- a pairwise outcome: the mean of its orders' confidences (each from logprobs);
  ``None`` when its two orders named different winners;
- anything else: ``None`` (the tier cannot be trusted on that item: it passes it on).

>>> from jurist.types import Judgment
>>> outcome_confidence(Judgment(score=1.0, confidence=0.93))
0.93
>>> outcome_confidence(Judgment(score=1.0)) is None
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist.judges import PairJudgment, PanelJudgment
from jurist.judges._many import OutcomeResults
from jurist.metrics import confidence_from_panel
from jurist.types import Usage

__all__ = [
    "CascadeJudgment",
    "CascadeResults",
    "ConfidenceFn",
    "NotAsked",
    "TierStep",
    "outcome_confidence",
    "outcome_field",
]

ConfidenceFn = Callable[[Any], float | None]
"""Reads a tier's confidence (higher: surer) from its outcome; ``None`` when it has none."""


class NotAsked(BaseModel):
    """Stands in for the outcome of a tier an item never reached (no call, no usage)."""

    model_config = ConfigDict(frozen=True)

    score: float | None = None
    error: str | None = None
    asked: bool = False  # always False: tells it apart in a stored record
    usage: Usage = Usage()


class TierStep(BaseModel):
    """One tier's pass over an item: its score, its confidence against its threshold, and
    whether it decided the item (``certified``)."""

    model_config = ConfigDict(frozen=True)

    tier: int
    name: str
    score: float | None
    confidence: float | None
    threshold: float | None
    certified: bool
    error: str | None = None
    usage: Usage = Usage()


class CascadeJudgment(BaseModel):
    """A cascade's verdict on one item (see the module docs); ``verdict`` is the deciding
    tier's own (its ``verdict``, or a pairwise judge's ``winner``)."""

    model_config = ConfigDict(frozen=True)

    score: float | None
    error: str | None = None
    verdict: str | float | None = None
    tier: int | None = None
    tier_name: str | None = None
    confidence: float | None = None
    abstained: bool = False
    steps: tuple[TierStep, ...] = ()
    judgments: tuple[Any, ...] = ()
    usage: Usage = Usage()

    @property
    def ok(self) -> bool:
        return self.score is not None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def outcome_field(outcome: Any, key: str) -> Any:
    """An outcome's field, from the object or from its stored (``model_dump``) form."""
    if isinstance(outcome, Mapping):
        return outcome.get(key)
    return getattr(outcome, key, None)


def outcome_confidence(outcome: Any) -> float | None:
    """A tier's confidence from its outcome (see the module docs), ``None`` when it has none.

    It takes the outcome object or its stored form (a run's ``rows()[i]["outcome"]``).
    """
    if isinstance(outcome, PanelJudgment) or (
        isinstance(outcome, Mapping) and "aggregation" in outcome and "judgments" in outcome
    ):
        judgments = outcome_field(outcome, "judgments") or ()
        scores = [_finite(outcome_field(j, "score")) for j in judgments]
        if not scores:
            return None
        share = confidence_from_panel([scores]).confidence[0]
        counted = sum(1 for s in scores if s is not None)
        return _finite(share * counted / len(scores))
    if isinstance(outcome, PairJudgment) or (isinstance(outcome, Mapping) and "forward" in outcome):
        if outcome_field(outcome, "consistent") is False:  # the two orders named different winners
            return None
        swapped = outcome_field(outcome, "swapped")
        orders = [outcome_field(outcome, "forward")] + ([swapped] if swapped else [])
        values = [_finite(outcome_field(o, "confidence")) for o in orders]
        if any(v is None for v in values):
            return None
        return sum(v for v in values if v is not None) / len(values)
    return _finite(outcome_field(outcome, "confidence"))


class CascadeResults(OutcomeResults[CascadeJudgment]):
    """A cascade's judgments of a batch, in input order: which tier decided each item."""

    def __init__(
        self,
        judgments: Sequence[CascadeJudgment],
        items: Sequence[dict[str, Any]] | None = None,
        *,
        tier_names: Sequence[str] = (),
    ) -> None:
        super().__init__(judgments, items)
        self.tier_names = tuple(tier_names)

    def _sliced(
        self, outcomes: Sequence[CascadeJudgment], items: Sequence[dict[str, Any]] | None
    ) -> CascadeResults:
        return CascadeResults(outcomes, items, tier_names=self.tier_names)

    @property
    def tiers(self) -> list[int | None]:
        """Per item, the tier that decided it (``None``: abstained)."""
        return [j.tier for j in self]

    @property
    def abstained(self) -> list[int]:
        """The indices of the items no tier decided (for people)."""
        return [i for i, j in enumerate(self) if j.abstained]

    def _columns(self, outcome: CascadeJudgment) -> dict[str, Any]:
        """``cascade_*`` columns."""
        j = outcome
        return {
            "cascade_score": j.score,
            "cascade_error": j.error,
            "cascade_tier": j.tier_name,
            "cascade_confidence": j.confidence,
            "cascade_abstained": j.abstained,
            "cascade_tiers_asked": len(j.steps),
        }
