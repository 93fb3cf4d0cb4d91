"""Assemble a :class:`GradeReport` from every judge's votes on one item.

>>> from jurist.judges.rubric._criteria import Criterion, CriterionVerdict
>>> from jurist.judges.rubric._report import Vote
>>> c = Criterion(name="cites", requirement="Cites a source")
>>> runs = {"a": [Vote(judge_id="a", verdict=CriterionVerdict.MET, value=1.0)],
...         "b": [Vote(judge_id="b", na=True, error="api: HTTP 500")]}
>>> report = assemble([c], runs, Strategies())
>>> report.score, report.criteria[0].n_counted, report.judge_scores
(1.0, 1, {'a': 1.0, 'b': None})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jurist.judges.rubric._aggregate import aggregate, agreement, strategy_for
from jurist.judges.rubric._criteria import Criterion
from jurist.judges.rubric._report import CriterionReport, GradeReport, Vote
from jurist.judges.rubric._scoring import CannotAssess, ScoredCriterion, weighted_score, worst_value
from jurist.types import Usage

__all__ = ["Strategies", "assemble"]


@dataclass(frozen=True, slots=True)
class Strategies:
    """The grader's aggregation and scoring choices."""

    binary: str = "majority"
    ordinal: str = "mean"
    nominal: str = "mode"
    cannot_assess: CannotAssess = "skip"
    partial_credit: float = 0.5


def _joined_reason(votes: Sequence[Vote]) -> str | None:
    reasons = [f"{v.judge_id}: {v.reason}" for v in votes if v.reason]
    return " | ".join(reasons) if reasons else None


def _joined_error(errors: Sequence[str]) -> str:
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return f"{unique[0]} (and {len(unique) - 1} other error{'s' * (len(unique) > 2)})"


def _score(
    criteria: Sequence[Criterion], values: Sequence[ScoredCriterion], s: Strategies, norm: bool
) -> float | None:
    return weighted_score(
        values, cannot_assess=s.cannot_assess, partial_credit=s.partial_credit, normalize=norm
    )


def _scored(criterion: Criterion, value: float | None, na: bool) -> ScoredCriterion:
    return ScoredCriterion(criterion.weight, value, na=na, worst_value=worst_value(criterion))


def assemble(
    criteria: Sequence[Criterion],
    votes_by_judge: Mapping[str, Sequence[Vote | None]],
    strategies: Strategies,
    *,
    names: Sequence[str] | None = None,
    usage: Usage | None = None,
    latency: float = 0.0,
    calls: str = "per_item",
    seed: int | None = None,
    output_note: str | None = None,
) -> GradeReport:
    """The report of one item: final verdicts, agreement, score, per-judge scores.

    A judge's list holds one vote per criterion, or ``None`` where that judge does not
    judge the criterion (a deterministic check beside LLM criteria: see
    :mod:`jurist.trajectories`); its own score then covers the criteria it judged.
    """
    names = names or [c.name or f"c{i + 1}" for i, c in enumerate(criteria)]
    reports: list[CriterionReport] = []
    notes: list[str] = []
    for i, criterion in enumerate(criteria):
        votes = [v for jv in votes_by_judge.values() if (v := jv[i]) is not None]
        strategy = strategy_for(
            criterion, strategies.binary, strategies.ordinal, strategies.nominal
        )
        result = aggregate(criterion, votes, strategy)
        errors = [v.error for v in votes if v.error is not None]
        all_failed = bool(votes) and len(errors) == len(votes)
        if result.note:
            notes.append(f"{names[i]}: {result.note}")
        reports.append(
            CriterionReport(
                index=i,
                name=names[i],
                kind=criterion.kind,
                weight=criterion.weight,
                section=criterion.section,
                aggregation=strategy,
                final=result.final,
                votes=votes,
                agreement=agreement(result.final, votes),
                n_counted=result.n_counted,
                reason=_joined_reason(votes),
                error=_joined_error(errors) if all_failed else None,
                note=result.note,
            )
        )
    judge_scores: dict[str, float | None] = {}
    for judge_id, judge_votes in votes_by_judge.items():
        cast = [(c, v) for c, v in zip(criteria, judge_votes, strict=True) if v is not None]
        if all(v.is_error for _, v in cast):
            judge_scores[judge_id] = None
            continue
        own = [_scored(c, v.value, v.na) for c, v in cast]
        judge_scores[judge_id] = _score(criteria, own, strategies, True)
    agreements = [r.agreement for r in reports if r.agreement is not None]
    finals = [_scored(c, r.final.value, r.final.na) for c, r in zip(criteria, reports, strict=True)]
    score: float | None = None
    raw: float | None = None
    error: str | None = None
    if reports and all(r.is_error for r in reports):
        error = _joined_error([r.error for r in reports if r.error is not None])
    else:
        score = _score(criteria, finals, strategies, True)
        raw = _score(criteria, finals, strategies, False)
        if score is None:
            error = (
                f"abstain: no criterion could be assessed ({len(reports)} abstained under "
                f"cannot_assess={strategies.cannot_assess!r})"
            )
    return GradeReport(
        score=score,
        raw_score=raw,
        error=error,
        criteria=reports,
        judge_scores=judge_scores,
        mean_agreement=sum(agreements) / len(agreements) if agreements else None,
        cannot_assess_count=sum(1 for r in reports if r.final.na),
        usage=usage or Usage(),
        latency=latency,
        calls="per_criterion" if calls == "per_criterion" else "per_item",
        seed=seed,
        notes=notes,
        output_note=output_note,
    )
