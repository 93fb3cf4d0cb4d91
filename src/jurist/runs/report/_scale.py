"""The verdict scale of a run, as the report uses it: the order and the written form of
verdicts, and which scale human labels are compared on.

A 1-5 judge's verdicts are written ``1`` ... ``5`` (the store keeps them as floats) and
listed in the scale's order; a label scale lists its labels in the order the template
names them.

>>> from jurist.templates import NumericScale
>>> likert = NumericScale(low=1, high=5, integer=True)
>>> [verdict_text(v, likert) for v in (2.0, 5.0, 4.0)]
['2', '5', '4']
>>> ordered_counts({"2": 1, "5": 2, "(failed)": 1, "4": 3}, likert)
[('1', 0), ('2', 1), ('3', 0), ('4', 3), ('5', 2), ('(failed)', 1)]

Labels on the verdict scale (every label a value of the scale) are compared with the
verdicts, at the ordinal level for a scale of whole numbers; other numeric labels with the
0-1 score; text labels with the verdicts as text.

>>> c = choose([(0.75, 4.0, 4), (0.25, 2.0, 1), (1.0, 5.0, 5)], likert)
>>> c.on, c.kind, c.judge, c.human
('verdict', 'ordinal', [4.0, 2.0, 5.0], [4.0, 1.0, 5.0])
>>> choose([(0.75, 4.0, 0.8)], likert).on
'score'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from jurist.runs.report._charts import tick_text
from jurist.templates import LabelScale, NumericScale, Scale

__all__ = [
    "FAILED",
    "AnyScale",
    "Comparison",
    "as_number",
    "choose",
    "ordered_counts",
    "scale_of",
    "sort_names",
    "text_verdicts",
    "verdict_text",
]

FAILED = "(failed)"
AnyScale = LabelScale | NumericScale
_SCALE: TypeAdapter[AnyScale] = TypeAdapter(Scale)


def scale_of(judge: Mapping[str, Any]) -> AnyScale | None:
    """The verdict scale in a run manifest's judge config (``None``: the judge has no
    single scale: a panel, a pairwise judge, a rubric grader)."""
    template = judge.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("scale"), Mapping):
        return None
    try:
        return _SCALE.validate_python(template["scale"])
    except ValidationError:
        return None  # a manifest from another version: verdicts sort as numbers or text


def as_number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def verdict_text(verdict: Any, scale: AnyScale | None) -> str:
    """``verdict`` as the scale writes it (whole numbers without ``.0``, a label by its
    name in the template)."""
    number = as_number(verdict)
    if number is not None:
        return tick_text(number)
    text = str(verdict)
    if isinstance(scale, LabelScale):
        try:
            return scale.label_of(text).name
        except KeyError:
            return text
    return text


def _points(scale: AnyScale | None) -> list[str]:
    """Every verdict a scale can give, when it is a short list."""
    if isinstance(scale, LabelScale):
        return [label.name for label in scale.labels]
    if isinstance(scale, NumericScale) and scale.integer and scale.high - scale.low <= 20:
        return [tick_text(float(v)) for v in range(int(scale.low), int(scale.high) + 1)]
    return []


def _key(text: str, points: Sequence[str]) -> tuple[int, float, str]:
    if text == FAILED:
        return (3, 0.0, text)
    if text in points:
        return (0, float(points.index(text)), text)
    try:
        return (1, float(text), text)
    except ValueError:
        return (2, 0.0, text)


def ordered_counts(counts: Mapping[str, int], scale: AnyScale | None) -> list[tuple[str, int]]:
    """``counts`` by verdict text, in the scale's order, with the scale's unused verdicts
    at 0; other numbers follow in numeric order, then text, then failures."""
    points = _points(scale)
    keys = set(counts) | set(points)
    return [(k, counts.get(k, 0)) for k in sorted(keys, key=lambda k: _key(k, points))]


def text_verdicts(scale: AnyScale | None, verdicts: Sequence[Any]) -> set[str]:
    """The verdicts a label compared as text can equal: the scale's, when it lists them
    (``1`` ... ``5``, its label names), else those the judge gave."""
    return set(_points(scale)) or {verdict_text(v, scale) for v in verdicts if v is not None}


def sort_names(names: Sequence[str], scale: AnyScale | None) -> list[str]:
    """Verdict texts in the scale's order (see :func:`order`)."""
    points = _points(scale)
    return sorted(names, key=lambda k: _key(k, points))


