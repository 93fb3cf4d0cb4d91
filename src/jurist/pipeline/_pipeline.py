"""The dataset -> inference -> judge pipeline: :func:`evaluate_model`.

Three steps, as in unitxt's LLM-as-judge flow: (1) a dataset of instances, (2) an
inference step where the model under test answers each instance's prompt, (3) a
:class:`~jurist.pipeline.JudgeMetric` whose scores are a judge's verdicts on those
answers. The model under test and the judge may be any two backends.

Every field the prompt and the judge need is checked on every instance before the first
call. A generation that fails (API error, timeout) is recorded on its instance with
``score=None`` and an error ``"<category>: inference: ..."``; it is not judged and not
averaged. ``aevaluate_model`` is the coroutine, ``evaluate_model`` its sync twin.

>>> import jurist
>>> data = [{"question": "What is the capital of Texas?"}, {"question": "What color is the sky?"}]
>>> answers = jurist.get_model("mock:model", outputs=["Austin.", "Blue, on a clear day."])
>>> judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["5", "4"]), template="likert")
>>> res = jurist.evaluate_model(data, answers, judge, prompt_field="question")
>>> res.predictions
['Austin.', 'Blue, on a clear day.']
>>> res.scores, res.global_scores.mean
([1.0, 0.75], 0.875)
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from jurist._missing import is_missing
from jurist._sync import run_sync
from jurist.errors import ConfigError, DataError, JuristError
from jurist.judges._items import as_item_dicts
from jurist.judges._many import run_items
from jurist.judges._protocol import ItemJudge
from jurist.models import Model, get_model
from jurist.pipeline._metric import GlobalScores, InstanceResult, JudgeMetric
from jurist.types import Message, Request, Usage

__all__ = ["EvaluationResults", "Generation", "aevaluate_model", "evaluate_model"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Generation(BaseModel):
    """The model under test's answer to one instance (``prediction`` None when it failed)."""

    model_config = ConfigDict(frozen=True)

    index: int
    prompt: str
    prediction: str | None
    error: str | None = None
    usage: Usage = Usage()
    latency: float = 0.0


