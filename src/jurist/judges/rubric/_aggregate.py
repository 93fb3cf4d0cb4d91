"""Turn the judges' votes on one criterion into its final verdict.

Abstentions (CANNOT_ASSESS, an NA option, a vote lost to a failed call) are set aside
first; when every vote abstains the criterion abstains. Then:

- binary: ``majority`` (head count), ``weighted`` (judge weights), ``unanimous`` (MET only
  when no judge says UNMET), ``any`` (MET when any judge says MET);
- ordinal: ``mean``, ``median``, ``weighted_mean`` (the continuous value is kept as
  ``aggregated_value`` and snapped to the nearest scored option), ``mode``, ``min`` /
  ``max`` (the lowest / highest option some judge chose);
- nominal: ``mode``, ``weighted_mode``, ``unanimous`` (on disagreement the NA option; with
  no NA option, ``mode`` and a note saying so).

Ties (a head-count or weight tie, a mode tie, a snap exactly half-way) go to the
score-minimising candidate: UNMET / the lowest value for a weight >= 0, MET / the highest
value for a negative weight, the lowest index on equal values. No rule depends on the order
of the votes.

>>> from jurist.judges.rubric._criteria import Criterion
>>> from jurist.judges.rubric._report import Vote
>>> c = Criterion(requirement="r")
>>> votes = [Vote(judge_id="a", verdict=CriterionVerdict.MET),
...          Vote(judge_id="b", verdict=CriterionVerdict.UNMET)]
>>> aggregate(c, votes, "majority").final.verdict   # a tie: the score-minimising verdict
<CriterionVerdict.UNMET: 'UNMET'>
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from jurist.errors import ConfigError
from jurist.judges.rubric._criteria import Criterion, CriterionVerdict
from jurist.judges.rubric._report import FinalVerdict, Vote

__all__ = ["BINARY_AGGREGATIONS", "Aggregated", "aggregate", "agreement"]

logger = logging.getLogger("jurist.rubric")

BINARY_AGGREGATIONS: tuple[str, ...] = ("majority", "weighted", "unanimous", "any")


@dataclass(frozen=True, slots=True)
class Aggregated:
    """A criterion's final verdict, how many votes it used, and a note on any fallback."""

    final: FinalVerdict
    n_counted: int
    note: str | None = None


def _abstains(vote: Vote) -> bool:
    return vote.na or vote.is_error or vote.verdict is CriterionVerdict.CANNOT_ASSESS


def _option_verdict(
    criterion: Criterion, index: int, aggregated: float | None = None
) -> FinalVerdict:
    option = (criterion.options or ())[index]
    value = None if option.na else option.value
    return FinalVerdict(
        selected_index=index,
        selected_label=option.label,
        value=value,
        na=option.na,
        aggregated_value=value if aggregated is None else aggregated,
    )


def _abstained(criterion: Criterion, votes: Sequence[Vote]) -> FinalVerdict:
    if criterion.options is None:
        return FinalVerdict(verdict=CriterionVerdict.CANNOT_ASSESS, na=True)
    # Prefer an NA option some judge actually chose, else the criterion's NA option; with
    # neither (forced choice and only failed calls) nothing is selected.
    chosen = sorted({v.selected_index for v in votes if v.selected_index is not None})
    index = chosen[0] if chosen else criterion.na_index
    if index is None:
        return FinalVerdict(na=True)
    return _option_verdict(criterion, index)


def _binary(criterion: Criterion, votes: Sequence[Vote], strategy: str) -> FinalVerdict:
    met = [v for v in votes if v.verdict is CriterionVerdict.MET]
    unmet = [v for v in votes if v.verdict is CriterionVerdict.UNMET]
    if strategy == "unanimous":
        verdict = CriterionVerdict.UNMET if unmet else CriterionVerdict.MET
    elif strategy == "any":
        verdict = CriterionVerdict.MET if met else CriterionVerdict.UNMET
    else:
        if strategy == "majority":
            yes, no = float(len(met)), float(len(unmet))
        else:  # weighted
            yes, no = sum(v.weight for v in met), sum(v.weight for v in unmet)
        if yes > no:
            verdict = CriterionVerdict.MET
        elif no > yes:
            verdict = CriterionVerdict.UNMET
        else:
            verdict = CriterionVerdict.MET if criterion.weight < 0 else CriterionVerdict.UNMET
    value = 1.0 if verdict is CriterionVerdict.MET else 0.0
    return FinalVerdict(
        verdict=verdict, selected_label=verdict.value, value=value, aggregated_value=value
    )


