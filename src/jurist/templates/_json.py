"""JSON verdicts: the schema a backend can enforce, and reading a JSON object output.

With a backend that enforces a JSON schema, the judge writes one object such as
``{"explanation": "...", "verdict": "A"}``. The schema puts ``explanation`` (when asked)
before the verdict, so a model that decodes in property order reasons first. The verdict is
an ``enum`` of the scale's label names; on a whole-number scale an ``enum`` of its numbers
(grammar-based servers such as llama.cpp enforce ``enum`` but not ``minimum`` /
``maximum``); on a continuous scale a bounded ``number``.

Reading is exact, as everywhere in jurist: the verdict must be a label name or alias
(case and spacing aside) or a number on the scale; anything else is a failure.

>>> from jurist.templates._scale import NumericScale
>>> likert = NumericScale(low=1, high=5, integer=True)
>>> json_schema(likert, "verdict", explanations=False)["properties"]
{'verdict': {'type': 'integer', 'enum': [1, 2, 3, 4, 5]}}
>>> parse_json('{"verdict": 4, "explanation": "one slip"}', likert, "verdict", explanation=True)
ParsedVerdict(value=4.0, score=0.75, error=None, explanation='one slip')
>>> parse_json('{"verdict": 6}', likert, "verdict").error
'parse: JSON verdict 6 is outside the scale (a whole number from 1 to 5)'
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from jurist.templates._parse import ParsedVerdict
from jurist.templates._scale import LabelScale, NumericScale

__all__ = ["find_json_object", "json_schema", "parse_json"]

_MAX_ENUM = 100


def json_schema(
    scale: LabelScale | NumericScale, key: str, *, explanations: bool
) -> dict[str, Any]:
    """A JSON schema for one verdict object: ``{key: verdict}`` (+ ``explanation``)."""
    verdict: dict[str, Any]
    if isinstance(scale, LabelScale):
        verdict = {"type": "string", "enum": [label.name for label in scale.labels]}
    elif scale.integer and scale.high - scale.low <= _MAX_ENUM:
        verdict = {"type": "integer", "enum": list(range(int(scale.low), int(scale.high) + 1))}
    else:
        verdict = {
            "type": "integer" if scale.integer else "number",
            "minimum": _num(scale.low),
            "maximum": _num(scale.high),
        }
    properties: dict[str, Any] = {}
    if explanations:
        properties["explanation"] = {"type": "string"}
    properties[key] = verdict
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def find_json_object(answer: str) -> dict[str, Any] | None:
    """The JSON object that ``answer`` consists of (a fenced block allowed), else None."""
    body = _unfence(answer.strip())
    if not body.startswith("{"):
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _unfence(body: str) -> str:
    """The inside of a fenced block (```json ... ```), else ``body`` itself; linear."""
    if len(body) < 6 or not body.startswith("```") or not body.endswith("```"):
        return body
    inner = body[3:-3]
    if inner[:4].lower() == "json":
        inner = inner[4:]
    return inner.strip()


def parse_json(
    text: str, scale: LabelScale | NumericScale, key: str, *, explanation: bool = False
) -> ParsedVerdict:
    """Read the verdict under ``key`` of the JSON object that ``text`` holds."""
    from jurist.templates._parse import split_reasoning

    answer, _ = split_reasoning(text)
    obj = find_json_object(answer)
    if obj is None:
        return _fail("the output is not a JSON object")
    return read_json_verdict(obj, scale, key, explanation=explanation)


def read_json_verdict(
    obj: dict[str, Any], scale: LabelScale | NumericScale, key: str, *, explanation: bool
) -> ParsedVerdict:
    """Read the verdict under ``key`` of an already decoded JSON object."""
    if key not in obj:
        return _fail(f"the JSON object has no {key!r} key (keys: {sorted(obj)})")
    raw = obj[key]
    verdict = _label(raw, scale) if isinstance(scale, LabelScale) else _number(raw, scale)
    if verdict.error is None and explanation:
        note = obj.get("explanation")
        text = note.strip() if isinstance(note, str) else None
        return ParsedVerdict(verdict.value, verdict.score, None, text or None)
    return verdict


def _label(raw: Any, scale: LabelScale) -> ParsedVerdict:
    if not isinstance(raw, str):
        return _fail(f"JSON verdict {_show(raw)} is not one of {scale.describe()}")
    try:
        label = scale.label_of(" ".join(raw.split()))
    except KeyError:
        return _fail(f"JSON verdict {_show(raw)} is not one of {scale.describe()}")
    return ParsedVerdict(label.name, label.score)


def _number(raw: Any, scale: NumericScale) -> ParsedVerdict:
    value: float | None = None
    number = isinstance(raw, int | float) and not isinstance(raw, bool)
    text = isinstance(raw, str) and re.fullmatch(r"\s*-?\d{1,30}(?:\.\d{1,30})?\s*", raw)
    if number or text:
        try:
            value = float(raw)
        except OverflowError:
            value = None
    if value is None or not math.isfinite(value):
        return _fail(f"JSON verdict {_show(raw)} is not a number ({scale.describe()})")
    if not scale.contains(value):
        return _fail(f"JSON verdict {_show(raw)} is outside the scale ({scale.describe()})")
    return ParsedVerdict(value, scale.normalize(value))


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _show(raw: Any) -> str:
    text = json.dumps(raw, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(message: str) -> ParsedVerdict:
    return ParsedVerdict(None, None, f"parse: {message}")
