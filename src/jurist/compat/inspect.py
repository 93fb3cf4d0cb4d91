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

The judge's calls are Inspect model calls: each goes through an Inspect ``Model`` (the
provider ``jurist``, named ``jurist/<spec>``, e.g. ``jurist/openai:judge``) whose API
sends jurist's request unchanged through the judge's own model stack. So, as for
Inspect's own ``model_graded_qa``, every call is a ``ModelEvent`` in the sample's
transcript and its tokens count in the sample's and the eval's model usage
(``read_eval_log(...).stats.model_usage``) and against token limits. ``name=`` names the
scorer (two jurist scorers in one task need two names).

Importing this module needs inspect_ai (``pip install 'jurist[inspect]'``). See
docs/inspect.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from jurist.errors import ConfigError, JuristError, MissingDependencyError, UserError
from jurist.models import Model, WrapperModel
from jurist.types import Completion, Request

try:
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        GenerateConfig,
        ModelAPI,
        ModelOutput,
        ModelUsage,
        StopReason,
        modelapi,
    )
    from inspect_ai.model import Model as InspectModel
    from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
    from inspect_ai.solver import TaskState
    from inspect_ai.tool import ToolChoice, ToolInfo
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingDependencyError("inspect_ai", "inspect", "jurist.compat.inspect") from e

__all__ = ["JuristModelAPI", "jurist_scorer"]


def jurist_scorer(
    judge: Any,
    *,
    context_fields: Sequence[str] | Mapping[str, str] | None = None,
    use_target: bool | None = None,
    retries: int = 0,
    metrics: Any = None,
    name: str | None = None,
) -> Scorer:
    """An Inspect scorer whose score is ``judge``'s verdict (see the module doc).

    ``judge``: a jurist judge or a jurist catalog name. ``context_fields``: judge fields
    taken from the sample's metadata (a list, or judge field -> metadata key); the input
    always fills ``prompt`` when the judge reads it. ``use_target``: fill the judge's
    reference with the target (``None``: when the judge reads one and the target is not
    empty). ``metrics``: Inspect metrics (default ``[mean(), stderr()]``). ``name``: the
    scorer's name in the log (default ``"jurist"``; Inspect numbers repeats of a name).
    """
    from jurist.judges._protocol import with_models_of
    from jurist.pipeline import JudgeMetric

    found = JudgeMetric(judge, context_fields=context_fields, retries=retries).judge
    metric = JudgeMetric(
        with_models_of(found, _through_inspect), context_fields=context_fields, retries=retries
    )
    reads = set(metric.context) | set(metric.judge.required_fields)
    ref_target = metric.reference_target

    @scorer(  # type: ignore[untyped-decorator,unused-ignore]
        metrics=metrics if metrics is not None else [mean(), stderr()], name=name or "jurist"
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
    item = metric.items([output], references=[reference], task_data=[row])[0]
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


# -- the judge's calls as Inspect model calls -------------------------------------------------


@dataclass
class _Call:
    """One judge call on its way through Inspect: jurist's request, then its completion."""

    request: Request
    completion: Completion | None = None


_CALL: ContextVar[_Call | None] = ContextVar("jurist_inspect_call", default=None)


@modelapi(name="jurist")  # type: ignore[arg-type,unused-ignore]
class JuristModelAPI(ModelAPI):
    """Inspect's provider ``jurist``: sends a jurist judge's request through its model.

    Built by :func:`jurist_scorer` around each of a judge's models; Inspect's ``Model``
    around it does the accounting (usage, ``ModelEvent``, limits). Inspect's own retries
    are off (``should_retry`` is False): the judge's model stack retries as configured.
    """

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's signature
        jurist_model: Model | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self.jurist_model = jurist_model

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        call = _CALL.get()
        if call is None or self.jurist_model is None:
            raise ConfigError(
                f"Inspect model jurist/{self.model_name}: the jurist provider carries a "
                "jurist judge's calls inside jurist_scorer(); for a model of your own use "
                "Inspect's providers (openai/..., vllm/...)"
            )
        completion = await self.jurist_model.complete(call.request)
        call.completion = completion
        return _output(str(self.model_name), completion)

    def should_retry(self, ex: Exception) -> bool:
        return False  # the judge's own retry layer has retried what is transient

    def connection_key(self) -> str:
        return str(self.model_name)


class _InspectCalls(WrapperModel):
    """A judge's model whose every call is made through an Inspect ``Model``."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.inspect_model = InspectModel(
            JuristModelAPI(wrapped.spec, jurist_model=wrapped), GenerateConfig()
        )

    async def complete(self, request: Request) -> Completion:
        call = _Call(request)
        token = _CALL.set(call)
        try:
            await self.inspect_model.generate(
                _messages(request), config=_config(request), cache=False
            )
        finally:
            _CALL.reset(token)
        if call.completion is None:  # pragma: no cover - generate returned without a call
            raise ConfigError(f"{self.spec}: Inspect returned no completion for a judge call")
        return call.completion

    def around(self, model: Model) -> _InspectCalls:
        return _InspectCalls(model)


def _through_inspect(model: Model) -> Model:
    return _InspectCalls(model)


def _messages(request: Request) -> list[ChatMessage]:
    """What the transcript shows of the request (the text; images are named by ref)."""
    out: list[ChatMessage] = []
    for m in request.messages:
        text = m.content
        if m.images:
            text += "".join(f"\n[image {i.ref}]" for i in m.images)
        if m.role == "system":
            out.append(ChatMessageSystem(content=text))
        elif m.role == "assistant":
            out.append(ChatMessageAssistant(content=text))
        else:
            out.append(ChatMessageUser(content=text))
    return out


def _config(request: Request) -> GenerateConfig:
    return GenerateConfig(
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        top_p=request.top_p,
        seed=request.seed,
        stop_seqs=list(request.stop) if request.stop else None,
        logprobs=request.logprobs or None,
        top_logprobs=request.top_logprobs,
    )


_STOP: dict[str, StopReason] = {
    "stop": "stop",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def _output(model: str, completion: Completion) -> ModelOutput:
    usage = completion.billed_usage  # a cache hit bills nothing
    return ModelOutput(
        model=completion.model or model,
        choices=[
            ChatCompletionChoice(
                message=ChatMessageAssistant(content=completion.text, model=model),
                stop_reason=_STOP.get(completion.finish_reason or "", "unknown"),
            )
        ],
        usage=ModelUsage(
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            total_tokens=usage.prompt_tokens + usage.completion_tokens,
        ),
        time=completion.latency,
    )
