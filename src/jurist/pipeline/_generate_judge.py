""":class:`GenerateThenJudge`: the model under test answers an item, then a metric's judge
judges the answer, as one judge the batch engine can run.

``jurist eval-model`` runs this through :func:`jurist.evaluate`, so its output is a run
folder like every engine command's: each instance's answer and verdict are stored as
they finish, a killed run resumes without asking the model under test again for the
answers already judged, a changed model or prompt setting stops the resume (the
generation settings are part of :meth:`GenerateThenJudge.describe`), and ``jurist
report`` / ``jurist agreement`` read it.

An instance whose generation fails is stored with ``score=None`` and the error
``"<category>: inference: ..."``; it is not judged, and a resume (which judges failed
items again) asks the model under test again.

>>> import asyncio, jurist
>>> metric = jurist.JudgeMetric(jurist.LLMJudge(jurist.get_model("mock:j", outputs=["5"]),
...                                             template="likert"))
>>> both = GenerateThenJudge(jurist.get_model("mock:m", outputs=["Austin."]), metric)
>>> both.required_fields
('prompt',)
>>> out = asyncio.run(both.judge({"prompt": "Capital of Texas?"}))
>>> out.prediction, out.score, out.usage.calls
('Austin.', 1.0, 2)
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist._missing import is_missing
from jurist.errors import DataError, JuristError, UserError
from jurist.judges._protocol import ModelFn, models_of, with_models_of
from jurist.models import Model
from jurist.pipeline._metric import JudgeMetric
from jurist.pipeline._metric_results import instance_result
from jurist.types import Judgment, Message, Request, Usage

__all__ = ["GenerateThenJudge", "GeneratedOutcome", "prompt_columns"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class GeneratedOutcome(BaseModel):
    """One instance: the model under test's answer and the judge's outcome on it.

    The judge's own outcome fields (``verdict``, ``response``, ``judge_prompt``...; a
    pairwise judge's ``winner``, ``forward``...) sit beside these, as the report reads
    them. ``usage`` adds the generation's usage to the judge's; ``inference_usage`` is
    the generation's alone.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    score: float | None
    error: str | None = None
    usage: Usage = Usage()
    prediction: str | None = None
    model_prompt: str
    inference_usage: Usage = Usage()
    judge_input: str | None = None
    judge_output: str | None = None


def prompt_columns(prompt_field: str, prompt_template: str | None) -> tuple[str, ...]:
    """The data columns the prompt of the model under test reads.

    >>> prompt_columns("question", None), prompt_columns("q", "Answer {question} in {lang}")
    (('question',), ('question', 'lang'))
    """
    if prompt_template is None:
        return (prompt_field,)
    return tuple(dict.fromkeys(_PLACEHOLDER.findall(prompt_template)))


