"""Grade reports: every judge's vote, each criterion's final verdict, the item's score.

All are pydantic models (``model_dump`` gives the record a run store keeps). A vote that a
failed call stands in for carries the call's error (``"category: message"``) and is an
abstention: ``is_error`` is true, ``na`` is true, and it never counts for or against the
submission.

>>> v = Vote(judge_id="a", verdict=CriterionVerdict.MET, selected_label="MET", value=1.0)
>>> v.is_error, v.label
(False, 'MET')
>>> Vote(judge_id="b", na=True, error="timeout: no answer").is_error
True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jurist.judges.rubric._criteria import CriterionVerdict
from jurist.types import Usage

__all__ = ["CriterionReport", "FinalVerdict", "GradeReport", "Vote"]


class Vote(BaseModel):
    """One judge's answer on one criterion.

    Binary criteria set ``verdict`` (and ``selected_label`` to its name); multi-choice
    criteria set ``selected_index`` (in the rubric's order, whatever order the judge saw)
    and ``selected_label``. ``value`` is what the answer earns in [0, 1] (``None`` when
    ``na``). ``shuffle_order[shown_position] = rubric_index`` is the order the judge saw the
    options in (``None`` without shuffling). ``reason`` is the judge's short explanation,
    ``reasoning`` its thinking trace when the backend returns one.
    """

    model_config = ConfigDict(frozen=True)

    judge_id: str
    verdict: CriterionVerdict | None = None
    selected_index: int | None = None
    selected_label: str | None = None
    value: float | None = None
    na: bool = False
    reason: str | None = None
    weight: float = 1.0
    shuffle_order: list[int] | None = None
    error: str | None = None
    reasoning: str | None = None

    @property
    def is_error(self) -> bool:
        """Whether this vote stands in for a failed call (an abstention, not a judgment)."""
        return self.error is not None

    @property
    def label(self) -> str | None:
        """The answer as a label: ``MET`` / ``UNMET`` / ``CANNOT_ASSESS`` or the option label."""
        return self.verdict.value if self.verdict is not None else self.selected_label


class FinalVerdict(BaseModel):
    """A criterion's aggregated verdict.

    ``aggregated_value`` keeps the continuous result of ``mean`` / ``median`` /
    ``weighted_mean`` before it was snapped to the nearest option (for the other
    aggregations it equals ``value``).
    """

    model_config = ConfigDict(frozen=True)

    verdict: CriterionVerdict | None = None
    selected_index: int | None = None
    selected_label: str | None = None
    value: float | None = None
    na: bool = False
    aggregated_value: float | None = None

    @property
    def label(self) -> str | None:
        return self.verdict.value if self.verdict is not None else self.selected_label


class CriterionReport(BaseModel):
    """One criterion of a grade: its final verdict, every vote, and how much judges agreed.

    ``agreement``: the share of genuine votes (failed calls left out) that match the final
    verdict; ``None`` when there was none. ``n_counted``: the votes the aggregation used
    (abstentions and failed calls set aside). ``error``: set when every vote failed.
    ``note``: what the aggregation had to do that the caller should know (a fallback).
    """

    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    kind: Literal["binary", "ordinal", "nominal"]
    weight: float
    section: str | None = None
    aggregation: str
    final: FinalVerdict
    votes: list[Vote] = Field(default_factory=list)
    agreement: float | None = None
    n_counted: int = 0
    reason: str | None = None
    error: str | None = None
    note: str | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def na(self) -> bool:
        return self.final.na


class GradeReport(BaseModel):
    """A graded submission.

    ``score``: normalised to [0, 1], or ``None`` when nothing could be scored (every
    criterion abstained under ``"skip"``) or every judgment failed (then ``error`` says
    why, ``"category: message"``). ``raw_score``: the unnormalised weighted sum (for
    rewards). ``judge_scores``: each judge's own score from its votes alone.
    ``output_note``: what a judge's backend changed about the calls (a JSON schema sent in
    a fallback form the server takes; :attr:`jurist.types.Completion.format_note`).
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    raw_score: float | None = None
    error: str | None = None
    criteria: list[CriterionReport] = Field(default_factory=list)
    judge_scores: dict[str, float | None] = Field(default_factory=dict)
    mean_agreement: float | None = None
    cannot_assess_count: int = 0
    usage: Usage = Usage()
    latency: float = 0.0
    calls: Literal["per_item", "per_criterion"] = "per_item"
    seed: int | None = None
    notes: list[str] = Field(default_factory=list)
    output_note: str | None = None

    @property
    def ok(self) -> bool:
        return self.score is not None

    @property
    def verdicts(self) -> list[str | None]:
        """The final verdicts as labels, in rubric order (the form of ground truth)."""
        return [c.final.label for c in self.criteria]

    def criterion(self, name: str) -> CriterionReport:
        """The report of the criterion with this name."""
        for c in self.criteria:
            if c.name == name:
                return c
        raise KeyError(f"no criterion {name!r}; the criteria are {[c.name for c in self.criteria]}")

    def to_records(self, *, votes: bool = False) -> list[dict[str, Any]]:
        """One flat dict per criterion (``votes=True``: one per vote)."""
        rows: list[dict[str, Any]] = []
        for c in self.criteria:
            base: dict[str, Any] = {
                "criterion": c.name,
                "index": c.index,
                "kind": c.kind,
                "section": c.section,
                "weight": c.weight,
            }
            if not votes:
                rows.append(
                    {
                        **base,
                        "verdict": c.final.label,
                        "selected_index": c.final.selected_index,
                        "value": c.final.value,
                        "na": c.final.na,
                        "aggregated_value": c.final.aggregated_value,
                        "agreement": c.agreement,
                        "n_votes": len(c.votes),
                        "n_counted": c.n_counted,
                        "error": c.error,
                        "reason": c.reason,
                    }
                )
                continue
            for v in c.votes:
                row = {**base, **v.model_dump(mode="json", exclude={"verdict"})}
                row["verdict"] = v.label
                rows.append(row)
        return rows

    def to_pandas(self, *, votes: bool = False) -> Any:
        """A pandas DataFrame of :meth:`to_records` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            from jurist.errors import MissingDependencyError

            raise MissingDependencyError("pandas", "dev", "GradeReport.to_pandas()") from e
        return pd.DataFrame(self.to_records(votes=votes))
