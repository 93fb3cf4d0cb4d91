"""The templates that make the judge think in a fixed order: solve_first and criteria_first."""

from __future__ import annotations

import jurist
from jurist.templates import get_template

SOLVE = get_template("solve_first")
CRITERIA = get_template("criteria_first")


def test_solve_first_asks_for_the_solution_before_the_verdict() -> None:
    system = SOLVE.system_text()
    assert system.index("Solution:") < system.index("Verdict:")
    assert "solve the question yourself" in system
    messages = SOLVE.render({"prompt": "What is 12 x 12?", "response": "144"})
    assert "<question>\nWhat is 12 x 12?\n</question>" in messages[-1].content
    assert "<answer>\n144\n</answer>" in messages[-1].content


def test_solve_first_reads_only_its_verdict_line() -> None:
    # "correct" and "incorrect" inside the solution are never the verdict
    reply = (
        "Solution: A spider has 8 legs; the claim that six is correct is incorrect.\n"
        "Verdict: Incorrect"
    )
    parsed = SOLVE.parse(reply)
    assert (parsed.value, parsed.score) == ("Incorrect", 0.0)
    assert SOLVE.parse("**Verdict:** Correct").score == 1.0
    # no verdict line: a failure, not a guess from the solution's words
    assert SOLVE.parse("Solution: 144 is correct.").score is None
    # two different verdict lines: a failure
    assert SOLVE.parse("Verdict: Correct\nVerdict: Incorrect").score is None
    # a thinking block before the reply is set aside
    thought = "<think>Verdict: Incorrect</think>Solution: 4.\nVerdict: Correct"
    assert SOLVE.parse(thought).score == 1.0


def test_criteria_first_reads_only_its_score_line() -> None:
    assert CRITERIA.system_text().index("Criteria:") < CRITERIA.system_text().index("Score:")
    reply = (
        "Criteria:\n1. says 144\n2. shows 12 x 12\n3. no other number\n"
        "Assessment: 1 met, 2 not met, 3 met.\nScore: 4"
    )
    parsed = CRITERIA.parse(reply)
    assert (parsed.value, parsed.score) == (4.0, 0.75)
    assert CRITERIA.parse("Criteria:\n1. x\nAssessment: meets 1 of 5.").score is None
    assert CRITERIA.parse("Score: 7").score is None  # off the scale: a failure, not a clamp


def test_a_judge_with_each_template_end_to_end() -> None:
    model = jurist.get_model(
        "mock:j",
        outputs=[
            "Solution: 12 x 12 = 144.\nVerdict: Correct",
            "Criteria:\n1. names 8 legs\nAssessment: says six, fails 1.\nScore: 1",
        ],
    )
    solve = jurist.LLMJudge(model, template="solve_first")
    criteria = jurist.LLMJudge(model, template="criteria_first")
    first = solve.judge_sync([{"prompt": "What is 12 times 12?", "response": "144"}])
    second = criteria.judge_sync(
        [{"prompt": "How many legs does a spider have?", "response": "Six."}]
    )
    assert first.scores == [1.0]
    assert second.scores == [0.0]
    assert solve.max_tokens == 1024  # room for the solution before the verdict
