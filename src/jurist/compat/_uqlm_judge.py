"""uqlm's ``LLMJudge`` over :class:`jurist.LLMJudge`; import it from :mod:`jurist.compat.uqlm`.

What it honours and where it differs from uqlm on purpose is on :mod:`jurist.compat.uqlm`.
:mod:`jurist.compat._uqlm_panel` builds its panel's judges from this class, and
:mod:`jurist.compat.uqlm` gathers both, so the imports point one way.

>>> from jurist.compat.uqlm import LLMJudge
>>> LLMJudge(llm="mock:judge", scoring_template="likert").scoring_template
'likert'
"""

from __future__ import annotations

import copy
import importlib.util
import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jurist._sync import run_sync
from jurist.compat._uqlm_likert import uqlm_likert_template
from jurist.errors import ConfigError, JuristError
from jurist.judges import LLMJudge as _LLMJudge
from jurist.models import Model, WrapperModel, get_model
from jurist.templates import Template, get_template, labels_scale
from jurist.types import CandidateScores, Completion, Message, Request

__all__ = ["LLMJudge", "judge_or_raise", "uqlm_judge_class"]

_TEMPLATES = ("true_false_uncertain", "true_false", "continuous", "likert")


def _uqlm_base() -> Any:
    """uqlm's own ``LLMJudge`` when uqlm is installed, so that uqlm's ``UQEnsemble`` and
    ``LLMPanel`` (which check ``isinstance(judge, uqlm.judges.LLMJudge)``) accept the
    drop-in; else ``object``. A uqlm that is installed but fails to import is warned about,
    never hidden."""
    if importlib.util.find_spec("uqlm") is None:
        return object
    try:
        from uqlm.judges.judge import LLMJudge as UqlmJudge
    except Exception as e:  # uqlm present but broken: say so, keep the drop-in usable
        warnings.warn(
            f"uqlm is installed but could not be imported ({type(e).__name__}: {e}); "
            "jurist.compat.uqlm.LLMJudge will not be accepted by uqlm's UQEnsemble/LLMPanel",
            stacklevel=2,
        )
        return object
    return UqlmJudge


if TYPE_CHECKING:
    _Base = object
else:
    _Base = _uqlm_base()


def uqlm_judge_class() -> type | None:
    """uqlm's own ``LLMJudge`` class when uqlm is installed (and imports), else None."""
    return None if _Base is object else _Base


class _CallErrors(WrapperModel):
    """The judge's model, keeping the error of each call that failed (the judge records
    it on the row's judgment and goes on; :func:`judge_or_raise` then raises it)."""

    def __init__(self, wrapped: Model, sink: list[JuristError]) -> None:
        super().__init__(wrapped)
        self.sink = sink

    async def complete(self, request: Request) -> Completion:
        try:
            return await self.wrapped.complete(request)
        except JuristError as e:
            self.sink.append(e)
            raise

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        try:
            return await self.wrapped.candidate_scores(request, candidates)
        except JuristError as e:
            self.sink.append(e)
            raise


_LOOP_HINT = (
    "a LangChain chat model's async client belongs to the event loop of its first call: with "
    "one model, use either `await judge_responses(...)` or `judge_responses_sync(...)`, not "
    "both (or build a new chat model for the other loop)"
)


def _loop_cause(error: BaseException) -> str | None:
    """The message of the error in ``error``'s chain that says a client was used from
    another event loop (asyncio's "bound to a different event loop", or "Event loop is
    closed" for a client whose loop has ended), else None."""
    seen: set[int] = set()
    at: BaseException | None = error
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        text = f"{type(at).__name__}: {at}"
        if any(m in text for m in ("different event loop", "different loop", "loop is closed")):
            return text
        at = at.__cause__ or at.__context__
    return None


