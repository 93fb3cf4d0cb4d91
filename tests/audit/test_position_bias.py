"""position_consistency: what ``by=`` means, and no silent 0.0 for position names (issue 14.10)."""

from __future__ import annotations

import math

import pytest

from jurist.errors import DataError
from jurist.metrics import position_consistency


def test_position_names_under_the_side_default_are_an_error_not_zero() -> None:
    with pytest.raises(DataError, match=r"'first' names a position.*by='position'"):
        position_consistency(["first", "second"], ["second", "first"])


def test_by_position_flips_the_second_order() -> None:
    assert position_consistency(["first", "second"], ["second", "first"], by="position") == 1.0
    # a judge that always picks what it sees first is never consistent
    assert position_consistency(["first", "first"], ["first", "first"], by="position") == 0.0
    # raw pairwise verdicts name positions too: "A" is the response shown first
    assert position_consistency(["A", "tie"], ["B", "tie"], by="position") == 1.0


def test_by_side_compares_as_given() -> None:
    assert position_consistency(["A", "B", "tie"], ["A", "A", "tie"]) == pytest.approx(2 / 3)
    assert math.isnan(position_consistency([None], ["A"]))


def test_unknown_labels_and_modes_are_errors() -> None:
    with pytest.raises(DataError, match="'maybe'"):
        position_consistency(["maybe"], ["A"], by="position")
    with pytest.raises(DataError, match="by must be"):
        position_consistency(["A"], ["A"], by="sides")  # type: ignore[arg-type]
