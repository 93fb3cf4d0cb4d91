"""The parsing policy, one trap per test, and properties that hold for every input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jurist.templates import NumericScale, get_template, labels_scale, parse_verdict

TFU = get_template("true_false_uncertain")
TF = get_template("true_false")
LIKERT = get_template("likert")
CONT = get_template("continuous")


def test_incorrect_is_not_correct() -> None:
    assert TF.parse("Incorrect").score == 0.0
    assert TFU.parse("incorrect.").score == 0.0
    assert TFU.parse("The answer is INCORRECT").value == "Incorrect"


def test_i_am_not_sure_is_uncertain() -> None:
    v = TFU.parse("I am not sure")
    assert (v.value, v.score) == ("I am not sure", 0.5)
    assert TFU.parse("Not sure.").score == 0.5


def test_not_correct_is_one_phrase() -> None:
    assert TFU.parse("not correct").score == 0.0


def test_uncertain_label_absent_from_binary_template() -> None:
    assert TF.parse("I am not sure").error is not None


def test_correctness_is_not_correct() -> None:
    assert TF.parse("Correctness matters").error is not None


def test_conflicting_labels_fail() -> None:
    v = TF.parse("Correct? No: Incorrect.")
    assert v.score is None and "conflicting" in (v.error or "")


def test_repeated_identical_verdicts_are_fine() -> None:
    assert TF.parse("Correct. Correct!").score == 1.0


def test_likert_verdict_form_wins_over_numbers_elsewhere() -> None:
    v = LIKERT.parse("Score: 4\nExplanation: 1 minor slip", explanations=True)
    assert v.value == 4.0 and v.score == 0.75
    assert v.explanation == "1 minor slip"


def test_likert_markdown_verdict_line() -> None:
    assert LIKERT.parse("**Score:** 5").score == 1.0


def test_likert_ten_out_of_ten_fails() -> None:
    assert LIKERT.parse("10/10").score is None


def test_likert_fraction_with_scale_top() -> None:
    assert LIKERT.parse("4/5").value == 4.0


def test_likert_out_of_range_fails() -> None:
    assert LIKERT.parse("6").score is None
    assert LIKERT.parse("0").score is None
    assert LIKERT.parse("3.5").score is None


def test_likert_range_text_is_not_a_verdict() -> None:
    assert LIKERT.parse("On the 1-5 scale: 4").value == 4.0


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("85.5", 0.855),
        ("90/100", 0.9),
        ("7 out of 10", 0.7),
        ("I am 70% sure", 0.7),
        ("99 (highly certain the answer is correct)", 0.99),
        ("0", 0.0),
        ("100", 1.0),
    ],
)
def test_continuous_forms(text: str, score: float) -> None:
    assert CONT.parse(text).score == pytest.approx(score)


@pytest.mark.parametrize("text", ["150", "-5", "120%", "11/10", "no idea", ""])
def test_continuous_failures(text: str) -> None:
    v = CONT.parse(text)
    assert v.score is None and v.error is not None and v.error.startswith("parse: ")


def test_yes_no_only_where_defined() -> None:
    assert TF.parse("Yes").score is None
    yes_no = TF.with_labels({"Yes": 1.0, "No": 0.0})
    assert yes_no.parse("Yes").score == 1.0
    assert yes_no.parse("no").score == 0.0


def test_uqlm_keyword_map() -> None:
    scale = labels_scale({0.0: ["incorrect", "wrong"], 1.0: ["correct", "right"]})
    assert parse_verdict("That is wrong", scale).score == 0.0
    assert parse_verdict("right", scale).score == 1.0


def test_reasoning_block_is_set_aside() -> None:
    assert TF.parse("<think>maybe Incorrect? no</think>Correct").score == 1.0


def test_verdict_line_with_unreadable_value_fails() -> None:
    assert LIKERT.parse("Score: four\n3").score is None


# --- properties: never raises, never leaves the scale --------------------------------------

_text = st.text(
    alphabet=st.sampled_from(list("0123456789 ./%-:*\nScoreExplanationCorrectIncorrectsure<>[]")),
    max_size=60,
) | st.text(max_size=60)


@pytest.mark.parametrize("template", [TFU, TF, LIKERT, CONT], ids=lambda t: t.name)
@given(text=_text)
def test_parser_never_raises_and_stays_on_scale(template: object, text: str) -> None:
    from jurist.templates import Template

    assert isinstance(template, Template)
    v = template.parse(text, explanations=True)
    if v.score is None:
        assert v.error is not None and v.error.startswith("parse: ")
    else:
        assert 0.0 <= v.score <= 1.0
        assert v.error is None


@given(
    low=st.integers(-5, 5),
    span=st.integers(1, 20),
    integer=st.booleans(),
    text=_text,
)
def test_numeric_scales_never_leave_range(low: int, span: int, integer: bool, text: str) -> None:
    scale = NumericScale(low=low, high=low + span, integer=integer)
    v = parse_verdict(text, scale)
    if v.score is not None:
        assert isinstance(v.value, float)
        assert scale.contains(v.value)
        assert 0.0 <= v.score <= 1.0