async def judge_or_raise(
    judge: _LLMJudge,
    prompts: Sequence[str],
    responses: Sequence[str],
    retries: int,
    progress: bool,
) -> dict[str, Any]:
    """``judge.judge_responses`` in uqlm's terms: a verdict that cannot be read is NaN,
    and a call that fails (an HTTP 500 after the model's retries, a timeout, a client bound
    to another event loop) raises its error, as uqlm's judge raises its LLM's exception;
    never a NaN that hides it. The error says how many of the calls failed."""
    sink: list[JuristError] = []
    tapped = judge.with_models(lambda model: _CallErrors(model, sink))
    out = await tapped.judge_responses(prompts, responses, retries, progress)
    if sink:
        first = sink[0]
        first.add_note(
            f"{len(sink)} judge call(s) failed while judging {len(prompts)} response(s); "
            "uqlm's judge raises a failed call (it is not an unreadable verdict, so it is not "
            "scored NaN), and so does jurist.compat.uqlm"
        )
        cause = _loop_cause(first)
        if cause is not None:
            first.add_note(f"the cause: {cause}; {_LOOP_HINT}")
        raise first
    out["scores"] = [math.nan if s is None else s for s in out["scores"]]
    if "explanations" in out:
        out["explanations"] = [
            math.nan if s != s or e is None else e
            for s, e in zip(out["scores"], out["explanations"], strict=True)
        ]
    return out


