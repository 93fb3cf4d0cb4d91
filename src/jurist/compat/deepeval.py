"""jurist inside DeepEval: a jurist judge as a DeepEval metric (``BaseMetric``).

:class:`JuristMetric` reads a test case's ``input`` (the judge's ``prompt``),
``actual_output`` (the judged ``response``; ``response_a`` for a pairwise judge) and
``expected_output`` (the ``reference``, when the judge reads one), judges it, and sets
DeepEval's fields: ``score`` in [0, 1], ``reason`` (the judge's explanation, or its
verdict), ``success`` against ``threshold``. A verdict that cannot be read, or a failed
call, is DeepEval's errored metric: ``score=None``, ``error`` holding jurist's categorised
reason and ``success=False``; never a made-up score. ``measure`` and ``a_measure`` are
the sync and async entry points DeepEval calls; ``evaluate()`` copies the metric per test
case, as for any DeepEval metric.

Importing this module needs deepeval (``pip install 'jurist[deepeval]'``). See
docs/deepeval.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jurist._sync import run_sync
from jurist.errors import JuristError, MissingDependencyError, UserError

try:
    from deepeval.metrics import BaseMetric
    from deepeval.test_case import LLMTestCase
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingDependencyError("deepeval", "deepeval", "jurist.compat.deepeval") from e

__all__ = ["JuristMetric"]


class JuristMetric(BaseMetric):  # type: ignore[misc,no-untyped-call,unused-ignore]
    """A jurist judge (or catalog name) as a DeepEval metric; see the module doc.

    ``context_fields``: judge fields taken from the test case's ``additional_metadata``
    (a list, or judge field -> key). ``threshold``: ``success`` is ``score >= threshold``.
    """

    error: str | None = None
    score: float | None = None

    def __init__(
        self,
        judge: Any,
        threshold: float = 0.5,
        *,
        context_fields: Sequence[str] | Mapping[str, str] | None = None,
        retries: int = 0,
        async_mode: bool = True,
        name: str | None = None,
    ) -> None:
        from jurist.pipeline import JudgeMetric

        # DeepEval copies a metric per test case by calling __init__ with the attributes
        # named like its parameters, so each parameter is kept under its own name
        self.judge = judge
        self.context_fields = context_fields
        self.retries = retries
        self.name = name
        self._metric = JudgeMetric(judge, context_fields=context_fields, retries=retries)
        self.threshold = threshold
        self.async_mode = async_mode
        self.include_reason = True
        self.strict_mode = False
        self.evaluation_model = self._metric.judge.name
        self._name = name or f"jurist ({self._metric.judge.name})"

    @property
    def __name__(self) -> str:  # type: ignore[override,unused-ignore]  # DeepEval's name
        return self._name

    def measure(  # type: ignore[override,unused-ignore]  # None: an errored measurement
        self, test_case: LLMTestCase, *args: Any, **kwargs: Any
    ) -> float | None:
        """Judge ``test_case`` (sync twin of :meth:`a_measure`)."""
        return run_sync(self.a_measure(test_case))

    async def a_measure(  # type: ignore[override,unused-ignore]
        self, test_case: LLMTestCase, *args: Any, **kwargs: Any
    ) -> float | None:
        """Judge ``test_case``; sets ``score``, ``reason``, ``success`` or ``error``."""
        from jurist.pipeline._metric_results import instance_result
        from jurist.types import Judgment

        metric = self._metric
        reads = set(metric.context) | set(metric.judge.required_fields)
        row: dict[str, Any] = dict(test_case.additional_metadata or {})
        if "prompt" in reads and "prompt" not in row:
            row["prompt"] = test_case.input
        wants_ref = metric.reference_target in reads
        reference = test_case.expected_output if wants_ref else None
        item = metric.items([test_case.actual_output], [reference], [row])[0]
        try:
            outcome = await metric.judge.judge(item, retries=metric.retries)
        except UserError:
            raise
        except JuristError as e:
            outcome = Judgment(score=None, error=f"{e.category}: {e}")
        result = instance_result(0, outcome, item, metric.judge_field, metric.reference_target)
        usage = result.usage
        self.input_tokens, self.output_tokens = usage.prompt_tokens, usage.completion_tokens
        self.score_breakdown = {"verdict": result.verdict, "raw_output": result.raw_output}
        if result.score is None:
            self.score = None
            self.error = result.error or "error: unscored"
            self.reason = self.error
            self.success = False
            return None
        self.error = None
        self.score = float(result.score)
        self.reason = result.explanation or f"verdict: {result.verdict}"
        self.success = self.score >= self._threshold()
        return self.score

    def is_successful(self) -> bool:
        """``score >= threshold``; an errored measurement is not a success."""
        if self.error is not None or self.score is None:
            self.success = False
        else:
            self.success = self.score >= self._threshold()
        return bool(self.success)

    def _threshold(self) -> float:
        return 0.0 if self.threshold is None else float(self.threshold)