@dataclass
class Comparison:
    """Which values of the judge are compared with which labels, and how."""

    on: Literal["verdict", "score", "text"]
    kind: Literal["nominal", "ordinal", "interval"]
    note: str
    tolerance: float = 0.0
    judge: list[Any] = field(default_factory=list)
    human: list[Any] = field(default_factory=list)
    span: tuple[float, float] | None = None

    def values(self, score: Any, verdict: Any, label: Any, scale: AnyScale | None) -> Any:
        """The pair compared for one item, or ``None`` when it has none."""
        if score is None or label is None or (verdict is None and self.on != "score"):
            return None
        if self.on == "score":
            return (float(score), float(label))
        if self.kind == "nominal":
            return (verdict_text(verdict, scale), verdict_text(label, scale))
        return (float(verdict), float(label))

    def disagreement(self, pair: Any) -> float | None:
        """How far apart a pair is: 0 or 1 for categories, the distance for numbers."""
        if pair is None:
            return None
        if self.kind == "nominal":
            return 0.0 if pair[0] == pair[1] else 1.0
        return abs(float(pair[0]) - float(pair[1]))


def _on_verdict_scale(label: Any, scale: AnyScale) -> bool:
    if isinstance(scale, LabelScale):
        if not isinstance(label, str):
            return False
        try:
            scale.label_of(label)
        except KeyError:
            return False
        return True
    number = as_number(label)
    return number is not None and scale.contains(number)


def choose(pairs: Sequence[tuple[Any, Any, Any]], scale: AnyScale | None) -> Comparison:
    """How to compare ``(score, verdict, label)`` triples (items without a score or a
    label are left out by the caller), with a note that says which scale was used."""
    labels = [h for _, _, h in pairs]
    verdicts = [v for _, v, _ in pairs]
    numeric = all(as_number(h) is not None for h in labels)
    if scale is not None and all(_on_verdict_scale(h, scale) for h in labels):
        if isinstance(scale, LabelScale):
            c = Comparison(
                "verdict",
                "nominal",
                f"verdicts against the labels, on the scale {scale.describe()}",
            )
        elif all(as_number(v) is not None for v in verdicts):
            kind: Literal["ordinal", "interval"] = "ordinal" if scale.integer else "interval"
            c = Comparison(
                "verdict",
                kind,
                f"verdicts against the labels, both on the judge's scale "
                f"({tick_text(scale.low)}-{tick_text(scale.high)})",
                tolerance=0.0 if scale.integer else 0.1 * (scale.high - scale.low),
                span=(scale.low, scale.high),
            )
        else:
            c = _by_text()
    elif numeric:
        lo = min([0.0, *(float(h) for h in labels)])
        hi = max([1.0, *(float(h) for h in labels)])
        note = "judge score (0-1) against the labels, which are not on the judge's verdict scale"
        if lo < 0.0 or hi > 1.0:
            note += f" (they run {tick_text(lo)}-{tick_text(hi)}: RMSE and MAE mix two scales)"
        c = Comparison("score", "interval", note, tolerance=0.1 * (hi - lo), span=(lo, hi))
    else:
        c = _by_text()
    for score, verdict, label in pairs:
        pair = c.values(score, verdict, label, scale)
        if pair is not None:
            c.judge.append(pair[0])
            c.human.append(pair[1])
    return c


def _by_text() -> Comparison:
    return Comparison("text", "nominal", "verdicts against the labels, compared as text")
