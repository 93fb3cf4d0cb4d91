"""The drop-in's likert judge reads uqlm's verdict phrases under jurist's parsing policy,
while jurist's own ``likert`` template stays strict (numbers only)."""

from __future__ import annotations

import json
import math

import pytest

from jurist.compat._uqlm_likert import PhrasedLikertTemplate
from jurist.compat.uqlm import LLMJudge, LLMPanel
from jurist.judges import LLMJudge as NativeJudge
from jurist.models import MockModel
from jurist.templates import get_template

# uqlm 0.6.7's likert phrases and the score each stands for (its LIKERT_TO_SCORES_DICT).
UQLM_LIKERT_PHRASES = {
    "completely incorrect": 0.0,
    "not correct": 0.0,
    "mostly incorrect": 0.25,
    "somewhat correct": 0.25,
    "partially correct": 0.5,
    "moderately correct": 0.5,
    "mostly correct": 0.75,
    "very correct": 0.75,
    "completely correct": 1.0,
    "highly correct": 1.0,
}


def _scores(outputs: list[str], **kwargs: object) -> list[float]:
    judge = LLMJudge(MockModel("j", outputs=outputs), scoring_template="likert")
    n = len(outputs)
    out = judge.judge_responses_sync(["q"] * n, ["a"] * n, retries=0, **kwargs)  # type: ignore[arg-type]
    assert out["judge_responses"] == outputs
    return list(out["scores"])


@pytest.mark.parametrize(("phrase", "score"), sorted(UQLM_LIKERT_PHRASES.items()))
def test_every_uqlm_phrase(phrase: str, score: float) -> None:
    assert _scores([phrase]) == [score]


@pytest.mark.parametrize(
    ("output", "score"),
    [
        ("Mostly Correct.", 0.75),  # case and trailing punctuation
        ("**Partially   correct**", 0.5),  # emphasis, spacing inside the phrase
        ("4 - Mostly correct", 0.75),  # a rating and its phrase agree
        ("Score: 3 (partially correct)", 0.5),
        ("Score: moderately correct", 0.5),
        ("The answer is mostly incorrect", 0.25),  # never "mostly correct" nor "incorrect"
        ("Score: 4\nExplanation: partially correct at first", 0.75),  # the Score line wins
        ("4/5", 0.75),  # the native number forms still read
        ("<think>not correct? no</think>highly correct", 1.0),  # reasoning is set aside
    ],
)
def test_phrases_under_the_policy(output: str, score: float) -> None:
    assert _scores([output]) == [score]


@pytest.mark.parametrize(
    ("output", "error"),
    [
        ("4 - partially correct", "conflicting verdicts in the output: 4 and 'partially"),
        ("Score: 2, mostly correct", "conflicting verdicts in the 'Score:' line: 2 and"),
        ("partially correct, or mostly correct", "conflicting verdicts in the output"),
        ("3.5, partially correct", "3.5 is not a whole number on the scale"),
        # a phrase is read alone only where the verdict text has no digits
        ("partially correct: 2 of 3 facts", "conflicting verdicts in the output: 2, 3"),
        ("On a 1-5 scale: very correct", "no number on the scale"),
        ("10/10 completely correct", "10/10 is not on the scale"),
        ("correct", "no number on the scale"),  # not one of uqlm's likert phrases
        ("partially correctness", "no number on the scale"),  # no substrings
    ],
)
def test_unreadable_is_nan_with_a_reason(output: str, error: str) -> None:
    assert math.isnan(_scores([output])[0])
    inner = LLMJudge(MockModel("j", outputs=[output]), scoring_template="likert").judge
    judgment = inner.judge_one_sync({"prompt": "q", "response": "a"})
    assert judgment.score is None and judgment.error is not None
    assert judgment.error.startswith("parse: ") and error in judgment.error


def test_phrase_with_explanation() -> None:
    model = MockModel("j", outputs=["Score: Mostly correct\nExplanation: 2 small slips."])
    judge = LLMJudge(model, scoring_template="likert")
    out = judge.judge_responses_sync(["q"], ["a"], retries=0, explanations=True)
    assert out["scores"] == [0.75] and out["explanations"] == ["2 small slips."]


def test_json_verdict_is_read_exactly() -> None:
    text = json.dumps({"explanation": "mostly correct, one slip", "verdict": 3})
    assert _scores([text]) == [0.5]


def test_native_likert_stays_strict() -> None:
    assert get_template("likert").parse("partially correct").score is None
    native = NativeJudge(MockModel("j", outputs=["partially correct"]), template="likert")
    judgment = native.judge_one_sync({"prompt": "q", "response": "a"})
    assert judgment.score is None and judgment.error is not None
    assert judgment.error.startswith("parse: no number on the scale")
    assert not isinstance(get_template("likert"), PhrasedLikertTemplate)


def test_same_prompt_as_native_and_phrases_recorded() -> None:
    compat = LLMJudge(MockModel("j"), scoring_template="likert").judge
    native = NativeJudge(MockModel("j"), template="likert", output="text")
    assert compat.messages({"prompt": "q", "response": "a"}) == native.messages(
        {"prompt": "q", "response": "a"}
    )
    recorded = compat.describe()["template"]
    assert recorded["name"] == "likert"
    assert recorded["phrases"]["partially correct"] == 3


def test_keywords_dict_replaces_the_phrases() -> None:
    judge = LLMJudge(
        MockModel("j", outputs=["partially correct", "good"]),
        scoring_template="likert",
        keywords_to_scores_dict={1.0: ["good"], 0.0: ["bad"]},
    )
    out = judge.judge_responses_sync(["q", "q"], ["a", "b"], retries=0)
    assert math.isnan(out["scores"][0]) and out["scores"][1] == 1.0


def test_template_ques_ans_keeps_the_phrases() -> None:
    judge = LLMJudge(
        MockModel("j", outputs=["partially correct"]),
        scoring_template="likert",
        template_ques_ans="Q: {} A: {}",
    )
    out = judge.judge_responses_sync(["2+2"], ["5"], retries=0)
    assert out["judge_prompts"] == ["Q: 2+2 A: 5"] and out["scores"] == [0.5]


def test_panel_likert_judge_reads_phrases() -> None:
    panel = LLMPanel(
        judges=[MockModel("a", outputs=["mostly correct"], cycle=True)],
        scoring_templates=["likert"],
    )
    result = panel.score_sync(["q"], ["a"], show_progress_bars=False)
    assert result.data["judge_1"] == [0.75]


@pytest.mark.parametrize(
    ("phrases", "match"),
    [
        ({"so so": 7}, "stands for 7, which is not on the scale"),
        ({"so so": 2.5}, "stands for 2.5, which is not on the scale"),
        ({"  ": 3}, "a verdict phrase is empty"),
        ({"Fine": 3, "fine": 4}, "verdict phrase 'fine' is repeated"),
    ],
)
def test_bad_phrases_are_rejected(phrases: dict[str, float], match: str) -> None:
    native = get_template("likert")
    fields = {name: getattr(native, name) for name in type(native).model_fields}
    with pytest.raises(ValueError, match=match):
        PhrasedLikertTemplate(**fields, phrases=phrases)