class EvaluationResults(BaseModel):
    """What :func:`evaluate_model` returns: generations, judged instances, global scores."""

    model_config = ConfigDict(frozen=True)

    model: str
    judge: str
    generations: tuple[Generation, ...]
    instances: tuple[InstanceResult, ...]
    global_scores: GlobalScores
    inference_usage: Usage = Usage()

    @property
    def predictions(self) -> list[str | None]:
        return [g.prediction for g in self.generations]

    @property
    def scores(self) -> list[float | None]:
        return [r.score for r in self.instances]

    def to_records(self, rows: Sequence[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
        """One flat dict per instance: the input row (when given), prompt, prediction, score."""
        out = []
        for i, (g, r) in enumerate(zip(self.generations, self.instances, strict=True)):
            rec: dict[str, Any] = dict(rows[i]) if rows is not None else {}
            rec.update(
                index=i,
                model_prompt=g.prompt,
                prediction=g.prediction,
                score=r.score,
                verdict=r.verdict,
                explanation=r.explanation,
                error=r.error,
                judge_input=r.judge_input,
                judge_output=r.raw_output,
            )
            out.append(rec)
        return out


def _as_metric(metric: JudgeMetric | ItemJudge | str, prompt_field: str) -> JudgeMetric:
    if isinstance(metric, JudgeMetric):
        return metric
    m = JudgeMetric(metric)
    if m.context.get("prompt") == "prompt" and prompt_field != "prompt":
        m.context["prompt"] = prompt_field
    return m


def _rows(dataset: Any) -> list[dict[str, Any]]:
    if isinstance(dataset, str | Path):
        from jurist.data._readers import read_records

        return list(read_records(dataset))
    return as_item_dicts(dataset)


def _prompt_of(row: Mapping[str, Any], index: int, prompt_field: str, template: str | None) -> str:
    if template is None:
        value = row.get(prompt_field)
        if is_missing(value):
            raise DataError(
                f"instance {index}: the prompt field {prompt_field!r} is missing; the "
                f"instance has fields {sorted(row)}"
            )
        return str(value)
    missing = [f for f in _PLACEHOLDER.findall(template) if is_missing(row.get(f))]
    if missing:
        raise DataError(
            f"instance {index}: the prompt template needs field {missing[0]!r}, which is "
            f"missing; the instance has fields {sorted(row)}"
        )
    return _PLACEHOLDER.sub(lambda m: str(row[m.group(1)]), template)


async def aevaluate_model(
    dataset: Any,
    model_under_test: Model | str | Any,
    metric: JudgeMetric | ItemJudge | str,
    *,
    prompt_field: str = "prompt",
    prompt_template: str | None = None,
    system_prompt: str | None = None,
    max_tokens: int = 256,
    temperature: float | None = 0.0,
    concurrency: int = 8,
    model_options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> EvaluationResults:
    """Generate an answer per instance with ``model_under_test``, then judge them.

    Args:
        dataset: a list of dicts, a pandas DataFrame, a ``datasets.Dataset`` or a file
            (``.jsonl``, ``.json``, ``.csv``, ``.parquet``).
        model_under_test: a :class:`~jurist.Model`, a ``"provider:name"`` spec (with
            ``model_options``) or a LangChain chat model.
        metric: a :class:`JudgeMetric`, a judge, or a catalog name; a judge or name
            becomes ``JudgeMetric(judge)`` with the judge's ``prompt`` read from
            ``prompt_field``. References (for judges that read one) come from the
            metric's ``reference_field`` column.
        prompt_field: the field sent to the model as the user message.
        prompt_template: instead, a text with ``{field}`` placeholders filled per instance
            (``"Answer in one sentence: {question}"``).
        system_prompt: an optional system message for the model under test.
        max_tokens, temperature: the model under test's sampling.
        concurrency: the most generations in flight (the judge has its own).
    """
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, got {concurrency}")
    rows = _rows(dataset)
    judge_metric = _as_metric(metric, prompt_field)
    prompts = [_prompt_of(r, i, prompt_field, prompt_template) for i, r in enumerate(rows)]
    judge_metric.items(["" for _ in rows], task_data=rows)  # every judge field, before any call
    model = get_model(model_under_test, **dict(model_options or {}))

    async def generate(i: int) -> Generation:
        messages = [Message(role="user", content=prompts[i])]
        if system_prompt:
            messages.insert(0, Message(role="system", content=system_prompt))
        request = Request(messages=tuple(messages), max_tokens=max_tokens, temperature=temperature)
        started = time.perf_counter()
        try:
            c = await model.complete(request)
        except JuristError as e:
            return Generation(
                index=i,
                prompt=prompts[i],
                prediction=None,
                error=f"{e.category}: inference: {e}",
                latency=time.perf_counter() - started,
            )
        return Generation(
            index=i, prompt=prompts[i], prediction=c.text, usage=c.usage, latency=c.latency
        )

    generations = await run_items(
        generate,
        len(rows),
        concurrency=concurrency,
        progress=progress,
        ok=lambda g: g.prediction is not None,
    )
    done = [g.index for g in generations if g.prediction is not None]
    judged = await judge_metric.acompute(
        [generations[i].prediction for i in done],
        task_data=[rows[i] for i in done],
        progress=progress,
    )
    by_index = {
        i: r.model_copy(update={"index": i}) for i, r in zip(done, judged.instances, strict=True)
    }
    instances = tuple(
        by_index.get(i) or InstanceResult(index=i, score=None, error=g.error)
        for i, g in enumerate(generations)
    )
    usage = Usage()
    for g in generations:
        usage = usage + g.usage
    return EvaluationResults(
        model=model.spec,
        judge=judge_metric.judge.name,
        generations=tuple(generations),
        instances=instances,
        global_scores=judge_metric.aggregate(instances),
        inference_usage=usage,
    )


def evaluate_model(
    dataset: Any,
    model_under_test: Model | str | Any,
    metric: JudgeMetric | ItemJudge | str,
    *,
    prompt_field: str = "prompt",
    prompt_template: str | None = None,
    system_prompt: str | None = None,
    max_tokens: int = 256,
    temperature: float | None = 0.0,
    concurrency: int = 8,
    model_options: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> EvaluationResults:
    """Sync twin of :func:`aevaluate_model`; works inside a running event loop too."""
    return run_sync(
        aevaluate_model(
            dataset,
            model_under_test,
            metric,
            prompt_field=prompt_field,
            prompt_template=prompt_template,
            system_prompt=system_prompt,
            max_tokens=max_tokens,
            temperature=temperature,
            concurrency=concurrency,
            model_options=model_options,
            progress=progress,
        )
    )
