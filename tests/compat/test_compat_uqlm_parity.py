"""The uqlm drop-in reads every verdict that uqlm 0.6.7's own test suite asserts it reads.

uqlm's ``tests/test_llmjudge.py`` checks fourteen single-output parses across its four
templates (listed below as facts: judge output -> expected score). Each is run here
through ``jurist.compat.uqlm.LLMJudge`` end to end: a scripted model answers with the
output, and ``judge_responses`` must report the same score.
"""

from __future__ import annotations

import math

import pytest

from jurist.compat.uqlm import LLMJudge
from jurist.models import MockModel

# (scoring_template, judge output, score uqlm asserts)
UQLM_ASSERTED_PARSES = [
    ("likert", "5", 1.0),
    ("likert", "4", 0.75),
    ("likert", "3", 0.5),
    ("likert", "2", 0.25),
    ("likert", "1", 0.0),
    ("likert", "partially correct", 0.5),
    ("continuous", "95", 0.95),
    ("continuous", "50", 0.5),
    ("continuous", "0", 0.0),
    ("true_false", "correct", 1.0),
    ("true_false", "incorrect", 0.0),
    ("true_false_uncertain", "correct", 1.0),
    ("true_false_uncertain", "uncertain", 0.5),
    ("true_false_uncertain", "incorrect", 0.0),
]

# uqlm's suite also asserts these outputs stay unscored (NaN).
UQLM_ASSERTED_UNREADABLE = [
    ("likert", "random text"),
    ("continuous", "no numbers here"),
    ("true_false_uncertain", "completely unrelated"),
]


def _score(template: str, output: str, *, explanations: bool = False) -> float:
    judge = LLMJudge(MockModel("j", outputs=[output]), scoring_template=template)
    out = judge.judge_responses_sync(["q"], ["a"], retries=0, explanations=explanations)
    assert out["judge_responses"] == [output]
    score = out["scores"][0]
    assert isinstance(score, float)
    return score


def test_the_fourteen_parses_are_all_listed() -> None:
    assert len(UQLM_ASSERTED_PARSES) == 14
    assert len({(t, o) for t, o, _ in UQLM_ASSERTED_PARSES}) == 14


@pytest.mark.parametrize(("template", "output", "expected"), UQLM_ASSERTED_PARSES)
def test_uqlm_asserted_parse(template: str, output: str, expected: float) -> None:
    assert _score(template, output) == expected


@pytest.mark.parametrize(("template", "output"), UQLM_ASSERTED_UNREADABLE)
def test_uqlm_asserted_unreadable_is_nan(template: str, output: str) -> None:
    assert math.isnan(_score(template, output))


def test_score_line_without_explanation_line() -> None:
    """uqlm reads ``Score: correct`` with no explanation line as 1.0 when explanations are on."""
    judge = LLMJudge(MockModel("j", outputs=["Score: correct"]))
    out = judge.judge_responses_sync(["q"], ["a"], retries=0, explanations=True)
    assert out["scores"] == [1.0]
