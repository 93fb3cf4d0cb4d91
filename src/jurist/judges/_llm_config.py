"""The declaration of :class:`~jurist.judges.LLMJudge`: every option, its default, once.

The constructor's keywords, the catalog entry's keys (kind ``judge``), ``with_options``
and the options a run manifest records all come from :class:`LLMJudgeConfig` (see
:mod:`jurist.judges._declare`). An option added here is taken by ``LLMJudge(...)``,
written to and read from catalog entries and kept by runs without another line.

>>> from jurist.models import get_model
>>> config = LLMJudgeConfig(model=get_model("mock:j"), template="likert", min_coverage=0.8)
>>> config.entry()
{'model': 'mock:j', 'template': 'likert', 'min_coverage': 0.8}
>>> sorted(config.described())
['explanations', 'extra_body', 'scoring', 'temperature']
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, PlainSerializer

from jurist.judges._codecs import JudgeModel, ModelSpec, TemplateRef
from jurist.judges._declare import JudgeConfig, option
from jurist.judges._scoring import ScoringChoice
from jurist.judges._thinking import ThinkingRecovery
from jurist.judges._weigher import DEFAULT_MIN_COVERAGE, LowCoverage
from jurist.models._backends import scripted_spec
from jurist.templates import DEFAULT_MAX_TOOL_CHARS, Template, Turn
from jurist.types import Reasoning

__all__ = ["DEFAULT_MAX_THINKING_TOKENS", "LLMJudgeConfig", "OutputFormat", "ReasoningOption"]

OutputFormat = Literal["auto", "text", "json"]


def _dict_or_empty(value: Any) -> Any:
    return {} if value is None else dict(value) if hasattr(value, "keys") else value


def _reasoning_out(value: Reasoning | None) -> str | int | None:
    return None if value is None else value.effort or value.budget_tokens


ReasoningOption = Annotated[
    Reasoning | None,
    BeforeValidator(Reasoning.parse),
    PlainSerializer(_reasoning_out, return_type=str | int | None),
]
"""A judge's ``reasoning=``: ``none|low|medium|high``, a token budget, or ``None`` (the
model's own default), written in entries and manifests as given (``"high"``, ``2048``)."""

DEFAULT_MAX_THINKING_TOKENS = 32768
"""The largest ``max_tokens`` a recovery's retries grow to (see :mod:`jurist.judges._thinking`)."""


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list | tuple) else value


class LLMJudgeConfig(JudgeConfig):
    """An :class:`~jurist.judges.LLMJudge`'s options (documented on the class)."""

    keeps_alignment = True

    model: Annotated[JudgeModel, ModelSpec(rate_key="max_calls_per_min")] = option(
        example=lambda: scripted_spec("other"), describe="never"
    )
    template: Annotated[str | Template, TemplateRef()] = option(
        "true_false_uncertain", example="likert", describe="never"
    )
    max_calls_per_min: int | None = option(None, example=30, describe="never", ge=1)
    explanations: bool = option(False, example=True, describe="always")
    instructions: str | None = option(None, example="Judge strictly.", describe="never")
    labels: dict[str, float] | dict[float, list[str]] | None = option(
        None, example={"Correct": 1.0, "Wrong": 0.0}, describe="never"
    )
    system_prompt: str | None = option(None, example="Say Correct or Wrong.", describe="never")
    temperature: float | None = option(0.0, example=0.7, describe="always", request=True)
    max_tokens: int | None = option(None, example=64, describe="never", ge=1)
    reasoning: ReasoningOption = option(None, example=Reasoning(effort="high"), request=True)
    keep_reasoning: bool = option(True, example=False, describe="never")
    thinking_recovery: ThinkingRecovery = option("continue", example="grow")
    max_thinking_tokens: int = option(DEFAULT_MAX_THINKING_TOKENS, example=8192, ge=1)
    concurrency: int = option(32, example=4, describe="never", ge=1)
    name: str | None = option(None, example="mine", describe="never")
    scoring: ScoringChoice = option("parse", example="auto", describe="always")
    top_logprobs: int = option(20, example=5, describe="never", ge=1)
    min_coverage: float = option(
        DEFAULT_MIN_COVERAGE, example=0.8, describe="always", ge=0.0, le=1.0
    )
    low_coverage: LowCoverage = option("fail", example="flag", describe="always")
    extra_body: Annotated[dict[str, Any], BeforeValidator(_dict_or_empty)] = option(
        example={"grammar": "root ::= [a-z]+"}, describe="always", default_factory=dict
    )
    output: OutputFormat = option("auto", example="text", describe="never")
    turn: Turn = option("last", example="all", describe="never")
    max_tool_chars: int | None = option(DEFAULT_MAX_TOOL_CHARS, example=50, describe="never", ge=1)
    examples: Annotated[tuple[Any, ...], BeforeValidator(_tuple)] = option(
        (),
        example=({"item": {"prompt": "2+2?", "response": "4"}, "verdict": "Correct"},),
        describe="never",
    )

    def described(self) -> dict[str, Any]:
        """The declared options a manifest records; the coverage options only where a
        logprob score is weighed (``scoring`` other than ``"parse"``)."""
        out = super().described()
        if self.scoring == "parse":
            out.pop("min_coverage", None)
            out.pop("low_coverage", None)
        return out
