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

It takes the options every DeepEval metric takes, with DeepEval's meaning:
``threshold=None`` (``success`` is None, as in DeepEval's ``BaseMetric``),
``strict_mode`` (threshold 1, and a score under it is 0), ``include_reason`` (``False``:
no ``reason``), ``verbose_mode`` (``verbose_logs`` printed), ``async_mode``. A test case
missing a field the judge needs (``actual_output=None``, no ``input`` for a judge that
reads the prompt) raises DeepEval's ``MissingTestCaseParamsError`` (its own check and
message), so ``evaluate(..., error_config=ErrorConfig(skip_on_missing_params=True))``
skips it. ``evaluate()`` runs the metric on event loops of DeepEval's that it never
closes: the judge's connections are closed after each measurement, so no "Unclosed
client session" is left at exit.

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
    from deepeval.metrics.utils import check_llm_test_case_params, construct_verbose_logs
    from deepeval.test_case import LLMTestCase, SingleTurnParams
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingDependencyError("deepeval", "deepeval", "jurist.compat.deepeval") from e

__all__ = ["JuristMetric"]


class JuristMetric(BaseMetric):  # type: ignore[misc,no-untyped-call,unused-ignore]
    """A jurist judge (or catalog name) as a DeepEval metric; see the module doc.

    ``context_fields``: judge fields taken from the test case's ``additional_metadata``
    (a list, or judge field -> key). ``threshold``: ``success`` is ``score >= threshold``
    (``None``: no success verdict, as in DeepEval). ``include_reason``, ``strict_mode``,
    ``verbose_mode``, ``async_mode``: DeepEval's options (see the module doc).
    """

    error: str | None = None
    score: float | None = None
    success: bool | None = None

    def __init__(
        self,
        judge: Any,
        threshold: float | None = 0.5,
        *,
        context_fields: Sequence[str] | Mapping[str, str] | None = None,
        retries: int = 0,
        include_reason: bool = True,
        async_mode: bool = True,
        strict_mode: bool = False,
        verbose_mode: bool = False,
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
        self.threshold = 1 if strict_mode else threshold  # DeepEval's metrics do the same
        self.include_reason = include_reason
        self.async_mode = async_mode
        self.strict_mode = strict_mode
        self.verbose_mode = verbose_mode
        self.evaluation_model = self._metric.judge.name
        self._name = name or f"jurist ({self._metric.judge.name})"
        metric = self._metric
        reads = set(metric.context) | set(metric.judge.required_fields)
        params = [SingleTurnParams.ACTUAL_OUTPUT]
        if "prompt" in metric.judge.required_fields:
            params.insert(0, SingleTurnParams.INPUT)
        if metric.reference_target in metric.judge.required_fields:
            params.append(SingleTurnParams.EXPECTED_OUTPUT)
        self._required_params = params
        self._reads = reads

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
        """Judge ``test_case``; sets ``score``, ``reason``, ``success`` or ``error``.

        A missing field the judge needs raises DeepEval's ``MissingTestCaseParamsError``.
        """
        from jurist.pipeline._metric_results import instance_result
        from jurist.types import Judgment

        metric = self._metric
        self.error = None
        # DeepEval's own check and message (it sets self.error before raising)
        check_llm_test_case_params(
            test_case, self._required_params, None, None, self, None, test_case.multimodal
        )
        row: dict[str, Any] = dict(test_case.additional_metadata or {})
        if "prompt" in self._reads and "prompt" not in row and test_case.input is not None:
            row["prompt"] = test_case.input
        wants_ref = metric.reference_target in self._reads
        reference = test_case.expected_output if wants_ref else None
        item = metric.items([test_case.actual_output], references=[reference], task_data=[row])[0]
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
            self.reason = self.error if self.include_reason else None
            self.success = False
            self._log(f"Error: {self.error}")
            return None
        score = float(result.score)
        if self.strict_mode and self.threshold is not None and score < self.threshold:
            score = 0.0  # DeepEval's strict mode: below the threshold (1) is 0
        self.score = score
        reason = result.explanation or f"verdict: {result.verdict}"
        self.reason = reason if self.include_reason else None
        self.is_successful()
        self._log(f"Score: {self.score}\nReason: {self.reason}")
        return self.score

    def is_successful(self) -> bool | None:  # type: ignore[override,unused-ignore]
        """``score >= threshold``; an errored measurement is not a success; with
        ``threshold=None``, ``None`` (DeepEval's ``BaseMetric``: no verdict to give)."""
        if self.threshold is None:
            self.success = None
        elif self.error is not None or self.score is None:
            self.success = False
        else:
            self.success = self.score >= float(self.threshold)
        return self.success

    def _log(self, last: str) -> None:
        verdict = self.score_breakdown.get("verdict") if self.score_breakdown else None
        self.verbose_logs = construct_verbose_logs(
            self, steps=[f"Judge: {self.evaluation_model}", f"Verdict: {verdict}", last]
        )
