"""``score_model`` and ``label_model``: the grader's messages, templated, sent to a jurist
model; the answer read as OpenAI's graders asked for it.

OpenAI asked the grader model for ``{"result": float, "steps": [{"description",
"conclusion"}]}`` (a label for ``label_model``) through a response format. Here the
same schema goes as the request's JSON schema where the backend takes one; otherwise a
system message at the end names the format. ``sampling_params`` map onto the request
(``temperature``, ``top_p``, ``seed``, ``max_completion_tokens``, ``reasoning_effort``:
``minimal`` is read as ``low``, ``xhigh`` as ``high``). A score is clipped to ``range``.
An answer with no number (no label among ``labels``) is a failed judgment (``parse:``),
where OpenAI scored 0; a reward gives its ``failure_value`` for it (0 by default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from jurist.compat.openai_graders._spec import (
    LabelModelGrader,
    SamplingParams,
    ScoreModelGrader,
)
from jurist.compat.openai_graders._template import render
from jurist.errors import JuristError
from jurist.models import Model
from jurist.models._retry import attempts_of
from jurist.types import Message, Reasoning, Request, Usage

__all__ = ["ModelGrade", "ask_model_grader", "request_for"]

_STEPS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"description": {"type": "string"}, "conclusion": {"type": "string"}},
        "required": ["description", "conclusion"],
        "additionalProperties": False,
    },
}
_EFFORT = {"minimal": "low", "xhigh": "high"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class ModelGrade:
    """What one model grader call gave."""

    value: float | None
    label: str | None
    error: str | None
    usage: Usage
    prompt: str
    text: str | None


def _schema(grader: ScoreModelGrader | LabelModelGrader) -> dict[str, Any]:
    result: dict[str, Any] = (
        {"type": "number"}
        if isinstance(grader, ScoreModelGrader)
        else {"type": "string", "enum": list(grader.labels)}
    )
    return {
        "name": "grader_result",
        "schema": {
            "type": "object",
            "properties": {"steps": _STEPS, "result": result},
            "required": ["steps", "result"],
            "additionalProperties": False,
        },
    }


def _format_note(grader: ScoreModelGrader | LabelModelGrader) -> str:
    if isinstance(grader, ScoreModelGrader):
        lo, hi = grader.range
        what = f"a number from {lo:g} to {hi:g}"
    else:
        what = "one of " + ", ".join(repr(x) for x in grader.labels)
    return (
        'Answer with a JSON object only: {"steps": [{"description": "...", "conclusion": '
        f'"..."}}], "result": {what}}}.'
    )


def request_for(
    grader: ScoreModelGrader | LabelModelGrader,
    namespaces: Mapping[str, Any],
    *,
    json_schema: bool,
) -> Request:
    """The request a model grader sends for one item."""
    messages = [
        Message(
            role="system" if m.role == "developer" else m.role, content=render(m.text, namespaces)
        )
        for m in grader.input
    ]
    if not json_schema:
        messages.append(Message(role="system", content=_format_note(grader)))
    params = grader.sampling_params or SamplingParams()
    effort = params.reasoning_effort
    return Request(
        messages=tuple(messages),
        temperature=params.temperature,
        top_p=params.top_p,
        seed=params.seed,
        max_tokens=params.max_tokens,
        reasoning=None if effort is None else Reasoning.parse(_EFFORT.get(effort, effort)),
        json_schema=_schema(grader) if json_schema else None,
    )


def _read(grader: ScoreModelGrader | LabelModelGrader, text: str) -> tuple[Any, str | None]:
    """The ``result`` in the model's answer, or why there is none."""
    stripped = text.strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    payload: Any = None
    if start != -1 and end > start:
        try:
            payload = orjson.loads(stripped[start : end + 1])
        except orjson.JSONDecodeError:
            payload = None
    if isinstance(payload, dict) and "result" in payload:
        return payload["result"], None
    if isinstance(grader, ScoreModelGrader):
        found = _NUMBER.fullmatch(stripped)
        if found:
            return float(found.group(0)), None
        return None, "parse: no JSON object with a numeric 'result' in the grader's answer"
    if stripped in grader.labels:
        return stripped, None
    return None, "parse: no JSON object with a 'result' label in the grader's answer"


async def ask_model_grader(
    grader: ScoreModelGrader | LabelModelGrader, model: Model, namespaces: Mapping[str, Any]
) -> ModelGrade:
    """Ask ``model`` as ``grader`` for the item in ``namespaces``."""
    request = request_for(grader, namespaces, json_schema=model.capabilities.json_schema)
    users = [m.content for m in request.messages if m.role == "user"]
    prompt = users[-1] if users else request.messages[-1].content  # the item's message
    try:
        completion = await model.complete(request)
    except JuristError as e:
        return ModelGrade(
            None, None, f"{e.category}: {e}", Usage(attempts=attempts_of(e)), prompt, None
        )
    usage = completion.billed_usage
    result, error = _read(grader, completion.text)
    if error is not None:
        return ModelGrade(None, None, error, usage, prompt, completion.text)
    if isinstance(grader, ScoreModelGrader):
        if isinstance(result, bool) or not isinstance(result, int | float):
            return ModelGrade(
                None,
                None,
                f"parse: 'result' is {result!r}, not a number",
                usage,
                prompt,
                completion.text,
            )
        lo, hi = grader.range
        return ModelGrade(
            min(max(float(result), lo), hi), None, None, usage, prompt, completion.text
        )
    if result not in grader.labels:
        return ModelGrade(
            None,
            None,
            f"parse: {result!r} is not one of the labels {list(grader.labels)}",
            usage,
            prompt,
            completion.text,
        )
    passed = 1.0 if result in grader.passing_labels else 0.0
    return ModelGrade(passed, str(result), None, usage, prompt, completion.text)
