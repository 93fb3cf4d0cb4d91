""":class:`TrajectoryGrader`: a :class:`TrajectoryRubric` graded on trajectory items.

The checks run on the item's trajectory (:func:`trajectory_from_item`); the LLM criteria,
when the rubric has any, go to a :class:`~jurist.CriterionGrader` with the trajectory
rendered as the submission and the task as the query; the rubric's ``steps`` criterion, when
it has one, goes to a :class:`~jurist.trajectories.StepJudge` (the weakest step votes).
All are assembled into one :class:`~jurist.judges.rubric.GradeReport` by the grader's own
aggregation and scoring: each check is a binary criterion with one vote (judge id
``"check"``), so the report, the run store and the HTML report show checks, step verdicts
and judges' verdicts side by side.

A grader is an item judge for :func:`jurist.evaluate`; it never raises for a failed call,
a malformed trajectory or a check that raises: the report carries the error.

>>> import jurist
>>> from jurist.trajectories import Trajectory, TrajectoryRubric, trajectory_items
>>> t = Trajectory.from_messages([{"role": "user", "content": "Weather in Oslo?"},
...     {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "weather",
...         "arguments": '{"city": "Oslo"}'}}]},
...     {"role": "tool", "tool_call_id": "1", "content": "-3 C, snow"},
...     {"role": "assistant", "content": "It is -3 C and snowing in Oslo."}])
>>> rubric = TrajectoryRubric.from_dict({
...     "checks": [{"name": "used_weather", "check": {"kind": "tool_used", "tool": "weather"}}],
...     "criteria": [{"name": "grounded", "requirement": "The answer matches the tool result"}]})
>>> model = jurist.get_model("mock:j", outputs=['{"c1": {"verdict": "MET"}}'], cycle=True)
>>> grader = TrajectoryGrader(rubric, jurist.CriterionGrader(judges=[model]))
>>> report = grader.judge_sync(trajectory_items([t])[0])
>>> report.score, [(c.name, c.final.label) for c in report.criteria]
(1.0, [('used_weather', 'MET'), ('grounded', 'MET')])
>>> report.criteria[0].reason
"check: 'weather' was called 1 time"
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from jurist._sync import run_sync
from jurist.errors import ConfigError, JuristError
from jurist.judges.rubric import (
    Criterion,
    CriterionGrader,
    CriterionVerdict,
    GradeReport,
    Option,
    Vote,
)
from jurist.judges.rubric._assemble import Strategies, assemble
from jurist.models import Model
from jurist.templates import LabelScale
from jurist.trajectories._items import trajectory_from_item
from jurist.trajectories._model import Trajectory
from jurist.trajectories._render import DEFAULT_MAX_ARGS, DEFAULT_MAX_RESULT, render_trajectory
from jurist.trajectories._rubric import CheckCriterion, TrajectoryRubric
from jurist.trajectories._steps import StepJudge, StepReport
from jurist.types import Usage

__all__ = ["CHECK_JUDGE_ID", "TrajectoryGrader"]

CHECK_JUDGE_ID = "check"
"""The judge id of the votes that checks cast in a grade report."""


_Block = tuple[list[Criterion], dict[str, list[Vote | None]]]
"""Criteria that some judges vote on, and each judge's votes on them."""


def _steps_vote(criterion: Criterion, report: StepReport, judge_id: str) -> Vote:
    """The weakest judged step's verdict as a vote on the step criterion."""
    judged = [s for s in report.steps if s.score is not None]
    if not judged:
        return Vote(judge_id=judge_id, na=True, error=report.error or "parse: no step judged")
    worst = min(judged, key=lambda s: (s.score, s.index))
    label = worst.verdict if isinstance(worst.verdict, str) else f"{worst.verdict:g}"
    index = criterion.option_index(label)
    option = (criterion.options or ())[index]
    notes = [
        f"step {s.index + 1}: {s.verdict}" + (f" ({s.explanation})" if s.explanation else "")
        for s in report.steps
        if s.score is not None and s.score < 1.0
    ]
    failed = len(report.steps) - len(judged)
    tail = f"; {failed} step(s) not judged" if failed else ""
    reason = (
        f"{len(judged)} steps judged, below the top: " + "; ".join(notes)
        if notes
        else f"all {len(judged)} steps {label}"
    )
    return Vote(
        judge_id=judge_id,
        selected_index=index,
        selected_label=option.label,
        value=option.value,
        reason=reason + tail,
    )