class GenerateThenJudge:
    """The model under test answers each item's prompt; ``metric``'s judge judges it.

    Args:
        model: the model under test.
        metric: the :class:`~jurist.pipeline.JudgeMetric` whose judge (and field mapping:
            context columns, reference column) judges the answer.
        prompt_field / prompt_template: the prompt sent (a column, or a text with
            ``{column}`` placeholders); system_prompt, max_tokens, temperature: the
            generation's settings.
        concurrency: items in flight (generation and judging); judge_concurrency: the
            most judge calls in flight at once.
    """

    def __init__(
        self,
        model: Model,
        metric: JudgeMetric,
        *,
        prompt_field: str = "prompt",
        prompt_template: str | None = None,
        system_prompt: str | None = None,
        max_tokens: int = 256,
        temperature: float | None = 0.0,
        concurrency: int = 8,
        judge_concurrency: int | None = None,
    ) -> None:
        self.model = model
        self.metric = metric
        self.prompt_field = prompt_field
        self.prompt_template = prompt_template
        self.system_prompt = system_prompt
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.concurrency = concurrency
        self.judge_concurrency = judge_concurrency
        self._slots: dict[int, asyncio.Semaphore] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_slots"] = {}  # semaphores belong to their event loop
        return state

    @property
    def name(self) -> str:
        return self.metric.judge.name

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The data columns every instance needs: the prompt's, the judge's context
        columns and the reference column."""
        m = self.metric
        needed = list(prompt_columns(self.prompt_field, self.prompt_template))
        for field in m.judge.required_fields:
            if field == m.judge_field:
                continue
            if field == m.reference_target:
                if m.reference_field is not None:
                    needed.append(m.reference_field)
                continue
            needed.append(m.context.get(field, field))
        return tuple(dict.fromkeys(needed))

    def describe(self) -> dict[str, Any]:
        """The judge's configuration with the generation's settings and the field
        mapping beside it (a resumed run must match them all)."""
        m = self.metric
        return {
            **m.judge.describe(),
            "generation": {
                "model": self.model.identity(),
                "prompt_field": self.prompt_field,
                "prompt_template": self.prompt_template,
                "system_prompt": self.system_prompt,
                "max_tokens": self.max_tokens,
                "temperature": self.temperature,
            },
            "metric_fields": {
                "prediction": m.judge_field,
                "reference": m.reference_field,
                "context": dict(m.context),
            },
        }

    def models(self) -> tuple[Model, ...]:
        return (self.model, *models_of(self.metric.judge))

    def with_models(self, fn: ModelFn) -> GenerateThenJudge:
        model = fn(self.model)
        metric = JudgeMetric(
            with_models_of(self.metric.judge, fn),
            prediction_field=self.metric.prediction_field,
            reference_field=self.metric.reference_field,
            context_fields=dict(self.metric.context),
            judge_field=self.metric.judge_field,
            retries=self.metric.retries,
            concurrency=self.metric.concurrency,
            confidence=self.metric.confidence,
            n_resamples=self.metric.n_resamples,
            seed=self.metric.seed,
            name=self.metric.name,
        )
        return GenerateThenJudge(
            model,
            metric,
            prompt_field=self.prompt_field,
            prompt_template=self.prompt_template,
            system_prompt=self.system_prompt,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            concurrency=self.concurrency,
            judge_concurrency=self.judge_concurrency,
        )

    def prompt(self, item: Mapping[str, Any]) -> str:
        """The prompt the model under test gets for ``item``."""
        columns = prompt_columns(self.prompt_field, self.prompt_template)
        missing = [c for c in columns if is_missing(item.get(c))]
        if missing:
            raise DataError(f"the prompt needs field {missing[0]!r}; the fields are {sorted(item)}")
        if self.prompt_template is None:
            return str(item[self.prompt_field])
        return _PLACEHOLDER.sub(lambda m: str(item[m.group(1)]), self.prompt_template)

    async def judge(self, item: Mapping[str, Any], *, retries: int = 0) -> GeneratedOutcome:
        """Generate the answer to ``item``, then judge it (see the class doc)."""
        prompt = self.prompt(item)
        messages = [Message(role="user", content=prompt)]
        if self.system_prompt:
            messages.insert(0, Message(role="system", content=self.system_prompt))
        request = Request(
            messages=tuple(messages), max_tokens=self.max_tokens, temperature=self.temperature
        )
        try:
            answer = await self.model.complete(request)
        except UserError:
            raise
        except JuristError as e:
            sent = Usage(attempts=int(getattr(e, "attempts", 0) or 0))
            return GeneratedOutcome(
                score=None,
                error=f"{e.category}: inference: {e}",
                usage=sent,
                model_prompt=prompt,
                inference_usage=sent,
            )
        judge_item = self.metric.items([answer.text], task_data=[item])[0]
        async with self._slot():
            try:
                outcome: Any = await self.metric.judge.judge(judge_item, retries=retries)
            except UserError:
                raise
            except JuristError as e:
                outcome = Judgment(score=None, error=f"{e.category}: {e}")
        result = instance_result(
            0, outcome, judge_item, self.metric.judge_field, self.metric.reference_target
        )
        ours = GeneratedOutcome.model_fields
        inner = {k: v for k, v in outcome.model_dump(mode="json").items() if k not in ours}
        return GeneratedOutcome(
            **inner,
            score=outcome.score,
            error=outcome.error,
            usage=answer.usage + outcome.usage,
            prediction=answer.text,
            model_prompt=prompt,
            inference_usage=answer.usage,
            judge_input=result.judge_input,
            judge_output=result.raw_output,
        )

    def _slot(self) -> Any:
        if self.judge_concurrency is None:
            return _Free()
        loop = id(asyncio.get_running_loop())
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.judge_concurrency)
        return slots


class _Free:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None
