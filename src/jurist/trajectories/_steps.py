""":class:`StepJudge`: an LLM judge of each step of a trajectory, aggregated.

Every step (an assistant turn with the results of its calls) is judged on its own with the
``trajectory_step`` template (or another template with a ``step`` field; ``prompt`` and
``history`` are filled when the template takes them): the task, the steps before it as
context, the step itself. The steps' scores are aggregated (``mean`` or ``min``) over the
steps that were judged; a step whose judgment failed is left out and counted, and the
trajectory gets no score only when no step could be judged.

>>> import jurist
>>> from jurist.trajectories import Trajectory, trajectory_items
>>> t = Trajectory.from_messages([{"role": "user", "content": "Weather in Oslo?"},
...     {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "weather",
...         "arguments": '{"city": "Oslo"}'}}]},
...     {"role": "tool", "tool_call_id": "1", "content": "-3 C, snow"},
...     {"role": "assistant", "content": "It is sunny in Oslo."}])
>>> judge = StepJudge(jurist.get_model("mock:j", outputs=["Good", "Bad"]))
>>> report = judge.judge_sync(trajectory_items([t])[0])
>>> report.score, [s.verdict for s in report.steps], report.n_counted
(0.5, ['Good', 'Bad'], 2)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jurist._sync import run_sync
from jurist.errors import ConfigError, JuristError
from jurist.judges import LLMJudge
from jurist.models import Model
from jurist.trajectories._items import trajectory_from_item
from jurist.trajectories._render import DEFAULT_MAX_ARGS, DEFAULT_MAX_RESULT, render_step
from jurist.types import Usage

__all__ = ["StepAggregation", "StepJudge", "StepReport", "StepVerdict"]

StepAggregation = Literal["mean", "min"]
"""How step scores become the trajectory's: their mean, or the weakest step's."""


class StepVerdict(BaseModel):
    """One step's judgment: its index (from 0), score, verdict, explanation or error."""

    model_config = ConfigDict(frozen=True)

    index: int
    score: float | None
    verdict: str | float | None = None
    explanation: str | None = None
    error: str | None = None


class StepReport(BaseModel):
    """A trajectory judged step by step: the aggregated score and every step's verdict.

    ``n_counted`` is how many steps the score aggregates (failed ones are left out).
    """

    model_config = ConfigDict(frozen=True)

    score: float | None
    error: str | None = None
    aggregation: StepAggregation = "mean"
    n_counted: int = 0
    steps: list[StepVerdict] = Field(default_factory=list)
    usage: Usage = Usage()

    @property
    def ok(self) -> bool:
        return self.score is not None


class StepJudge:
    """Judges every step of a trajectory item with an LLM judge (module doc).

    Args:
        judge: an :class:`~jurist.LLMJudge` whose template has a ``step`` field, or a model
            (or ``"provider:name"``) for the ``trajectory_step`` template.
        aggregation: ``"mean"`` or ``"min"`` (the weakest step decides) of the step scores.
        trajectory_field: the item field holding the trajectory (else ``messages``).
    """

    def __init__(
        self,
        judge: LLMJudge | Model | str,
        *,
        aggregation: StepAggregation = "mean",
        trajectory_field: str = "trace",
        max_result: int = DEFAULT_MAX_RESULT,
        max_args: int = DEFAULT_MAX_ARGS,
        name: str | None = None,
    ) -> None:
        self.llm = judge if isinstance(judge, LLMJudge) else LLMJudge(judge, "trajectory_step")
        if "step" not in (*self.llm.template.fields, *self.llm.template.optional_fields):
            raise ConfigError(
                f"StepJudge: template {self.llm.template.name!r} has no 'step' field "
                "(use trajectory_step or a template that takes one)"
            )
        if aggregation not in ("mean", "min"):
            raise ConfigError(
                f"StepJudge: aggregation must be 'mean' or 'min', got {aggregation!r}"
            )
        self.aggregation: StepAggregation = aggregation
        self.trajectory_field = trajectory_field
        self.max_result = max_result
        self.max_args = max_args
        self.name = name or f"steps:{self.llm.name}"

    def __repr__(self) -> str:
        return f"StepJudge({self.llm!r}, aggregation={self.aggregation!r})"

    @property
    def required_fields(self) -> tuple[str, ...]:
        return ()

    def models(self) -> tuple[Model, ...]:
        return self.llm.models()

    def with_models(self, fn: Callable[[Model], Model]) -> StepJudge:
        """A copy whose judge calls ``fn(model)``."""
        return StepJudge(
            self.llm.with_models(fn),
            aggregation=self.aggregation,
            trajectory_field=self.trajectory_field,
            max_result=self.max_result,
            max_args=self.max_args,
            name=self.name,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "step_judge",
            "name": self.name,
            "judge": self.llm.describe(),
            "aggregation": self.aggregation,
            "trajectory_field": self.trajectory_field,
            "max_result": self.max_result,
            "max_args": self.max_args,
        }

    async def judge_steps(self, item: Mapping[str, Any], *, retries: int = 0) -> StepReport:
        """Judge every step of the item's trajectory (module doc)."""
        try:
            trajectory = trajectory_from_item(item, self.trajectory_field)
        except JuristError as e:
            return StepReport(score=None, error=f"data: {e}", aggregation=self.aggregation)
        n = len(trajectory.steps)
        if n == 0:
            return StepReport(
                score=None, error="data: the trajectory has no steps", aggregation=self.aggregation
            )
        task = trajectory.task
        items = []
        for i in range(n):
            history, step = render_step(
                trajectory, i, max_result=self.max_result, max_args=self.max_args
            )
            items.append({"prompt": task, "history": history, "step": step})
        judgments = await asyncio.gather(*(self.llm.judge(it, retries=retries) for it in items))
        steps = [
            StepVerdict(
                index=i, score=j.score, verdict=j.verdict, explanation=j.explanation, error=j.error
            )
            for i, j in enumerate(judgments)
        ]
        usage = Usage()
        for j in judgments:
            usage = usage + j.usage
        scores = [s.score for s in steps if s.score is not None]
        if not scores:
            first = next((s.error for s in steps if s.error), "no verdict")
            return StepReport(
                score=None,
                error=f"{first} (no step of {n} could be judged)",
                aggregation=self.aggregation,
                steps=steps,
                usage=usage,
            )
        score = min(scores) if self.aggregation == "min" else sum(scores) / len(scores)
        return StepReport(
            score=score,
            aggregation=self.aggregation,
            n_counted=len(scores),
            steps=steps,
            usage=usage,
        )

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> StepReport:
        """:meth:`judge_steps`: the item judge call :func:`jurist.evaluate` makes."""
        return await self.judge_steps(item, retries=retries)

    def judge_sync(self, item: Mapping[str, Any], *, retries: int = 0) -> StepReport:
        """Sync twin of :meth:`judge`."""
        return run_sync(self.judge(item, retries=retries))
