"""The parsing policy, one trap per test, and properties that hold for every input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jurist.templates import (
    LabelScale,
    NumericScale,
    Template,
    get_template,
    labels_scale,
    list_templates,
    parse_verdict,
)
from jurist.templates._yaml import template_from_dict

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


# --- every template's parser, the YAML regex and JSON parsers -------------------------------

ALL = sorted(list_templates().items())
_FRAGMENTS = [
    "Score:", "Rating:", "[[", "]]", "[RESULT]", "Feedback:", "Explanation:", "\n", " ", "A", "B",
    "C", "tie", "A>>B", "A>B", "A=B", "B>A", "B>>A", "Correct", "Incorrect", "not sure", "0",
    "1", "5", "7", "10", "11", "-3", "8.5", "0.25", "/", "/10", "%", "out of", "-", "{", "}",
    '"verdict"', ":", '"A"', "<think>", "</think>", "```json", "```", "null", "true", "1e999",
]  # fmt: skip
_noisy = st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=4), max_size=25).map("".join)
_plain = st.text(alphabet=st.sampled_from(list("abcdefghij XYZ.,;!?-0123456789\n")), max_size=40)

YAML_REGEX = template_from_dict(
    {
        "fields": ["response"],
        "messages": [{"role": "user", "content": "<r>{response}</r>"}],
        "scale": {"range": {"low": 0, "high": 20, "integer": True}},
        "parser": {"type": "regex", "pattern": r"Grade\s+(\S+)"},
    }
)
YAML_JSON = template_from_dict(
    {
        "fields": ["response"],
        "messages": [{"role": "user", "content": "<r>{response}</r>"}],
        "scale": {"labels": [{"name": "good", "score": 1.0, "aliases": ["fine"]},
                             {"name": "bad", "score": 0.0}]},
        "parser": {"type": "json", "key": "grade"},
    }
)  # fmt: skip
PARSERS = [t for _, t in ALL] + [YAML_REGEX, YAML_JSON]


def _on_scale(template: Template, value: object) -> bool:
    scale = template.scale
    if isinstance(scale, LabelScale):
        return value in {lb.name for lb in scale.labels}
    return isinstance(value, float) and scale.contains(value)


def _check(template: Template, text: str, **kwargs: object) -> None:
    v = template.parse(text, explanations=True, **kwargs)  # type: ignore[arg-type]
    if v.score is None:
        assert v.value is None and v.error is not None and v.error.startswith("parse: ")
    else:
        assert v.error is None and 0.0 <= v.score <= 1.0
        assert _on_scale(template, v.value), (template.name, text, v)


@pytest.mark.parametrize("template", PARSERS, ids=lambda t: t.name)
@given(text=_noisy)
def test_every_parser_never_raises_and_stays_on_scale(template: Template, text: str) -> None:
    _check(template, text)
    _check(template, text, json=False)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@pytest.mark.parametrize("template", PARSERS, ids=lambda t: t.name)
@given(
    value=_json_values | st.sampled_from(["A", "tie", "C", "Correct", "good", "fine", 7, 0.5]),
    explanation=_json_values,
)
def test_every_json_reading_never_raises_and_stays_on_scale(
    template: Template, value: object, explanation: object
) -> None:
    text = json.dumps({template.json_key: value, "explanation": explanation})
    _check(template, text, json=True)
    _check(template, text)


def _written(template: Template, verdict: str, before: str, after: str) -> str:
    form = template.verdict_form
    if form.regex is not None:  # the YAML regex template: "Grade <n>"
        return f"{before}\nGrade {verdict}\n{after}"
    return f"{before}\n{form.open}{verdict}{form.close}\n{after}"


@pytest.mark.parametrize(
    "template",
    [t for t in PARSERS if not t.json_only and t.candidates() is not None],
    ids=lambda t: t.name,
)
@settings(max_examples=50)
@given(data=st.data(), before=_plain, after=_plain)
def test_a_verdict_in_its_own_form_is_read_back_exactly(
    template: Template, data: st.DataObject, before: str, after: str
) -> None:
    candidates = template.candidates()
    assert candidates is not None
    verdict = data.draw(st.sampled_from(sorted(candidates)))
    v = template.parse(_written(template, verdict, before, after))
    assert v.error is None, (verdict, v.error)
    assert v.score == candidates[verdict]
    if isinstance(template.scale, LabelScale):
        assert v.value == template.scale.label_of(verdict).name
    else:
        assert v.value == float(verdict)


# Claim-by-claim templates write no single verdict: their read-back properties are in
# tests/templates/test_grounded_templates.py.
_ONE_VERDICT = [t for t in PARSERS if t.claims is None]


@pytest.mark.parametrize(
    "template", [t for t in _ONE_VERDICT if t.candidates() is None], ids=lambda t: t.name
)
@settings(max_examples=50)
@given(data=st.data(), before=_plain)
def test_a_continuous_verdict_is_read_back_exactly(
    template: Template, data: st.DataObject, before: str
) -> None:
    scale = template.scale
    assert isinstance(scale, NumericScale)
    cents = data.draw(st.integers(int(scale.low * 100), int(scale.high * 100)))
    text = f"{before}\n{template.verdict_open}{cents / 100:g}{template.verdict_close}"
    v = template.parse(text)
    assert v.value == pytest.approx(cents / 100)
    assert v.score == pytest.approx(scale.normalize(cents / 100))


def test_a_think_tag_inside_a_json_explanation_is_data_not_the_end_of_reasoning() -> None:
    """A lone ``</think>`` ends reasoning that the chat template opened, unless the whole
    answer is one JSON object: then it is text inside one of its strings (found by the
    property below)."""
    likert = get_template("likert")
    v = likert.parse(
        '{"verdict": 4, "explanation": "ends with </THINK>"}', explanations=True, json=True
    )
    assert v.error is None and v.value == 4 and v.explanation == "ends with </THINK>"
    v = likert.parse('weighing it</think>{"verdict": 2}', json=True)
    assert v.error is None and v.value == 2


@pytest.mark.parametrize("template", _ONE_VERDICT, ids=lambda t: t.name)
@settings(max_examples=50)
@given(data=st.data(), explanation=st.text(max_size=30))
def test_a_json_verdict_is_read_back_exactly(
    template: Template, data: st.DataObject, explanation: str
) -> None:
    scale = template.scale
    verdict: object
    if isinstance(scale, LabelScale):
        verdict = data.draw(st.sampled_from([lb.name for lb in scale.labels]))
        expected: object = verdict
    elif scale.integer:
        verdict = data.draw(st.integers(int(scale.low), int(scale.high)))
        expected = float(verdict)  # type: ignore[arg-type]
    else:
        verdict = data.draw(st.floats(scale.low, scale.high, allow_nan=False))
        expected = verdict
    text = json.dumps({"explanation": explanation, template.json_key: verdict})
    v = template.parse(text, explanations=True, json=True)
    assert v.error is None and v.value == expected
    assert v.explanation == (explanation.strip() or None)
