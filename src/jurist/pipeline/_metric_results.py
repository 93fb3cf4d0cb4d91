"""What a :class:`~jurist.pipeline.JudgeMetric` returns: per-instance results and global scores.

An :class:`InstanceResult` is read off any judge outcome: an
:class:`~jurist.types.Judgment` (one call), a pairwise judgment (one call per order) or a
panel judgment (its judges' calls); :class:`JudgeCall` keeps each call's input and output.

>>> from jurist.types import Judgment
>>> r = instance_result(0, Judgment(score=0.5, verdict=3, judge_prompt="<answer>x</answer>",
...                                response="3"), {"response": "x"}, "response", "reference")
>>> r.score, r.verdict, r.judge_input, r.raw_output, r.prediction
(0.5, 3.0, '<answer>x</answer>', '3', 'x')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist.types import Judgment, Usage

__all__ = ["GlobalScores", "InstanceResult", "JudgeCall", "MetricResults", "instance_result"]


class JudgeCall(BaseModel):
    """One call to a judge model: what it was sent (the item's message) and what it said."""

    model_config = ConfigDict(frozen=True)

    label: str
    judge_input: str
    raw_output: str | None = None
    error: str | None = None


class InstanceResult(BaseModel):
    """The metric's result on one instance; ``score`` is ``None`` when it failed."""

    model_config = ConfigDict(frozen=True)

    index: int
    score: float | None
    verdict: str | float | None = None
    explanation: str | None = None
    error: str | None = None
    judge_input: str | None = None
    raw_output: str | None = None
    calls: tuple[JudgeCall, ...] = ()
    prediction: Any = None
    reference: Any = None
    usage: Usage = Usage()
    outcome: dict[str, Any] = {}


class GlobalScores(BaseModel):
    """The metric over all instances; failed instances are counted, not averaged.

    ``ci_low`` / ``ci_high`` bound ``mean`` at ``confidence`` (percentile bootstrap over
    the scored instances, ``n_resamples`` draws seeded by ``seed``; ``None`` with fewer
    than 3 scored). Pairwise judges add A's ``win_rate`` (ties count half; pairs whose
    orders disagreed under ``consistency="inconsistent"`` are left out) and its interval.
    """

    model_config = ConfigDict(frozen=True)

    metric: str
    n: int
    n_scored: int
    n_failed: int
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float
    n_resamples: int
    seed: int
    failures: dict[str, int] = {}
    win_rate: float | None = None
    win_rate_ci_low: float | None = None
    win_rate_ci_high: float | None = None
    n_a: int | None = None
    n_b: int | None = None
    n_tie: int | None = None
    n_inconsistent: int | None = None
    consistency_rate: float | None = None
    usage: Usage = Usage()


class MetricResults(BaseModel):
    """Per-instance results, in input order, and the global scores."""

    model_config = ConfigDict(frozen=True)

    instances: tuple[InstanceResult, ...]
    global_scores: GlobalScores

    @property
    def scores(self) -> list[float | None]:
        return [r.score for r in self.instances]

    @property
    def failed(self) -> list[InstanceResult]:
        return [r for r in self.instances if r.score is None]

    def to_records(self) -> list[dict[str, Any]]:
        """One flat dict per instance (no nested outcome), for JSONL or pandas."""
        return [
            r.model_dump(mode="json", exclude={"outcome", "calls", "usage"}) for r in self.instances
        ]

    def to_pandas(self) -> Any:
        try:
            import pandas as pd
        except ImportError as e:
            from jurist.errors import MissingDependencyError

            raise MissingDependencyError("pandas", "dev", "MetricResults.to_pandas") from e
        return pd.DataFrame(self.to_records())


def _calls(outcome: Any) -> tuple[JudgeCall, ...]:
    if isinstance(outcome, Judgment):
        if not outcome.judge_prompt and outcome.response is None:
            return ()
        return (JudgeCall(label="judge", judge_input=outcome.judge_prompt,
                          raw_output=outcome.response, error=outcome.error),)  # fmt: skip
    forward = getattr(outcome, "forward", None)
    if isinstance(forward, Judgment):
        calls = [_call("A first", forward)]
        swapped = getattr(outcome, "swapped", None)
        if isinstance(swapped, Judgment):
            calls.append(_call("B first", swapped))
        return tuple(calls)
    subs = getattr(outcome, "judgments", None)
    if subs:
        out: list[JudgeCall] = []
        for k, sub in enumerate(subs):
            for call in _calls(sub):
                out.append(call.model_copy(update={"label": f"judge {k}: {call.label}"}))
        return tuple(out)
    return ()


def _call(label: str, j: Judgment) -> JudgeCall:
    return JudgeCall(label=label, judge_input=j.judge_prompt, raw_output=j.response, error=j.error)


def instance_result(
    index: int, outcome: Any, item: Mapping[str, Any], target: str, ref_target: str
) -> InstanceResult:
    calls = _calls(outcome)
    verdict: Any = getattr(outcome, "verdict", None)
    if verdict is None:
        verdict = getattr(outcome, "winner", None)
    if not isinstance(verdict, str | float | int) or isinstance(verdict, bool):
        verdict = None
    score = getattr(outcome, "score", None)
    usage = getattr(outcome, "usage", None)
    dump = outcome.model_dump(mode="json") if isinstance(outcome, BaseModel) else {}
    return InstanceResult(
        index=index,
        score=score,
        verdict=verdict,
        explanation=getattr(outcome, "explanation", None),
        error=getattr(outcome, "error", None) if score is None else None,
        judge_input=calls[0].judge_input if calls else None,
        raw_output=calls[0].raw_output if calls else None,
        calls=calls,
        prediction=item.get(target),
        reference=item.get(ref_target),
        usage=usage if isinstance(usage, Usage) else Usage(),
        outcome=dump,
    )