def _mode(criterion: Criterion, votes: Sequence[Vote], weighted: bool) -> int:
    tally: dict[int, float] = {}
    for v in votes:
        assert v.selected_index is not None
        tally[v.selected_index] = tally.get(v.selected_index, 0.0) + (v.weight if weighted else 1)
    top = max(tally.values())
    return criterion.worst_among(i for i, t in tally.items() if t == top)


def _snap(criterion: Criterion, value: float) -> int:
    options = criterion.options or ()
    distance = {i: abs((o.value or 0.0) - value) for i, o in enumerate(options) if not o.na}
    best = min(distance.values())
    return criterion.worst_among(
        i for i, d in distance.items() if math.isclose(d, best, rel_tol=0.0, abs_tol=1e-9)
    )


def _ordinal(criterion: Criterion, votes: Sequence[Vote], strategy: str) -> FinalVerdict:
    values = [v.value or 0.0 for v in votes]
    if strategy == "mode":
        return _option_verdict(criterion, _mode(criterion, votes, weighted=False))
    if strategy in ("min", "max"):
        chosen = {v.selected_index for v in votes if v.selected_index is not None}
        options = criterion.options or ()
        sign = 1.0 if strategy == "min" else -1.0
        index = min(chosen, key=lambda i: (sign * (options[i].value or 0.0), i))
        return _option_verdict(criterion, index)
    if strategy == "median":
        aggregated = float(statistics.median(values))
    elif strategy == "weighted_mean":
        total = sum(v.weight for v in votes)
        aggregated = sum(v.weight * x for v, x in zip(votes, values, strict=True)) / total
    else:  # mean
        aggregated = sum(values) / len(values)
    return _option_verdict(criterion, _snap(criterion, aggregated), aggregated)


def _nominal(
    criterion: Criterion, votes: Sequence[Vote], strategy: str
) -> tuple[FinalVerdict, str | None]:
    if strategy == "weighted_mode":
        return _option_verdict(criterion, _mode(criterion, votes, weighted=True)), None
    if strategy == "unanimous":
        chosen = sorted({v.selected_index for v in votes if v.selected_index is not None})
        if len(chosen) == 1:
            return _option_verdict(criterion, chosen[0]), None
        if criterion.na_index is not None:
            return _option_verdict(criterion, criterion.na_index), None
        note = (
            f"unanimous: judges disagreed (options {chosen}) and the criterion has no NA "
            "option; fell back to mode"
        )
        logger.warning("criterion %r: %s", criterion.name or criterion.requirement[:40], note)
        return _option_verdict(criterion, _mode(criterion, votes, weighted=False)), note
    return _option_verdict(criterion, _mode(criterion, votes, weighted=False)), None


def strategy_for(criterion: Criterion, binary: str, ordinal: str, nominal: str) -> str:
    """The aggregation a criterion uses: its own override, else the grader's for its kind."""
    if criterion.options is None:
        return binary
    if criterion.aggregation is not None:
        return criterion.aggregation
    return ordinal if criterion.scale_type == "ordinal" else nominal


def aggregate(criterion: Criterion, votes: Sequence[Vote], strategy: str) -> Aggregated:
    """The final verdict of ``votes`` on ``criterion`` under ``strategy``."""
    counted = [v for v in votes if not _abstains(v)]
    if not counted:
        return Aggregated(_abstained(criterion, votes), 0)
    if criterion.options is None:
        if strategy not in BINARY_AGGREGATIONS:
            raise ConfigError(f"unknown binary aggregation {strategy!r}")
        return Aggregated(_binary(criterion, counted, strategy), len(counted))
    if criterion.scale_type == "ordinal":
        return Aggregated(_ordinal(criterion, counted, strategy), len(counted))
    final, note = _nominal(criterion, counted, strategy)
    return Aggregated(final, len(counted), note)


def agreement(final: FinalVerdict, votes: Sequence[Vote]) -> float | None:
    """The share of genuine votes (failed calls left out) that match the final verdict."""
    genuine = [v for v in votes if not v.is_error]
    if not genuine:
        return None
    if final.verdict is not None:
        same = sum(1 for v in genuine if v.verdict is final.verdict)
    else:
        same = sum(1 for v in genuine if v.selected_index == final.selected_index)
    return same / len(genuine)