class LLMJudge(_Base):
    """uqlm's ``LLMJudge(llm, max_calls_per_min, scoring_template, additional_context,
    keywords_to_scores_dict)`` (uqlm 0.6).

    ``llm`` is a LangChain chat model (as in uqlm), a jurist model or a ``provider:name``.
    ``additional_context`` is added to the judge's system message; ``keywords_to_scores_dict``
    maps float scores to lists of keywords. Earlier uqlm releases' ``system_prompt`` and
    ``template_ques_ans`` (``template_ques_ans.format(question, answer)`` must place both)
    are accepted as keywords. The judge answers in text, as uqlm's does.

    When uqlm is installed this class subclasses uqlm's ``LLMJudge`` (uqlm's constructor is
    not run: only the public ``judge_responses`` / ``generate_responses`` are jurist's),
    so uqlm's ``UQEnsemble(scorers=[...])`` and ``LLMPanel(judges=[...])`` take it.
    """

    def __init__(
        self,
        llm: Any,
        max_calls_per_min: int | None = None,
        scoring_template: str = "true_false_uncertain",
        additional_context: str | None = None,
        keywords_to_scores_dict: dict[float, list[str]] | None = None,
        *,
        system_prompt: str | None = None,
        template_ques_ans: str | None = None,
    ) -> None:
        if llm is None:
            raise ConfigError(
                "LLMJudge needs llm: a LangChain chat model, a jurist model or a "
                "'provider:name' (uqlm's LLMJudge requires it too); got None"
            )
        if scoring_template not in _TEMPLATES:
            raise ConfigError(
                f"scoring_template must be one of {', '.join(map(repr, _TEMPLATES))}, got "
                f"{scoring_template!r}"
            )
        _check_keywords(keywords_to_scores_dict)
        self.llm = llm
        self.max_calls_per_min = max_calls_per_min
        self.scoring_template = scoring_template
        self.template_ques_ans = template_ques_ans
        self.keywords_to_scores_dict = keywords_to_scores_dict
        self.additional_context = additional_context
        model: Model = llm if isinstance(llm, Model) else get_model(llm)
        template = _template(scoring_template, keywords_to_scores_dict)
        if template_ques_ans is not None:
            try:
                item = template_ques_ans.format("{prompt}", "{response}")
            except (IndexError, KeyError) as e:
                raise ConfigError(
                    "template_ques_ans must place the question and the answer with two "
                    f"positional fields, template_ques_ans.format(question, answer): {e}"
                ) from None
            if "{prompt}" not in item or "{response}" not in item:
                raise ConfigError(
                    "template_ques_ans must place the question and the answer with two "
                    f"positional fields, template_ques_ans.format(question, answer): {item!r}"
                )
            template = template.model_copy(update={"item": item})
        if keywords_to_scores_dict is not None:
            template = template.model_copy(update={"scale": labels_scale(keywords_to_scores_dict)})
        self.system_prompt = _with_context(
            system_prompt or template.system_text(), additional_context
        )
        self.judge = _LLMJudge(
            model,
            template,
            max_calls_per_min=max_calls_per_min,
            system_prompt=self.system_prompt,
            temperature=None if _is_langchain(llm) else 0.0,
            output="text",
        )
        explained = _with_context(
            system_prompt or template.system_text(explanations=True), additional_context
        )
        self._explaining = self.judge.with_options(explanations=True, system_prompt=explained)
        self.is_judge = True

    def models(self) -> tuple[Model, ...]:
        """The one model this judge calls."""
        return self.judge.models()

    def with_models(self, fn: Callable[[Model], Model]) -> LLMJudge:
        """A copy of this judge calling ``fn(model)`` instead of its model."""
        other = copy.copy(self)
        other.judge = self.judge.with_models(fn)
        other._explaining = other.judge.with_options(
            explanations=True, system_prompt=self._explaining.system_prompt
        )
        return other

    async def judge_responses(
        self,
        prompts: list[str],
        responses: list[str],
        retries: int = 5,
        progress_bar: Any = None,
        explanations: bool = False,
    ) -> dict[str, Any]:
        """``{"judge_prompts", "judge_responses", "scores"}`` (+ ``"explanations"`` when
        asked); unreadable scores are NaN, and so are their explanations. A call that fails
        (after the model's retries) raises its error, as uqlm's judge does."""
        judge = self._explaining if explanations else self.judge
        return await judge_or_raise(judge, prompts, responses, retries, bool(progress_bar))

    def judge_responses_sync(
        self,
        prompts: list[str],
        responses: list[str],
        retries: int = 5,
        explanations: bool = False,
    ) -> dict[str, Any]:
        """Sync twin of :meth:`judge_responses`."""
        return run_sync(
            self.judge_responses(prompts, responses, retries, explanations=explanations)
        )

    async def generate_responses(
        self,
        prompts: Sequence[str],
        system_prompt: str = "You are a helpful assistant.",
        count: int = 1,
        progress_bar: Any = False,
    ) -> dict[str, Any]:
        """Generate ``count`` responses per prompt with the judge's model, in uqlm's shape."""
        if not all(isinstance(p, str) for p in prompts):
            raise ConfigError("prompts must be a list of str")
        temperature = getattr(self.llm, "temperature", None)
        if count > 1 and temperature == 0:
            raise ConfigError("temperature must be greater than 0 if count > 1")
        duplicated = [p for p in prompts for _ in range(count)]
        requests = [
            Request(
                messages=(
                    Message(role="system", content=system_prompt),
                    Message(role="user", content=p),
                ),
                attempt=i % count,
            )
            for i, p in enumerate(duplicated)
        ]
        completions = await self.judge.model.complete_many(requests)
        return {
            "data": {"prompt": duplicated, "response": [c.text for c in completions]},
            "metadata": {
                "system_prompt": system_prompt,
                "temperature": temperature,
                "count": count,
            },
        }


def _template(name: str, keywords: dict[float, list[str]] | None) -> Template:
    """uqlm's template ``name``: likert also reads uqlm's verdict phrases, unless the user's
    ``keywords_to_scores_dict`` names the verdicts instead."""
    if name == "likert" and keywords is None:
        return uqlm_likert_template()
    return get_template(name)


def _is_langchain(obj: Any) -> bool:
    from jurist.models._langchain import is_langchain_model

    return is_langchain_model(obj)


def _with_context(system: str, context: str | None) -> str:
    return f"{system}\n\nAdditional context:\n{context}" if context else system


def _check_keywords(keywords: dict[float, list[str]] | None) -> None:
    if keywords is None:
        return
    for key, val in keywords.items():
        if not isinstance(key, float):
            raise ConfigError(f"keys in keywords_to_scores_dict must be floats, got {key!r}")
        if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
            raise ConfigError(
                f"values in keywords_to_scores_dict must be lists of strings, got {val!r}"
            )
