"""The labelled items of an alignment: their labels on one scale, and the seeded splits.

Labels are numbers (``1``-``5`` ratings, ``0``/``1``) or the names of the judge's own
verdicts (``"A"``, ``"tie"``, ``"Correct"``: any case, aliases too). A :class:`LabelSpace`
puts both on one numeric scale and turns a judge's 0-1 score into a label value the way
:func:`~jurist.trust.fit_calibration` does: stretched linearly onto the labels' range, and
rounded to the nearest label value when the labels are ordinal. Named labels take their
verdict's score (``A`` 1.0, ``tie`` 0.5, ``B`` 0.0) and are nominal (a verdict is right or
wrong; ``kind="ordinal"`` treats them as ordered).

:func:`split_rows` splits the items (seeded) into three disjoint parts: the **pick** slice
(few-shot examples are drawn from it), the **score** slice (each candidate is judged on
it) and the **held-out** part (judged once, by the final judge, for the report). Items
whose prompts are the same text (a data set's duplicates: PandaLM's test set holds 71
groups of identical pairs) share a ``group`` and always land in the same part, so no
held-out item is ever seen, as an example or a scored item, under another key.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.errors import DataError
from jurist.judges._examples import verdict_for_score
from jurist.templates import Template
from jurist.templates._scale import LabelScale
from jurist.trust._calibrate import _kind_of, nearest

__all__ = ["LabelSpace", "Row", "Splits", "label_space", "split_rows"]


class LabelSpace(BaseModel):
    """The labels' scale: its kind, range and values, and how a judge's score lands on it."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["nominal", "ordinal", "interval"]
    low: float
    high: float
    values: tuple[float, ...] | None
    named: bool
    """True when the labels were the judge's verdict names (their scores are the values)."""

    def of_score(self, score: float | None) -> float | None:
        """A judge's 0-1 score as a label value (None stays None)."""
        if score is None or (isinstance(score, float) and math.isnan(score)):
            return None
        return nearest(self.low + score * (self.high - self.low), self.values)

    def verdict(self, value: float, template: Template) -> str | float:
        """The judge's verdict (a label name, or a number on its scale) for label ``value``:
        what a few-shot example of that label says."""
        span = self.high - self.low
        return verdict_for_score(0.0 if span == 0 else (value - self.low) / span, template)


class Row(BaseModel):
    """One labelled item: its key, fields, label value and the judge's recorded score."""

    model_config = ConfigDict(frozen=True)

    key: str
    item: dict[str, Any]
    label: float
    score: float | None = None
    group: str = ""
    """Rows of one group (the same prompt text) stay in one part; empty: the row alone."""


def label_space(
    labels: Sequence[Any],
    template: Template,
    *,
    kind: Literal["nominal", "ordinal", "interval"] | None = None,
    keys: Sequence[Any] | None = None,
) -> tuple[LabelSpace, list[float | None]]:
    """The :class:`LabelSpace` of ``labels`` and each label as a value (None: no label)."""
    keys = list(range(1, len(labels) + 1)) if keys is None else list(keys)
    present = [y for y in labels if not _missing(y)]
    if not present:
        raise DataError("no item has a label")
    texts = [y for y in present if isinstance(y, str) and not _is_number(y)]
    if texts:
        scale = template.scale
        if not isinstance(scale, LabelScale):
            raise DataError(
                f"label {texts[0]!r} is text, but template {template.name!r} gives numbers; "
                "give numeric labels"
            )
        out: list[float | None] = []
        for key, y in zip(keys, labels, strict=True):
            if _missing(y):
                out.append(None)
                continue
            try:
                out.append(scale.label_of(str(y)).score)
            except KeyError:
                raise DataError(
                    f"item {key!r}: label {y!r} is not a number nor a verdict of template "
                    f"{template.name!r} ({scale.describe()})"
                ) from None
        scores = sorted({lb.score for lb in scale.labels})
        space = LabelSpace(
            kind=kind or "nominal",
            low=scores[0],
            high=scores[-1],
            values=None if kind == "interval" else tuple(scores),
            named=True,
        )
        return space, out
    values: list[float | None] = []
    for key, y in zip(keys, labels, strict=True):
        if _missing(y):
            values.append(None)
        elif isinstance(y, bool) or not _is_number(y):
            raise DataError(f"item {key!r}: label {y!r} is not a number")
        else:
            values.append(float(y))
    numbers = [v for v in values if v is not None]
    chosen = "nominal" if kind == "nominal" else _kind_of(numbers, kind)
    space = LabelSpace(
        kind=chosen,
        low=min(numbers),
        high=max(numbers),
        values=None if chosen == "interval" else tuple(sorted(set(numbers))),
        named=False,
    )
    return space, values


class Splits(BaseModel):
    """The three disjoint parts of the labelled items (see the module docs)."""

    model_config = ConfigDict(frozen=True)

    pick: tuple[Row, ...]
    score: tuple[Row, ...]
    held_out: tuple[Row, ...]
    unused: int = 0
    """Train items left out of the score slice by its cap."""


def split_rows(
    rows: Sequence[Row],
    *,
    held_out: float,
    pick: float,
    score_items: int | None,
    seed: int,
) -> Splits:
    """Shuffle ``rows`` (seeded); ``held_out`` of them are held out, ``pick`` of the rest
    form the pick slice, the others (at most ``score_items``) the score slice."""
    if not 0 < held_out < 1:
        raise DataError(f"held_out must be in (0, 1), not {held_out}")
    if not 0 < pick < 1:
        raise DataError(f"pick must be in (0, 1), not {pick}")
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.group or f"key:{row.key}", []).append(row)
    order = list(groups.values())
    random.Random(seed).shuffle(order)
    n_test = min(max(1, round(len(rows) * held_out)), len(rows) - 2)
    test, train = _take(order, n_test)
    n_pick = min(max(1, round(sum(map(len, train)) * pick)), sum(map(len, train)) - 1)
    picked, rest = _take(train, n_pick)
    scored = [r for g in rest for r in g]
    cap = len(scored) if score_items is None else min(score_items, len(scored))
    return Splits(
        pick=tuple(r for g in picked for r in g),
        score=tuple(scored[:cap]),
        held_out=tuple(r for g in test for r in g),
        unused=len(scored) - cap,
    )


def _take(groups: list[list[Row]], n: int) -> tuple[list[list[Row]], list[list[Row]]]:
    """Whole groups from the front until they hold at least ``n`` rows; and the rest."""
    taken = 0
    for i, group in enumerate(groups):
        if taken >= n:
            return groups[:i], groups[i:]
        taken += len(group)
    return groups, []


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
