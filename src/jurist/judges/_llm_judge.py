""":class:`LLMJudge`: one model, one template, a verdict per item.

>>> import jurist
>>> model = jurist.get_model("mock:judge", outputs=["Correct", "nonsense", "Incorrect"])
>>> judge = jurist.LLMJudge(model)
>>> out = judge.judge_responses_sync(["2+2?", "Capital of France?"], ["4", "Lyon"], retries=1)
>>> out["scores"]
[1.0, 0.0]
>>> out["judge_responses"]
['Correct', 'Incorrect']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from functools import partial
from typing import Any

from jurist._sync import run_sync
from jurist.errors import CapabilityError, ConfigError, DataError, JuristError
from jurist.judges._declare import Declared, checked, register
from jurist.judges._examples import check_examples, dump_examples, examples_text
from jurist.judges._llm_config import LLMJudgeConfig, OutputFormat
from jurist.judges._many import ManyItemsJudge, run_items
from jurist.judges._output import (
    holds_json,
    joined_notes,
    json_off_note,
    output_state,
    text_read_note,
)
from jurist.judges._results import JudgeResults
from jurist.judges._scoring import ScoringChoice, bare_verdict, choose_route
from jurist.judges._spec import judge_model
from jurist.judges._thinking import (
    CUT_REASONS,
    bounded,
    cut_in_thinking,
    recover,
    trace_of,
)
from jurist.judges._weigher import LowCoverage, Weigher, check_coverage_options
from jurist.models import Model, with_limits
from jurist.models._model import refuse_images
from jurist.models._reasoning import headroom, refuse_reasoning
from jurist.models._retry import attempts_of
from jurist.models._stack import limits_layer
from jurist.templates import PARSE_INLINE_MAX, Template, get_template
from jurist.types import (
    Completion,
    Judgment,
    Message,
    OutputFormatUsed,
    Request,
    Usage,
    assembled,
)

__all__ = ["LLMJudge", "LLMJudgeConfig", "OutputFormat"]


class LLMJudge(Declared, ManyItemsJudge[Judgment, JudgeResults]):
    """A judge: a model plus a template; configuration only, nothing stored per call.

    Args:
        model: a :class:`~jurist.models.Model`, a ``"provider:name"`` spec, a LangChain chat
            model, or ``None`` for the default model.
        template: a built-in template name or a :class:`~jurist.templates.Template`.
        max_calls_per_min: pace calls to this rate (smoothly, through
            :class:`~jurist.models.LimitedModel`, placed under the model's retries so
            each retry is paced too: :func:`~jurist.models.with_limits`).
        explanations: ask for and return a short explanation with each verdict.
        instructions: replace the template's instructions (the task description).
        labels: replace the scale with a label -> score map (``{"Yes": 1.0, "No": 0.0}``),
            or uqlm's score -> keywords map (``{1.0: ["yes"], 0.0: ["no"]}``).
        system_prompt: replace the whole system message (instructions and format).
        examples: few-shot examples, items people judged (``{"item": {...}, "verdict": ...}``
            or :class:`~jurist.judges.Example`), placed in the system message after the
            instructions and format (static, so the prefix cache is shared); see
            :mod:`jurist.judges._examples`.
        temperature, max_tokens: sampling; ``max_tokens`` (the verdict's budget) defaults to
            the template's; ``temperature=None`` leaves it to the model (a LangChain
            model's own setting).
        reasoning: how long a thinking model may think: ``"none"``, ``"low"``,
            ``"medium"``, ``"high"`` or a token budget (``2048``), translated by the backend
            into its own parameters (docs/reasoning.md); the thinking's budget is added to
            ``max_tokens``. ``None`` (default): the model's own default. A backend that
            cannot think refuses it here (:class:`~jurist.errors.CapabilityError`).
        keep_reasoning: keep the thinking trace in each judgment's ``reasoning`` (bounded);
            ``False`` drops it.
        thinking_recovery, max_thinking_tokens: what a reply cut inside its thinking gets:
            ``"continue"`` (one continuation asking for the verdict alone, then retries at
            twice the ``max_tokens`` up to ``max_thinking_tokens``), ``"grow"`` (only the
            retries) or ``"off"``; see :mod:`jurist.judges._thinking`.
        concurrency: the most calls in flight at once in a batch.
        scoring: ``"parse"`` reads the verdict from the text; ``"logprobs"`` returns the
            expected score over the verdicts' probabilities (an error when the backend
            gives none); ``"auto"`` uses logprobs where the backend gives them and records
            per judgment which mode scored it. See :mod:`jurist.judges._scoring`.
        top_logprobs: how many alternatives per token to ask for on the ``top`` route.
        min_coverage: the least probability the model must put on the scale's verdicts
            for a logprob score to count (default 0.5; 0 turns the check off). Below it
            the judgment is marked ``low_coverage`` and handled as ``low_coverage`` says.
        low_coverage: ``"fail"`` (default): a ``scoring="logprobs"`` judgment gets no
            score (``logprobs: verdict probability mass ... below min_coverage ...``), an
            ``"auto"`` one keeps its parsed verdict's score; ``"flag"``: the weighed score
            is kept, flagged. See :mod:`jurist.judges._weigher`.
        extra_body: provider-specific request fields sent with every call (a llama.cpp
            ``grammar``, vLLM's ``guided_choice``...); part of the cache key.
        output: ``"json"`` asks for one JSON object constrained by the template's schema
            (:meth:`~jurist.templates.Template.json_schema`); ``"text"`` for the template's
            text format; ``"auto"`` (default) for JSON where the backend supports a schema.
        turn: how an item holding a conversation (``messages``) is judged: ``"last"``
            (default: the last assistant reply is the response, the rest is context),
            ``"all"``, or a reply's index (see :meth:`~jurist.templates.Template.with_turn`).
        max_tool_chars: a tool result or tool-call arguments longer than this is cut, with a
            marker, when a conversation is rendered (``None``: never cut).
        **model_options: with a ``"provider:name"`` spec, options of the model backend
            (``base_url``, ``api_key``, ``timeout``...), as :func:`~jurist.get_model` takes.
    """

    config: LLMJudgeConfig
    """The declared options (the one place they are kept)."""

    def __init__(
        self,
        model: Model | str | Any | None = None,
        template: str | Template | None = None,
        **options: Any,
    ) -> None:
        fields = LLMJudgeConfig.model_fields
        given = {k: options.pop(k) for k in list(options) if k in fields}
        base = judge_model(model, options, "LLMJudge")  # the rest: the backend's options
        if template is not None:  # None: the declared default
            given["template"] = template
        self._setup(checked(LLMJudgeConfig, {**given, "model": base}, "LLMJudge"))

    @classmethod
    def from_config(cls, config: LLMJudgeConfig) -> LLMJudge:
        """The judge ``config`` declares."""
        judge = cls.__new__(cls)
        judge._setup(config)
        return judge

    def _setup(self, config: LLMJudgeConfig, live: Model | None = None) -> None:
        """Everything this judge derives from ``config``, once (``live``: the model to call
        instead of the configured one, which :meth:`with_models` gives)."""
        self.config = config
        c = config
        base = c.model
        if live is not None:
            base = live
        elif c.max_calls_per_min is not None:
            base = with_limits(base, limits_layer(rpm=c.max_calls_per_min))
        tpl = get_template(c.template) if isinstance(c.template, str) else c.template
        if c.instructions is not None:
            tpl = tpl.model_copy(update={"instructions": c.instructions})
        if c.labels is not None:
            tpl = tpl.with_labels(c.labels)
        if c.turn != tpl.turn or c.max_tool_chars != tpl.max_tool_chars:
            tpl = tpl.with_turn(c.turn, max_tool_chars=c.max_tool_chars)
        check_coverage_options(c.min_coverage, c.low_coverage)
        if base.capabilities.scalar:
            raise ConfigError(
                f"LLMJudge: {base.spec} is a scalar reward model (its completion is a score, "
                "not text): judge with RewardModelJudge"
            )
        self.model: Model = base
        self.template: Template = tpl
        self.max_tokens: int = c.max_tokens or (
            tpl.max_tokens_explained if c.explanations else tpl.max_tokens
        )
        refuse_reasoning(base.spec, base.capabilities.thinking, c.reasoning)  # before a call
        self._asked_tokens = headroom(self.max_tokens, c.reasoning)  # verdict + thinking
        self.name: str = c.name or f"{tpl.name}@{base.spec}"
        explanations, system_prompt = c.explanations, c.system_prompt
        has_schema = base.capabilities.json_schema
        if c.output == "json" and not has_schema:
            raise ConfigError(
                f"output='json' needs a backend with JSON-schema output; {base.spec} has none "
                "(use output='text')"
            )
        self.json = tpl.json_only or c.output == "json" or (c.output == "auto" and has_schema)
        self._schema = tpl.json_schema(explanations) if self.json and has_schema else None
        self._system = system_prompt or tpl.system_text(explanations=explanations, json=self.json)
        # output="auto" degrades: a text reply is read as text, and a model that keeps
        # answering in text is asked for text (see jurist.judges._output)
        self._degrades = c.output == "auto" and self._schema is not None and not tpl.json_only
        self._text_system = system_prompt or tpl.system_text(explanations=explanations)
        self.examples = check_examples(c.examples, tpl)
        if self.examples:
            shots = examples_text(self.examples, tpl)
            self._system = f"{self._system}\n\n{shots}"
            self._text_system = f"{self._text_system}\n\n{shots}"
        self._text_system_message = Message(role="system", content=self._text_system)
        self._explain = explanations  # read per verdict: an attribute, not a property
        self._takes_images = self.model.capabilities.images  # once: not a model per call
        self._json_off_note = json_off_note(base.spec)
        top_logprobs = c.top_logprobs
        route, space, reason = choose_route(base, tpl, c.scoring)
        self._weigher = (
            Weigher(
                base,
                tpl,
                route,
                space,
                top_logprobs=min(top_logprobs, base.capabilities.top_logprobs or top_logprobs),
                bare=bare_verdict(
                    tpl,
                    explanations=explanations,
                    custom_system=system_prompt is not None,
                    json=self.json,
                ),
                strict=c.scoring == "logprobs",
                min_coverage=c.min_coverage,
                low_coverage=c.low_coverage,
                # the judge's reasoning= (declared with the thinking option), when it has one
                reasoning=getattr(c, "reasoning", None),
            )
            if route is not None and space is not None
            else None
        )
        self._no_logprobs_note = f"logprobs unavailable: {reason}" if reason else None
        # what every Request of this judge carries, built once (only what differs from the
        # Request's defaults); _text_request: the same, asking for text (no JSON schema)
        top = self._weigher.top_logprobs if self._weigher and self._weigher.route == "top" else None
        settings = {k: v for k, v in c.request_settings().items() if v is not None}
        self._text_request: dict[str, Any] = {
            "max_tokens": self._asked_tokens,
            **({"logprobs": True, "top_logprobs": top} if top is not None else {}),
            **({"extra": c.extra_body} if c.extra_body else {}),
            **settings,  # temperature, reasoning...: sent with every call
        }
        self._request: dict[str, Any] = (
            {**self._text_request, "json_schema": self._schema}
            if self._schema is not None
            else self._text_request
        )

    # the declared options, read from the one configuration
    @property
    def explanations(self) -> bool:
        return self.config.explanations

    @property
    def system_prompt(self) -> str | None:
        return self.config.system_prompt

    @property
    def temperature(self) -> float | None:
        return self.config.temperature

    @property
    def concurrency(self) -> int:  # type: ignore[override]
        return self.config.concurrency

    @property
    def scoring(self) -> ScoringChoice:
        return self.config.scoring

    @property
    def min_coverage(self) -> float:
        return float(self.config.min_coverage)

    @property
    def low_coverage(self) -> LowCoverage:
        return self.config.low_coverage

    @property
    def extra_body(self) -> dict[str, Any]:
        return self.config.extra_body

    def summary(self) -> str:
        """One line about this judge (a catalog entry's default description)."""
        return f"{self.template.name} judge on {self.model.spec}"

    def __repr__(self) -> str:
        return f"LLMJudge({self.model.spec!r}, template={self.template.name!r})"

    def with_options(self, **changes: Any) -> LLMJudge:
        """A new judge with the same configuration except ``changes`` (constructor keywords).

        The model object is shared, not rebuilt.

        >>> judge = LLMJudge("mock:j", template="likert", scoring="auto")
        >>> other = judge.with_options(explanations=True)
        >>> other.explanations, other.scoring, other.model is judge.model
        (True, 'auto', True)
        """
        return LLMJudge.from_config(self.config.updated("LLMJudge", changes))

    def models(self) -> tuple[Model, ...]:
        """The one model this judge calls (with its ``max_calls_per_min`` pacing).

        >>> LLMJudge("mock:j").models()
        (MockModel('mock:j'),)
        """
        return (self.model,)

    def with_models(self, fn: Callable[[Model], Model]) -> LLMJudge:
        """A copy of this judge calling ``fn(model)`` instead of its model; the rest of
        its configuration is the same (its pacing, if any, is part of the model passed).

        >>> from jurist.models import RetryModel
        >>> judge = LLMJudge("mock:j", template="likert")
        >>> other = judge.with_models(RetryModel)
        >>> other.model, other.describe() == judge.describe(), judge.model
        (RetryModel(MockModel('mock:j'), max_retries=2), True, MockModel('mock:j'))
        """
        judge = LLMJudge.__new__(LLMJudge)
        judge._setup(self.config, live=fn(self.model))
        return judge

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The item fields the template needs (``prompt``, ``response``...)."""
        return self.template.fields

    def describe(self) -> dict[str, Any]:
        """This judge's whole configuration as JSON-able data (for run manifests).

        >>> LLMJudge("mock:j", template="likert").describe()["template"]["name"]
        'likert'
        """
        return {
            "kind": "llm_judge",
            "name": self.name,
            "model": self.model.identity(),
            "template": self.template.model_dump(mode="json"),
            "system": self._system,
            **self.config.described(),  # explanations, temperature, scoring...
            "max_tokens": self.max_tokens,
            "json": self.json,
            "json_schema": self._schema,
            **({"examples": dump_examples(self.examples)} if self.examples else {}),
        }

    # -- one item -------------------------------------------------------------------------

    def messages(self, item: Mapping[str, Any], *, where: str = "item") -> tuple[Message, ...]:
        """The messages this judge sends for ``item`` (its images after the item's text)."""
        return self.template.render(item, system=self._system, where=where)

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> Judgment:
        """Judge one item (a mapping with the template's fields: ``prompt``, ``response``...).

        ``retries`` re-asks the model at most that many more times while the verdict cannot
        be read; API failures are not re-asked here (the retry wrapper handles those).
        """
        messages = self.messages(item)
        return await self._judge_messages(messages, retries)

    def judge_messages(
        self, messages: tuple[Message, ...], *, retries: int = 0
    ) -> Coroutine[Any, Any, Judgment]:
        """Judge messages already rendered by :meth:`messages` (for a caller that keys or
        checks them first, so an item is rendered once); the coroutine of :meth:`judge`."""
        if type(messages) is not tuple:  # a list given: the requests hold a tuple
            messages = tuple(messages)
        return self._judge_messages(messages, retries)  # no frame of its own

    async def _judge_messages(self, messages: tuple[Message, ...], retries: int) -> Judgment:
        prompt_text = messages[-1].content
        if not self._takes_images and any(m.images for m in messages):
            try:  # never sent: a text-only model would judge the item without its images
                refuse_images(self.model.spec, Request(messages=messages))
            except CapabilityError as e:
                return Judgment(score=None, error=f"{e.category}: {e}", judge_prompt=prompt_text)
        if self._weigher is not None and self._weigher.one_pass:
            return await self._weigher.score_bare(messages, prompt_text)
        usage: Usage | None = None  # billed usage summed over the attempts (none yet)
        attempts = 0
        latency = 0.0
        text: str | None = None
        error = "parse: no attempt made"
        state = output_state(self.model) if self._degrades else None
        note: str | None = None
        for attempt in range(retries + 1):
            as_text = state is not None and state.json_off
            asked = self._as_text(messages) if as_text else messages
            # the judge's own settings, checked when it was built: assembled (the hot path)
            request = assembled(
                Request,
                {
                    "messages": asked,
                    "attempt": attempt,
                    **(self._text_request if as_text else self._request),
                },
            )
            started = time.perf_counter()
            try:
                completion = await self.model.complete(request)
            except JuristError as e:
                sent = attempts_of(e)
                attempts += sent
                return Judgment(
                    score=None,
                    error=f"{e.category}: {e}",
                    judge_prompt=prompt_text,
                    response=text,
                    attempts=attempts,
                    usage=_plus(usage, Usage(attempts=sent)),
                    latency=latency + time.perf_counter() - started,
                )
            latency += completion.latency
            attempts += completion.attempts
            billed = completion.usage
            if billed.attempts != completion.attempts:
                billed = completion.billed_usage
            usage = billed if usage is None else usage + billed
            read_json = True if self.json and not as_text else None
            text = completion.text
            traces: list[str] = []
            thinking_note: str | None = None
            if completion.reasoning or "<" in text or completion.finish_reason in CUT_REASONS:
                trace = trace_of(completion)  # none without a trace or a tag: checked first
                traces = [trace] if trace else []
            if completion.finish_reason in CUT_REASONS and cut_in_thinking(completion):
                # nothing in it is a verdict: recover one
                rec = await recover(
                    self.model,
                    request,
                    completion,
                    mode=self.config.thinking_recovery,
                    cap=self.config.max_thinking_tokens,
                    readable=partial(self._readable, read_json=read_json),
                )
                attempts += rec.attempts
                usage, latency = usage + rec.usage, latency + rec.latency
                traces, thinking_note = rec.traces, rec.note
                if rec.completion is None:
                    why = f"api: {rec.error}" if rec.error is not None else rec.note
                    return Judgment(
                        score=None,
                        error=f"parse: truncated in thinking ({why})",
                        judge_prompt=prompt_text,
                        response=completion.text,
                        attempts=attempts,
                        usage=usage,
                        latency=latency,
                        reasoning=self._kept(traces),
                        thinking_note=thinking_note,
                    )
                completion = rec.completion
                text = completion.text
            if len(text) <= PARSE_INLINE_MAX:  # what aparse does, without its coroutine
                verdict = self.template.parse(text, explanations=self._explain, json=read_json)
            else:
                verdict = await self.template.aparse(
                    text, explanations=self._explain, json=read_json
                )
            fmt: OutputFormatUsed = "json" if read_json else "text"
            note = self._json_off_note if as_text else None
            if state is not None and not as_text:
                if verdict.score is None and not holds_json(text):
                    state.saw_text()  # a server that ignores the schema: read the text
                    verdict = await self.template.aparse(
                        text, explanations=self._explain, json=False
                    )
                    fmt, note = "text", text_read_note(self.model.spec)
                else:
                    state.saw_json()
            # the backend sent the schema in a fallback form (see jurist.models._json_form)
            if completion.format_note is not None:
                note = joined_notes(completion.format_note, note)
            if verdict.score is not None:
                value = verdict.value  # a number on the scale is a float, as validation makes it
                judgment = assembled(  # every value made here or by the parser: not validated
                    Judgment,
                    {
                        "score": float(verdict.score),
                        "verdict": value if isinstance(value, str | None) else float(value),
                        "explanation": verdict.explanation,
                        "judge_prompt": prompt_text,
                        "response": text,
                        "attempts": attempts,
                        "usage": usage,
                        "latency": latency,
                        "cached": completion.cached,
                        "scoring_note": self._no_logprobs_note,
                        "output_format": fmt,
                        "output_note": note,
                        "reasoning": self._kept(traces) if traces else None,
                        "thinking_note": thinking_note,
                    },
                )
                if self._weigher is None:
                    return judgment
                return await self._weigher.weigh(asked, completion, judgment)
            error = verdict.error or "parse: no verdict"
            if self._weigher is not None and self._weigher.prefills and fmt == "text":
                # the answer names no verdict: weigh the verdicts after it (one prefill)
                failed = Judgment(
                    score=None,
                    error=error,
                    judge_prompt=prompt_text,
                    response=text,
                    attempts=attempts,
                    usage=usage,
                    latency=latency,
                    cached=completion.cached,
                    output_format=fmt,
                    output_note=note,
                    reasoning=self._kept(traces),
                    thinking_note=thinking_note,
                )
                weighed = await self._weigher.after_answer(asked, completion, failed)
                if weighed is not None:
                    return weighed
        return Judgment(
            score=None,
            error=error,
            judge_prompt=prompt_text,
            response=text,
            attempts=attempts,
            usage=usage if usage is not None else Usage(),
            latency=latency,
            output_note=note,
            scoring_note=self._weigher.no_prefill_note if self._weigher is not None else None,
            reasoning=self._kept(traces),
        )

    def _kept(self, traces: list[str]) -> str | None:
        """The thinking a judgment keeps (bounded), unless ``keep_reasoning=False``."""
        if not traces or not self.config.keep_reasoning:
            return None
        return bounded("\n\n".join(traces))

    def _readable(self, completion: Completion, *, read_json: bool | None) -> bool:
        """Whether ``completion`` holds a verdict this judge can read (as text too where
        ``output="auto"`` reads a text reply)."""
        forms = (read_json, False) if read_json and self._degrades else (read_json,)
        return any(
            self.template.parse(completion.text, explanations=self.explanations, json=f).score
            is not None
            for f in forms
        )

    def _as_text(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """``messages`` with the system message asking for the template's text format."""
        if not messages or messages[0].role != "system" or messages[0].content != self._system:
            return messages
        return (self._text_system_message, *messages[1:])

    # -- batches (judge_items and the sync twins come from ManyItemsJudge) ----------------------

    def _who(self) -> str:
        return f"template {self.template.name!r}"

    def _results(self, outcomes: list[Judgment], rows: list[dict[str, Any]]) -> JudgeResults:
        return JudgeResults(outcomes, rows)

    async def judge_responses(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        retries: int = 5,
        progress_bar: bool | None = None,
        *,
        concurrency: int | None = None,
    ) -> dict[str, list[Any]]:
        """uqlm's shape: ``judge_prompts``, ``judge_responses``, ``scores`` (+ ``explanations``).

        ``scores`` holds ``None`` where no verdict could be read after ``retries`` re-asks.
        """
        if len(prompts) != len(responses):
            raise DataError(
                f"prompts and responses differ in length: {len(prompts)} != {len(responses)}"
            )
        items = [{"prompt": p, "response": r} for p, r in zip(prompts, responses, strict=True)]
        render, system = self.template.render, self._system
        all_messages = [render(item, system=system) for item in items]  # as messages() does

        def one(i: int) -> Coroutine[Any, Any, Judgment]:
            return self._judge_messages(all_messages[i], retries)  # no frame of its own

        judgments = await run_items(
            one,
            len(all_messages),
            concurrency=concurrency or self.concurrency,
            progress=bool(progress_bar),
        )
        out: dict[str, list[Any]] = {
            "judge_prompts": [j.judge_prompt for j in judgments],
            "judge_responses": [j.response for j in judgments],
            "scores": [j.score for j in judgments],
        }
        if self.explanations:
            out["explanations"] = [j.explanation for j in judgments]
        return out

    # -- sync twins -------------------------------------------------------------------------

    def judge_responses_sync(
        self,
        prompts: Sequence[str],
        responses: Sequence[str],
        retries: int = 5,
        progress_bar: bool | None = None,
        *,
        concurrency: int | None = None,
    ) -> dict[str, list[Any]]:
        """Sync twin of :meth:`judge_responses`."""
        return run_sync(
            self.judge_responses(prompts, responses, retries, progress_bar, concurrency=concurrency)
        )


def _plus(total: Usage | None, usage: Usage) -> Usage:
    """``total + usage``, with no new object for the first (usually only) attempt."""
    return usage if total is None else total + usage


register("judge", LLMJudgeConfig, LLMJudge)
