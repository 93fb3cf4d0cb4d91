"""Scales: the verdict space of a template, and its normalisation to [0, 1].

A :class:`LabelScale` names verdicts (``Correct`` -> 1.0, ``Incorrect`` -> 0.0), each with
optional aliases; a :class:`NumericScale` is a range of numbers (integers for Likert and
1-10 ratings, reals for a 0-100 confidence).

>>> likert = NumericScale(low=1, high=5, integer=True)
>>> likert.normalize(4)
0.75
>>> NumericScale(low=1, high=10, integer=True, origin=0).normalize(7)
0.7
>>> tfu = LabelScale(labels=(Label(name="Correct", score=1.0), Label(name="Incorrect", score=0.0)))
>>> tfu.score_of("correct")
1.0
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Label", "LabelScale", "NumericScale", "Scale"]


class Label(BaseModel):
    """A named verdict with its score in [0, 1] and the other phrasings that mean it."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    score: float = Field(ge=0.0, le=1.0)
    aliases: tuple[str, ...] = ()

    @property
    def phrases(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


class LabelScale(BaseModel):
    """Verdicts are labels; matching is case-insensitive on whole words or phrases."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["labels"] = "labels"
    labels: tuple[Label, ...] = Field(min_length=2)

    @model_validator(mode="after")
    def _unique_phrases(self) -> LabelScale:
        seen: dict[str, str] = {}
        for label in self.labels:
            for phrase in label.phrases:
                key = phrase.strip().casefold()
                if not key:
                    raise ValueError(f"label {label.name!r} has an empty phrase")
                if key in seen and seen[key] != label.name:
                    raise ValueError(
                        f"phrase {phrase!r} is given for both {seen[key]!r} and {label.name!r}"
                    )
                seen[key] = label.name
        return self

    def score_of(self, phrase: str) -> float:
        """The score of the label that ``phrase`` names (case-insensitive)."""
        return self.label_of(phrase).score

    def label_of(self, phrase: str) -> Label:
        key = phrase.strip().casefold()
        for label in self.labels:
            if any(p.casefold() == key for p in label.phrases):
                return label
        raise KeyError(phrase)

    def describe(self) -> str:
        """The labels as a prompt lists them: ``"Correct", "Incorrect"``."""
        return ", ".join(f'"{label.name}"' for label in self.labels)


class NumericScale(BaseModel):
    """Verdicts are numbers in ``[low, high]``; ``integer`` scales accept whole numbers only.

    Normalisation maps ``origin`` (default ``low``) to 0 and ``high`` to 1:
    ``(x - origin) / (high - origin)``. MT-bench's 1-10 rating uses ``origin=0`` so that
    a rating of 7 becomes 0.7.
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["numeric"] = "numeric"
    low: float
    high: float
    integer: bool = False
    origin: float | None = None

    @model_validator(mode="after")
    def _ordered(self) -> NumericScale:
        if not self.low < self.high:
            raise ValueError(f"scale low ({self.low}) must be below high ({self.high})")
        if self.origin is not None and self.origin > self.low:
            raise ValueError(f"scale origin ({self.origin}) must not exceed low ({self.low})")
        return self

    def contains(self, x: float) -> bool:
        if not self.low <= x <= self.high:
            return False
        return not self.integer or float(x).is_integer()

    def normalize(self, x: float) -> float:
        zero = self.low if self.origin is None else self.origin
        return (x - zero) / (self.high - zero)

    def describe(self) -> str:
        lo, hi = _fmt(self.low), _fmt(self.high)
        return (
            f"a whole number from {lo} to {hi}" if self.integer else f"a number from {lo} to {hi}"
        )


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


Scale = Annotated[LabelScale | NumericScale, Field(discriminator="kind")]
