"""Rubric data: :class:`CriterionVerdict`, :class:`Option`, :class:`Criterion`, :class:`Rubric`.

A criterion is *binary* (no options: the judge answers MET, UNMET or CANNOT_ASSESS) or
*multi-choice* (options with a value in [0, 1] each, ``scale_type`` ordinal or nominal). A
negative weight marks an error criterion: MET (or a high option) takes points away.

>>> c = Criterion(requirement="Uses metric units", weight=5)
>>> c.is_binary, c.weight
(True, 5.0)
>>> tone = Criterion(name="tone", requirement="How formal is the tone?", scale_type="nominal",
...                  options=[Option(label="Too casual", value=0.0),
...                           Option(label="Just right", value=1.0)])
>>> tone.is_binary, tone.option_index("just right")
(False, 1)
>>> Option(label="a", value=1.5)
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for Option
  Value error, value 1.5 is outside [0, 1] (option 'a') ...
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "AUTO_NA_LABEL",
    "Criterion",
    "CriterionVerdict",
    "NominalAggregation",
    "Option",
    "OrdinalAggregation",
    "ScaleType",
]

ScaleType = Literal["ordinal", "nominal"]
OrdinalAggregation = Literal["mean", "median", "weighted_mean", "mode", "min", "max"]
NominalAggregation = Literal["mode", "weighted_mode", "unanimous"]
ORDINAL_AGGREGATIONS: tuple[str, ...] = ("mean", "median", "weighted_mean", "mode", "min", "max")
NOMINAL_AGGREGATIONS: tuple[str, ...] = ("mode", "weighted_mode", "unanimous")

#: The label of the option ``auto_na_option`` adds to a criterion that has no NA option.
AUTO_NA_LABEL = "Cannot assess"


class CriterionVerdict(enum.StrEnum):
    """A binary criterion's verdict.

    >>> CriterionVerdict("MET") is CriterionVerdict.MET
    True
    """

    MET = "MET"
    UNMET = "UNMET"
    CANNOT_ASSESS = "CANNOT_ASSESS"


class Option(BaseModel):
    """One option of a multi-choice criterion.

    ``value`` (in [0, 1]) is what choosing it earns; an ``na`` option means "cannot assess /
    not applicable" and earns nothing: it is handled like a binary CANNOT_ASSESS, so its
    value is optional and never scored.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(min_length=1)
    value: float | None = None
    na: bool = False

    @model_validator(mode="after")
    def _check_value(self) -> Option:
        if self.na:
            return self
        if self.value is None:
            raise ValueError(f"option {self.label!r} needs a value in [0, 1] (or na: true)")
        if not math.isfinite(self.value) or not 0.0 <= self.value <= 1.0:
            raise ValueError(f"value {self.value} is outside [0, 1] (option {self.label!r})")
        return self


def _norm_label(label: str) -> str:
    return " ".join(label.split()).casefold()


class Criterion(BaseModel):
    """One criterion: a requirement, a weight, and options when it is multi-choice.

    ``aggregation`` overrides the grader's ordinal or nominal aggregation for this criterion;
    ``section`` is the name of the section it was listed under, if any.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    requirement: str = Field(min_length=1)
    name: str | None = None
    weight: float = 10.0
    options: tuple[Option, ...] | None = None
    scale_type: ScaleType = "ordinal"
    aggregation: str | None = None
    section: str | None = None

    @field_validator("weight")
    @classmethod
    def _finite_weight(cls, weight: float) -> float:
        if not math.isfinite(weight):
            raise ValueError(f"weight must be a finite number, got {weight}")
        return weight

    @model_validator(mode="after")
    def _check_options(self) -> Criterion:
        if self.options is None:
            if self.aggregation is not None:
                raise ValueError(
                    "aggregation applies to multi-choice criteria only; a binary criterion "
                    "uses the grader's aggregation"
                )
            return self
        scored = [o for o in self.options if not o.na]
        if len(scored) < 2:
            raise ValueError(
                f"a multi-choice criterion needs at least two scored (non-NA) options, "
                f"got {len(scored)}"
            )
        seen: dict[str, str] = {}
        for option in self.options:
            key = _norm_label(option.label)
            if key in seen:
                raise ValueError(f"duplicate option label {option.label!r} (same as {seen[key]!r})")
            seen[key] = option.label
        allowed = ORDINAL_AGGREGATIONS if self.scale_type == "ordinal" else NOMINAL_AGGREGATIONS
        if self.aggregation is not None and self.aggregation not in allowed:
            raise ValueError(
                f"aggregation {self.aggregation!r} is not one for a {self.scale_type} "
                f"criterion; choose one of {', '.join(allowed)}"
            )
        return self

    @property
    def is_binary(self) -> bool:
        return self.options is None

    @property
    def kind(self) -> Literal["binary", "ordinal", "nominal"]:
        """``"binary"``, or the scale type of a multi-choice criterion."""
        return "binary" if self.options is None else self.scale_type

    @property
    def na_index(self) -> int | None:
        """The index of the first NA option, or ``None``."""
        for i, option in enumerate(self.options or ()):
            if option.na:
                return i
        return None

    def option_index(self, label: str) -> int:
        """The index of the option with this label (case and spacing ignored)."""
        key = _norm_label(label)
        for i, option in enumerate(self.options or ()):
            if _norm_label(option.label) == key:
                return i
        known = [o.label for o in self.options or ()]
        raise ValueError(f"no option {label!r}; the options are {known}")

    def with_na_option(self) -> Criterion:
        """This criterion with a "cannot assess" option appended when it has no NA option.

        Appending keeps the indices of the author's options, so ground truth and reports
        line up with the rubric file.
        """
        if self.options is None or self.na_index is not None:
            return self
        na = Option(label=AUTO_NA_LABEL, na=True)
        return self.model_copy(update={"options": (*self.options, na)})

    def worst_among(self, indices: Iterable[int]) -> int:
        """The score-minimising option among ``indices``: the tie rule of every aggregation.

        The lowest value when the weight is >= 0, the highest when it is negative; on equal
        values the lowest index. The result never depends on the order of ``indices``.

        >>> c = Criterion(requirement="r", weight=-1, options=[Option(label="a", value=0.5),
        ...     Option(label="b", value=1.0), Option(label="c", value=1.0)])
        >>> c.worst_among([2, 0, 1])
        1
        """
        options = self.options or ()
        candidates = list(indices)
        if not candidates:
            raise ValueError("no options to choose among")

        def value(i: int) -> float:
            v = options[i].value
            return 0.0 if v is None else v

        if self.weight < 0:
            return min(candidates, key=lambda i: (-value(i), i))
        return min(candidates, key=lambda i: (value(i), i))

    def worst_scored(self) -> int:
        """The score-minimising scored (non-NA) option."""
        return self.worst_among(i for i, o in enumerate(self.options or ()) if not o.na)

    def to_dict(self) -> dict[str, Any]:
        """The criterion in the rubric file format (``section`` is left to the rubric)."""
        data: dict[str, Any] = {}
        if self.name is not None:
            data["name"] = self.name
        data["requirement"] = self.requirement
        data["weight"] = self.weight
        if self.options is not None:
            data["scale_type"] = self.scale_type
            data["options"] = [o.model_dump(exclude_defaults=True) for o in self.options]
            if self.aggregation is not None:
                data["aggregation"] = self.aggregation
        return data
