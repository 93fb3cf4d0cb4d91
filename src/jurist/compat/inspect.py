"""jurist inside Inspect: any jurist judge as an Inspect ``@scorer``.

:func:`jurist_scorer` wraps an :class:`~jurist.LLMJudge`, :class:`~jurist.Panel`,
:class:`~jurist.PairwiseJudge` or rubric judge. For each sample it reads the task's input
(the judge's ``prompt``), the model's output (the judged ``response``; ``response_a`` for
a pairwise judge) and the target (the ``reference``; the baseline ``response_b`` for a
pairwise judge), builds the judge item as :class:`jurist.JudgeMetric` does (other judge
fields come from the sample's metadata) and returns an Inspect ``Score``: the value is the
judge's score in [0, 1], ``explanation`` the judge's explanation, and ``metadata`` holds
``verdict``, ``judge``, ``raw_output`` and ``error``. A verdict that cannot be read (or a
failed call) is ``Score.unscored(reason=...)``: NaN, which Inspect's metrics and epoch
reducers skip, with jurist's categorised error as the reason; never a made-up score.

Importing this module needs inspect_ai (``pip install 'jurist[inspect]'``). See
docs/inspect.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jurist.errors import JuristError, MissingDependencyError, UserError

try:
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingDependencyError("inspect_ai", "inspect", "jurist.compat.inspect") from e

__all__ = ["jurist_scorer"]


def jurist_scorer(
    judge: Any,
    *,
    context_fields: Sequence[str] | Mapping[str, str] | None = None,
    use_target: bool | None = None,
    retries: int = 0,
    metrics: Any = None,
) -> Scorer:
    """An Inspect scorer whose score is ``judge``'s verdict (see the module doc).

    ``judge``: a jurist judge or a jurist catalog name. ``context_fields``: judge fields
    taken from the sample's metadata (a list, or judge field -> metadata key); the input
    always fills ``prompt`` when the judge reads it. ``use_target``: fill the judge's
    reference with the target (``None``: when the judge reads one and the target is not
    empty). ``metrics``: Inspect metrics (default ``[mean(), stderr()]``).
    """
    from jurist.pipeline import JudgeMetric

    metric = JudgeMetric(judge, context_fields=context_fields, retries=retries)
    reads = set(metric.context) | set(metric.judge.required_fields)
    ref_target = metric.reference_target

    @scorer(  # type: ignore[untyped-decorator,unused-ignore]
        metrics=metrics if metrics is not None else [mean(), stderr()], name="jurist"
    )
    def _jurist() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            return await _score(metric, reads, ref_target, use_target, state, target)

        return score

    return _jurist()


async def _score(
    metric: Any,
    reads: set[str],
    ref_target: str,
    use_target: bool | None,
    state: TaskState,
    target: Target,
) -> Score:
    from jurist.pipeline._metric_results import instance_result

    output = state.output.completion
    row: dict[str, Any] = dict(state.metadata or {})
    if "prompt" in reads and "prompt" not in row:
        row["prompt"] = state.input_text
    use = use_target
    if use is None:
        use = ref_target in reads and bool(target.text)
    reference = target.text if use else None
    item = metric.items([output], [reference], [row])[0]
    try:
        outcome = await metric.judge.judge(item, retries=metric.retries)
    except UserError:
        raise
    except JuristError as e:
        from jurist.types import Judgment

        outcome = Judgment(score=None, error=f"{e.category}: {e}")
    result = instance_result(0, outcome, item, metric.judge_field, metric.reference_target)
    metadata = {
        "judge": metric.judge.name,
        "verdict": result.verdict,
        "raw_output": result.raw_output,
        "error": result.error,
    }
    if result.score is None:
        return Score.unscored(
            reason=result.error or "error: unscored",
            answer=output,
            explanation=result.explanation,
            metadata=metadata,
        )
    return Score(
        value=float(result.score),
        answer=output,
        explanation=result.explanation,
        metadata=metadata,
    )