def _check_vote(check: CheckCriterion, trajectory: Trajectory) -> Vote:
    try:
        result = check.check.check(trajectory)
    except Exception as e:  # a custom check that raises fails its criterion, not the run
        return Vote(
            judge_id=CHECK_JUDGE_ID,
            verdict=CriterionVerdict.CANNOT_ASSESS,
            selected_label=CriterionVerdict.CANNOT_ASSESS.value,
            na=True,
            error=f"check: {type(e).__name__}: {e}",
        )
    verdict = CriterionVerdict.MET if result.passed else CriterionVerdict.UNMET
    return Vote(
        judge_id=CHECK_JUDGE_ID,
        verdict=verdict,
        selected_label=verdict.value,
        value=result.score,
        reason=result.reason,
    )


class TrajectoryGrader:
    """Grades trajectory items on a :class:`TrajectoryRubric` (module doc).

    Args:
        rubric: the checks, LLM criteria and step criterion.
        grader: the :class:`~jurist.CriterionGrader` for the LLM criteria (needed when the
            rubric has any); its aggregation and scoring also assemble the checks.
        step_judge: the :class:`~jurist.trajectories.StepJudge` for the rubric's ``steps``
            criterion (needed when it has one); its template's verdicts are the options.
        trajectory_field: the item field holding the trajectory (``messages`` is read
            when it is absent).
        task_field, reference_field: the item fields of the task and of a reference
            (expected answer or behaviour), passed to the LLM criteria as query and
            reference.
        max_result, max_args: truncation of tool results and arguments in the rendering.
    """

    def __init__(
        self,
        rubric: TrajectoryRubric,
        grader: CriterionGrader | None = None,
        *,
        step_judge: StepJudge | None = None,
        trajectory_field: str = "trace",
        task_field: str | None = "prompt",
        reference_field: str | None = "reference",
        max_result: int = DEFAULT_MAX_RESULT,
        max_args: int = DEFAULT_MAX_ARGS,
        name: str | None = None,
    ) -> None:
        if rubric.rubric is not None and grader is None:
            raise ConfigError(
                "TrajectoryGrader: the rubric has LLM criteria "
                f"({rubric.rubric.criterion_names()}); pass a CriterionGrader to judge them"
            )
        if rubric.steps is not None and step_judge is None:
            raise ConfigError(
                f"TrajectoryGrader: the rubric judges steps ({rubric.steps.name!r}); pass a "
                "StepJudge to judge them"
            )
        if step_judge is not None:
            scale = step_judge.llm.template.scale
            if not isinstance(scale, LabelScale) and not scale.integer:
                raise ConfigError(
                    f"TrajectoryGrader: the step template {step_judge.llm.template.name!r} has "
                    "a continuous scale; a step criterion needs labels or whole numbers"
                )
        taken = [CHECK_JUDGE_ID, *(grader.judge_ids if grader is not None else ())]
        if step_judge is not None and step_judge.name in taken:
            raise ConfigError(
                f"TrajectoryGrader: the step judge's name {step_judge.name!r} is a judge id "
                "already; give the StepJudge another name"
            )
        if grader is not None and CHECK_JUDGE_ID in grader.judge_ids:
            raise ConfigError(
                f"TrajectoryGrader: the judge id {CHECK_JUDGE_ID!r} is taken by the checks; "
                "give that judge another id (JudgeSpec(judge_id=...))"
            )
        self.rubric = rubric
        self.grader = grader
        self.step_judge = step_judge
        self.trajectory_field = trajectory_field
        self.task_field = task_field
        self.reference_field = reference_field
        self.max_result = max_result
        self.max_args = max_args
        self.name = name or ("trajectory@" + (grader.name if grader is not None else "checks"))

    def __repr__(self) -> str:
        return f"TrajectoryGrader({self.name!r}, checks={len(self.rubric.checks)})"

    @property
    def required_fields(self) -> tuple[str, ...]:
        return ()  # the trajectory may be under trajectory_field or messages: checked per item

    def models(self) -> tuple[Model, ...]:
        """The LLM grader's models, then the step judge's (none for a checks-only rubric)."""
        own = self.grader.models() if self.grader is not None else ()
        return own + (self.step_judge.models() if self.step_judge is not None else ())

    def with_models(self, fn: Callable[[Model], Model]) -> TrajectoryGrader:
        """A copy whose LLM grader calls ``fn(model)`` instead of each model."""
        return TrajectoryGrader(
            self.rubric,
            None if self.grader is None else self.grader.with_models(fn),
            step_judge=None if self.step_judge is None else self.step_judge.with_models(fn),
            trajectory_field=self.trajectory_field,
            task_field=self.task_field,
            reference_field=self.reference_field,
            max_result=self.max_result,
            max_args=self.max_args,
            name=self.name,
        )

    def describe(self) -> dict[str, Any]:
        """The whole configuration as JSON-able data (for run manifests)."""
        return {
            "kind": "trajectory_grader",
            "name": self.name,
            "rubric": self.rubric.to_dict(),
            "grader": None if self.grader is None else self.grader.describe(),
            "step_judge": None if self.step_judge is None else self.step_judge.describe(),
            "fields": {
                "trajectory": self.trajectory_field,
                "task": self.task_field,
                "reference": self.reference_field,
            },
            "max_result": self.max_result,
            "max_args": self.max_args,
        }

    def _text(self, item: Mapping[str, Any], field: str | None) -> str | None:
        value = None if field is None else item.get(field)
        return value if isinstance(value, str) and value else None

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> GradeReport:
        """Grade one item (module doc)."""
        started = time.perf_counter()
        try:
            trajectory = trajectory_from_item(item, self.trajectory_field)
        except JuristError as e:
            return GradeReport(score=None, error=f"data: {e}")
        blocks: list[_Block] = []
        checks = self.rubric.checks
        if checks:
            votes: list[Vote | None] = [_check_vote(c, trajectory) for c in checks]
            blocks.append(([c.criterion() for c in checks], {CHECK_JUDGE_ID: votes}))
        strategies = Strategies()
        llm: GradeReport | None = None
        usage = Usage()
        if self.rubric.rubric is not None and self.grader is not None:
            strategies = self.grader.strategies
            text = render_trajectory(trajectory, max_result=self.max_result, max_args=self.max_args)
            llm = await self.grader.grade(
                self.rubric.rubric,
                text,
                query=self._text(item, self.task_field) or trajectory.task,
                reference=self._text(item, self.reference_field),
                retries=retries,
            )
            if not llm.criteria:  # the grade failed before any vote (it carries the error)
                return llm
            usage = usage + llm.usage
            blocks.append(
                (
                    self.grader.effective_criteria(self.rubric.rubric),
                    {
                        judge_id: [
                            next((v for v in c.votes if v.judge_id == judge_id), None)
                            for c in llm.criteria
                        ]
                        for judge_id in self.grader.judge_ids
                    },
                )
            )
        if self.rubric.steps is not None and self.step_judge is not None:
            report = await self.step_judge.judge_steps(item, retries=retries)
            usage = usage + report.usage
            criterion = self._steps_criterion()
            vote = _steps_vote(criterion, report, self.step_judge.name)
            blocks.append(([criterion], {self.step_judge.name: [vote]}))
        criteria = [c for block, _ in blocks for c in block]
        by_judge: dict[str, list[Vote | None]] = {}
        offset = 0
        for block, votes_of in blocks:
            for judge_id, own in votes_of.items():
                row = by_judge.setdefault(judge_id, [None] * len(criteria))
                row[offset : offset + len(own)] = own
            offset += len(block)
        return assemble(
            criteria,
            by_judge,
            strategies,
            names=[c.name or f"c{i + 1}" for i, c in enumerate(criteria)],
            usage=usage,
            latency=time.perf_counter() - started,
            calls=llm.calls if llm is not None else "per_item",
            seed=llm.seed if llm is not None else None,
            output_note=llm.output_note if llm is not None else None,
        )

    def _steps_criterion(self) -> Criterion:
        """The step criterion: ordinal, its options the step template's verdicts."""
        assert self.rubric.steps is not None and self.step_judge is not None
        spec = self.rubric.steps
        scale = self.step_judge.llm.template.scale
        if isinstance(scale, LabelScale):
            options = [Option(label=lb.name, value=lb.score) for lb in scale.labels]
        else:
            values = range(int(scale.low), int(scale.high) + 1)
            options = [Option(label=str(v), value=scale.normalize(v)) for v in values]
        return Criterion(
            name=spec.name,
            requirement=spec.requirement,
            weight=spec.weight,
            options=tuple(options),
            scale_type="ordinal",
        )

    def judge_sync(self, item: Mapping[str, Any], *, retries: int = 0) -> GradeReport:
        """Sync twin of :meth:`judge`."""
        return run_sync(self.judge(item, retries=retries))
