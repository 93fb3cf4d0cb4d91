"""Few-shot examples for an :class:`~jurist.LLMJudge`: items people judged, in the prompt.

``LLMJudge(..., examples=[...])`` places each example (an item and the verdict people gave
it) in the judge's system message, after its instructions and output format: the static
part of the prompt, before the item, so a server's prefix cache is shared by every item.
An example's verdict is a label of the judge's scale (``"A"``, ``"Correct"``; aliases and
any case accepted, stored by the label's name) or a number on its numeric scale.

>>> from jurist.templates import get_template
>>> tpl = get_template("true_false")
>>> shots = check_examples([{"item": {"prompt": "2+2?", "response": "4"}, "verdict": "correct"}],
...                        tpl)
>>> shots[0].verdict
'Correct'
>>> print(examples_text(shots, tpl))
Examples judged by people (judge the next item as they would):
<BLANKLINE>
Example 1:
<question>
2+2?
</question>
<BLANKLINE>
<answer>
4
</answer>
Verdict: Correct
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from jurist.errors import ConfigError, DataError
from jurist.templates import Template
from jurist.templates._scale import LabelScale

__all__ = [
    "EXAMPLES_HEADER",
    "Example",
    "check_examples",
    "dump_examples",
    "examples_text",
    "verdict_for_score",
]

EXAMPLES_HEADER = "Examples judged by people (judge the next item as they would):"


class Example(BaseModel):
    """One few-shot example: an item's fields and the verdict people gave it."""

    model_config = ConfigDict(frozen=True)

    item: dict[str, Any]
    verdict: str | float


def check_examples(
    examples: Sequence[Example | Mapping[str, Any]], template: Template
) -> tuple[Example, ...]:
    """``examples`` as :class:`Example` objects, each checked against ``template``: its
    item has the template's fields and its verdict is on the template's scale (a label is
    stored by its name, a number as a float)."""
    out: list[Example] = []
    for i, raw in enumerate(examples):
        where = f"examples[{i}]"
        try:
            ex = raw if isinstance(raw, Example) else Example.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(x) for x in err["loc"])
            raise ConfigError(
                f"{where}.{key}: {err['msg']} (an example is {{'item': {{...}}, 'verdict': ...}})"
            ) from None
        try:
            template.render_item(ex.item)
        except DataError as e:
            raise DataError(f"{where}: {e}") from None
        out.append(ex.model_copy(update={"verdict": _on_scale(ex.verdict, template, where)}))
    return tuple(out)


def _on_scale(verdict: str | float, template: Template, where: str) -> str | float:
    scale = template.scale
    if isinstance(scale, LabelScale):
        if isinstance(verdict, str):
            try:
                return scale.label_of(verdict).name
            except KeyError:
                pass
        else:
            for label in scale.labels:
                if label.score == float(verdict):
                    return label.name
        raise ConfigError(
            f"{where}: verdict {verdict!r} is not a label of template {template.name!r} "
            f"({scale.describe()})"
        )
    try:
        value = float(verdict)
    except ValueError:
        raise ConfigError(
            f"{where}: verdict {verdict!r} is not a number on template {template.name!r}'s "
            f"scale ({scale.describe()})"
        ) from None
    if not scale.contains(value):
        raise ConfigError(f"{where}: verdict {value:g} is off the scale ({scale.describe()})")
    return value


def dump_examples(examples: Sequence[Example]) -> list[dict[str, Any]]:
    """``examples`` as JSON-able mappings (for ``describe()`` and catalog entries)."""
    return [ex.model_dump(mode="json") for ex in examples]


def verdict_for_score(score: float, template: Template) -> str | float:
    """The verdict of ``template``'s scale nearest to the 0-1 ``score`` (a label's name, or
    a number on a numeric scale: rounded for an integer scale)."""
    scale = template.scale
    if isinstance(scale, LabelScale):
        return min(scale.labels, key=lambda lb: (abs(lb.score - score), lb.score)).name
    zero = scale.low if scale.origin is None else scale.origin
    value = min(scale.high, max(scale.low, zero + score * (scale.high - zero)))
    return float(round(value)) if scale.integer else value


def examples_text(examples: Sequence[Example], template: Template) -> str:
    """The block of examples as the system message holds it (see the module docs)."""
    parts = [EXAMPLES_HEADER]
    for i, ex in enumerate(examples, 1):
        verdict = ex.verdict if isinstance(ex.verdict, str) else f"{ex.verdict:g}"
        parts.append(f"Example {i}:\n{template.render_item(ex.item)}\nVerdict: {verdict}")
    return "\n\n".join(parts)
