"""The messages a rubric judge receives, the JSON schema of its answer, and the answer parser.

Layout, for a server's prefix cache: the system message is the same for every item (the
instructions, the answer format and, for one call per item, the whole rubric); the user
message starts with what is static per criterion (per-criterion calls) and ends with the
item: the query, the submission, then the options of each choice criterion in the order
this judge is shown them for this item.

>>> from jurist.judges.rubric._criteria import Criterion
>>> rubric = [Criterion(requirement="Names the capital")]
>>> print(item_system(rubric, guidelines=None, explanations=False).splitlines()[-1])
c1 [yes/no]: Names the capital
>>> parse_answer('{"c1": {"verdict": "met"}}', ["c1"])["c1"]
{'verdict': 'met'}
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from jurist.errors import ParseError
from jurist.judges.rubric._criteria import Criterion, CriterionVerdict, Option
from jurist.templates._escape import neutralise

__all__ = [
    "criterion_id",
    "criterion_schema",
    "criterion_system",
    "criterion_user",
    "item_schema",
    "item_system",
    "item_user",
    "parse_answer",
    "split_thinking",
]

_INTRO = (
    "You grade a submission against a rubric. Decide each criterion on its own, from what "
    "the submission actually says; its overall quality must not sway any single criterion."
)
_BINARY_RULE = (
    '- Yes/no criteria: answer "MET" when the submission does what the criterion describes, '
    '"UNMET" when it does not, and "CANNOT_ASSESS" only when the submission gives too little '
    "to decide either way (rarely). A criterion marked [penalty] describes a mistake: MET "
    "means the submission makes that mistake."
)
_CHOICE_RULE = (
    "- Choice criteria: their options come after the submission, numbered from 1 in an "
    "order that means nothing. Read every option and answer with the number of the one "
    "that fits the submission best."
)


def criterion_id(index: int) -> str:
    """The id a criterion has in prompts and answers: ``c1``, ``c2``, ..."""
    return f"c{index + 1}"


def _kind_tag(c: Criterion) -> str:
    kind = "yes/no" if c.options is None else "choice"
    return f"[{kind}, penalty]" if c.weight < 0 else f"[{kind}]"


def _rules(criteria: Sequence[Criterion]) -> str:
    rules = []
    if any(c.options is None for c in criteria):
        rules.append(_BINARY_RULE)
    if any(c.options is not None for c in criteria):
        rules.append(_CHOICE_RULE)
    return "\n".join(rules)


def _head(criteria: Sequence[Criterion]) -> str:
    return f"{_INTRO}\n\n{_rules(criteria)}"


def _answer_fields(criteria: Sequence[Criterion], explanations: bool) -> str:
    kinds = []
    if any(c.options is None for c in criteria):
        kinds.append('"verdict" for a yes/no criterion')
    if any(c.options is not None for c in criteria):
        kinds.append('"option" (a number) for a choice criterion')
    answer = " or ".join(kinds)
    if explanations:
        return f'"explanation" (one or two sentences that point at the submission), then {answer}'
    return answer


def _example(c: Criterion, explanations: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"explanation": "..."} if explanations else {}
    if c.options is None:
        entry["verdict"] = "MET"
    else:
        entry["option"] = 2
    return entry


def _guidelines(guidelines: str | None) -> str:
    return f"Guidelines for every criterion:\n{guidelines.strip()}\n\n" if guidelines else ""


def item_system(
    criteria: Sequence[Criterion],
    *,
    guidelines: str | None,
    explanations: bool,
    instructions: str | None = None,
) -> str:
    """The system message of one call for the whole rubric (the same for every item)."""
    example = {criterion_id(i): _example(c, explanations) for i, c in enumerate(criteria[:2])}
    lines = []
    section: str | None = None
    for i, c in enumerate(criteria):
        if c.section != section and c.section is not None:
            lines.append(f"Section: {c.section}")
        section = c.section
        lines.append(f"{criterion_id(i)} {_kind_tag(c)}: {c.requirement.strip()}")
    return (
        f"{instructions or _head(criteria)}\n\n"
        "Reply with one JSON object and nothing else, with one key per criterion id; each "
        f"value is an object with {_answer_fields(criteria, explanations)}.\n"
        f"Example: {json.dumps(example)}\n\n"
        f"{_guidelines(guidelines)}Rubric:\n" + "\n".join(lines)
    )


def criterion_system(*, explanations: bool, instructions: str | None = None) -> str:
    """The system message of a per-criterion call (the same for every criterion and item)."""
    both = [Criterion(requirement="x"), Criterion(requirement="x", options=_TWO)]
    return (
        f"{instructions or _head(both)}\n\n"
        f"Reply with one JSON object and nothing else: {_answer_fields(both, explanations)}.\n"
        f"Examples: {json.dumps(_example(both[0], explanations))} "
        f"{json.dumps(_example(both[1], explanations))}"
    )


_TWO = (Option(label="a", value=0.0), Option(label="b", value=1.0))


_ITEM_TAGS = frozenset({"query", "reference", "submission"})
"""The tags the item is placed in: no value may open or close any of them (the templates'
escaping, :func:`jurist.templates._escape.neutralise`)."""


def _item_text(query: str | None, submission: str, reference: str | None) -> str:
    parts = []
    if query:
        parts.append(f"<query>\n{neutralise(query, _ITEM_TAGS)}\n</query>")
    if reference:
        parts.append(f"<reference>\n{neutralise(reference, _ITEM_TAGS)}\n</reference>")
    parts.append(f"<submission>\n{neutralise(submission, _ITEM_TAGS)}\n</submission>")
    return "\n\n".join(parts)


def _options_text(label: str, options: Sequence[Option], order: Sequence[int]) -> str:
    lines = [f"Options for {label}:"]
    lines.extend(f"{n}. {options[i].label}" for n, i in enumerate(order, start=1))
    return "\n".join(lines)


def item_user(
    criteria: Sequence[Criterion],
    orders: Sequence[Sequence[int] | None],
    *,
    query: str | None,
    submission: str,
    reference: str | None = None,
) -> str:
    """The user message of one call for the whole rubric: the item, then the options."""
    blocks = [_item_text(query, submission, reference)]
    for i, (c, order) in enumerate(zip(criteria, orders, strict=True)):
        if c.options is not None and order is not None:
            blocks.append(_options_text(criterion_id(i), c.options, order))
    return "\n\n".join(blocks)


def criterion_user(
    criterion: Criterion,
    order: Sequence[int] | None,
    *,
    guidelines: str | None,
    query: str | None,
    submission: str,
    reference: str | None = None,
) -> str:
    """The user message of a per-criterion call: the criterion first, the item last."""
    head = f"{_guidelines(guidelines)}Criterion {_kind_tag(criterion)}: {criterion.requirement}"
    blocks = [head.strip(), _item_text(query, submission, reference)]
    if criterion.options is not None and order is not None:
        blocks.append(_options_text("the criterion", criterion.options, order))
    return "\n\n".join(blocks)


def criterion_schema(criterion: Criterion, explanations: bool) -> dict[str, Any]:
    """The JSON schema of one criterion's answer."""
    properties: dict[str, Any] = {"explanation": {"type": "string"}} if explanations else {}
    if criterion.options is None:
        properties["verdict"] = {"type": "string", "enum": [v.value for v in CriterionVerdict]}
    else:
        properties["option"] = {
            "type": "integer",
            "enum": list(range(1, len(criterion.options) + 1)),
        }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def item_schema(criteria: Sequence[Criterion], explanations: bool) -> dict[str, Any]:
    """The JSON schema of the whole rubric's answer: one object per criterion id."""
    properties = {
        criterion_id(i): criterion_schema(c, explanations) for i, c in enumerate(criteria)
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


_THINK = re.compile(r"^\s*<think>(.*?)</think>", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*\n?(.*?)\n?```$", re.DOTALL)


def split_thinking(text: str) -> tuple[str | None, str]:
    """Split a leading ``<think>...</think>`` block off the answer: (thinking, rest)."""
    match = _THINK.match(text)
    if match is None:
        return None, text
    return match.group(1).strip() or None, text[match.end() :]


def parse_answer(text: str, ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Read a JSON object (optionally in a code fence); anything else is a ParseError.

    With ``ids`` the object must map criterion ids to objects; a missing or malformed
    entry is left for its criterion to fail alone, so only the shape is checked here.
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        shown = body if len(body) <= 80 else body[:77] + "..."
        raise ParseError(f"the answer is not a JSON object ({e.msg}): {shown!r}") from None
    if not isinstance(data, dict):
        raise ParseError(f"the answer is a JSON {type(data).__name__}, not an object")
    if ids is not None and not any(i in data for i in ids):
        raise ParseError(f"the answer has none of the criterion ids {list(ids)}")
    return data
