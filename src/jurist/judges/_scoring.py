"""How an :class:`~jurist.judges.LLMJudge` turns token probabilities into a score.

``scoring="parse"`` reads the verdict from the text. ``scoring="logprobs"`` weighs every
verdict on the scale by its probability and returns the expected score, the distribution
and a confidence; ``scoring="auto"`` does so where the backend gives probabilities and
parses elsewhere, recording per judgment which mode produced the score (``Judgment.scoring``)
and why it fell back (``Judgment.scoring_note``).

The route is chosen once, from the backend's declared capabilities:

- ``candidates``: the backend scores candidate continuations in a forward pass (``hf``).
  When the answer is the bare verdict (no explanation asked, the template's own format),
  no text is generated at all: one forward pass scores every verdict. Otherwise the answer
  is generated, the verdict located in it, and the verdicts scored after the answer's text
  up to that point.
- ``top``: the backend returns top alternatives with generated tokens (OpenAI-compatible
  servers): the verdict's position is found in the generated tokens and read there.

>>> from jurist.templates import get_template
>>> space = verdict_space(get_template("likert"))
>>> space.candidates["4"], space.values["4"]
(0.75, 4.0)
>>> verdict_offset("Explanation: 1 slip\\nScore: 4", get_template("likert"), 4.0)
27
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from jurist.errors import ConfigError
from jurist.models import Model
from jurist.templates import Template
from jurist.templates._scale import LabelScale, NumericScale

__all__ = ["Route", "ScoringChoice", "VerdictSpace", "choose_route", "verdict_offset"]

ScoringChoice = Literal["parse", "logprobs", "auto"]
Route = Literal["candidates", "top"]

_MAX_ENUMERATED = 101


@dataclass(frozen=True, slots=True)
class VerdictSpace:
    """The verdicts a judge can write, as strings to weigh.

    ``candidates``: each string the judge may write -> its normalised score; ``groups``:
    each string -> the verdict it names (a label's aliases name the label); ``values``:
    each verdict -> the value a :class:`~jurist.types.Judgment` reports (label, number).
    """

    candidates: dict[str, float]
    groups: dict[str, str]
    values: dict[str, str | float]


def verdict_space(template: Template) -> VerdictSpace | None:
    """The finite set of verdicts of ``template``'s scale, or None for a continuous one."""
    scale = template.scale
    candidates: dict[str, float] = {}
    groups: dict[str, str] = {}
    values: dict[str, str | float] = {}
    if isinstance(scale, LabelScale):
        for label in scale.labels:
            values[label.name] = label.name
            for phrase in label.phrases:
                candidates[phrase.strip()] = label.score
                groups[phrase.strip()] = label.name
        return VerdictSpace(candidates, groups, values)
    assert isinstance(scale, NumericScale)
    if not scale.integer or scale.high - scale.low + 1 > _MAX_ENUMERATED:
        return None
    for n in range(int(scale.low), int(scale.high) + 1):
        candidates[str(n)] = scale.normalize(n)
        groups[str(n)] = str(n)
        values[str(n)] = float(n)
    return VerdictSpace(candidates, groups, values)


def choose_route(
    model: Model, template: Template, scoring: ScoringChoice
) -> tuple[Route | None, VerdictSpace | None, str | None]:
    """``(route, verdicts, reason)``: how to weigh verdicts, or why it cannot be done.

    ``scoring="logprobs"`` raises :class:`~jurist.errors.ConfigError` when it cannot be
    done; ``"auto"`` returns the reason, which each judgment records.
    """
    if scoring == "parse":
        return None, None, None
    space = verdict_space(template)
    caps = model.capabilities
    reason: str | None = None
    route: Route | None = None
    if space is None:
        reason = (
            f"template {template.name!r} has a continuous scale "
            f"({template.scale.describe()}): there is no finite set of verdicts to weigh"
        )
    elif caps.candidate_scores:
        route = "candidates"
    elif caps.logprobs and caps.top_logprobs > 0:
        route = "top"
    else:
        reason = f"{model.spec} returns no token probabilities"
    if reason is not None and scoring == "logprobs":
        raise ConfigError(
            f"scoring='logprobs' cannot be used: {reason}; use scoring='auto' to parse "
            "the verdict instead (each judgment records which mode scored it)"
        )
    return route, (space if route is not None else None), reason


def bare_verdict(
    template: Template, *, explanations: bool, custom_system: bool, json: bool
) -> bool:
    """True when the answer the template asks for is the verdict alone, nothing before it."""
    if custom_system or json:
        return False
    return template.verdict_alone(explanations=explanations)


_THINK_END = re.compile(r"</think>", re.IGNORECASE)


def verdict_offset(text: str, template: Template, value: str | float | None) -> int | None:
    """Where the verdict ``value`` starts in ``text`` (the judge's answer), or None.

    The verdict form (``Score: 4``, ``[[4]]``) is looked for first, then the template's JSON
    field, then the verdict as a whole word; a reasoning block before ``</think>`` is
    skipped.
    """
    phrases = _phrases(template, value)
    if not phrases:
        return None
    start = 0
    for m in _THINK_END.finditer(text):
        start = m.end()
    alts = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    opener = re.escape(template.verdict_open.strip())
    key = re.escape(template.json_key)
    patterns = (
        rf"{opener}[\s*_\"'`]*(?P<v>{alts})(?!\w)",
        rf"\"{key}\"\s*:\s*\"?(?P<v>{alts})(?!\w)",
        rf"(?<!\w)(?P<v>{alts})(?!\w)",
    )
    for pattern in patterns:
        found = re.compile(pattern, re.IGNORECASE).search(text, start)
        if found is not None:
            return found.start("v")
    return None


def _phrases(template: Template, value: str | float | None) -> list[str]:
    scale = template.scale
    if value is None:
        return []
    if isinstance(scale, LabelScale):
        for label in scale.labels:
            if label.name == value:
                return [p.strip() for p in label.phrases]
        return []
    if isinstance(value, float) and value.is_integer():
        return [str(int(value))]
    return [str(value)]
