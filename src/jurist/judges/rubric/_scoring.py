"""The one scoring rule, shared by grader reports, ground truth and datasets.

Score = the weighted sum over the criteria that count, divided by the total positive weight
of those criteria, clamped to [0, 1]. A criterion the judges could not assess (binary
CANNOT_ASSESS, an NA option, a vote lost to a failed call) is handled by the
``cannot_assess`` strategy:

- ``"skip"`` (default): left out of the sum and of the total weight;
- ``"zero"``: counts with a contribution of 0;
- ``"partial"``: counts with ``partial_credit`` x weight (positive weights only, else 0);
- ``"fail"``: counts as its worst outcome (UNMET / the lowest option for a positive weight,
  MET / the highest option for a negative one).

When no criterion counts the score is ``None``, never 0.0. With no positive weight among the
counted criteria (a rubric of penalties only) the score is ``1 + sum / total negative
weight``, so a clean submission scores 1.

>>> s = [ScoredCriterion(weight=10, value=1.0), ScoredCriterion(weight=-5, value=1.0),
...      ScoredCriterion(weight=5, value=None, na=True, worst_value=0.0)]
>>> weighted_score(s), round(weighted_score(s, cannot_assess="zero"), 4)
(0.5, 0.3333)
>>> weighted_score(s, normalize=False)
5.0
>>> weighted_score([ScoredCriterion(weight=3, value=None, na=True)]) is None
True
>>> weighted_score([ScoredCriterion(weight=0, value=1.0)]) is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from jurist.judges.rubric._criteria import Criterion, CriterionVerdict

__all__ = ["CannotAssess", "ScoredCriterion", "scored_from_label", "weighted_score"]

CannotAssess = Literal["skip", "zero", "partial", "fail"]
"""How a "cannot assess" verdict scores: left out, as 0, as partial credit, or a failure."""
CANNOT_ASSESS_STRATEGIES: tuple[str, ...] = ("skip", "zero", "partial", "fail")


@dataclass(frozen=True, slots=True)
class ScoredCriterion:
    """What scoring needs of one criterion's final verdict.

    ``value``: the earned fraction in [0, 1] (``None`` when ``na``); ``worst_value``: the
    fraction of the worst outcome, used by the ``"fail"`` strategy.
    """

    weight: float
    value: float | None
    na: bool = False
    worst_value: float = 0.0


def worst_value(criterion: Criterion) -> float:
    """The value of a criterion's score-minimising outcome (for the ``"fail"`` strategy)."""
    if criterion.options is None:
        return 1.0 if criterion.weight < 0 else 0.0
    v = criterion.options[criterion.worst_scored()].value
    return 0.0 if v is None else v


def scored_from_label(criterion: Criterion, label: CriterionVerdict | str) -> ScoredCriterion:
    """A ground-truth label (a binary verdict or an option label) as a scored criterion."""
    worst = worst_value(criterion)
    if criterion.options is None:
        try:
            verdict = CriterionVerdict(str(label).strip().upper())
        except ValueError:
            raise ValueError(
                f"{label!r} is not a binary verdict (MET, UNMET or CANNOT_ASSESS)"
            ) from None
        if verdict is CriterionVerdict.CANNOT_ASSESS:
            return ScoredCriterion(criterion.weight, None, na=True, worst_value=worst)
        value = 1.0 if verdict is CriterionVerdict.MET else 0.0
        return ScoredCriterion(criterion.weight, value, worst_value=worst)
    if isinstance(label, CriterionVerdict):
        raise ValueError(f"a multi-choice criterion takes an option label, not {label.value}")
    option = criterion.options[criterion.option_index(label)]
    if option.na:
        return ScoredCriterion(criterion.weight, None, na=True, worst_value=worst)
    return ScoredCriterion(criterion.weight, option.value, worst_value=worst)


def _contribution(
    c: ScoredCriterion, cannot_assess: CannotAssess, partial_credit: float
) -> float | None:
    if not c.na:
        return (c.value or 0.0) * c.weight
    if cannot_assess == "skip":
        return None
    if cannot_assess == "zero":
        return 0.0
    if cannot_assess == "partial":
        return partial_credit * c.weight if c.weight > 0 else 0.0
    return c.worst_value * c.weight


def weighted_score(
    criteria: Sequence[ScoredCriterion],
    *,
    cannot_assess: CannotAssess = "skip",
    partial_credit: float = 0.5,
    normalize: bool = True,
) -> float | None:
    """The weighted score (see the module docs); ``normalize=False`` gives the raw sum."""
    total = 0.0
    positive = 0.0
    negative = 0.0
    counted = 0
    for c in criteria:
        contribution = _contribution(c, cannot_assess, partial_credit)
        if contribution is None:
            continue
        counted += 1
        total += contribution
        if c.weight > 0:
            positive += c.weight
        else:
            negative -= c.weight
    if counted == 0:
        return None
    if not normalize:
        return total
    if positive > 0:
        return min(1.0, max(0.0, total / positive))
    if negative > 0:
        return min(1.0, max(0.0, 1.0 + total / negative))
    return None  # only zero-weight criteria counted: nothing carries weight, no score
