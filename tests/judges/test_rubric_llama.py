"""An ensemble of three judges grading through a real llama.cpp server on 127.0.0.1.

The server serves a tiny random model, so its words are noise; the JSON schema the grader
sends becomes a grammar on the server, so every answer is a well-formed verdict for every
criterion, and the test checks what holds for any such answers: real HTTP calls and usage,
votes mapped back to the rubric through each judge's shuffle, failed votes abstaining, and
the final verdicts being exactly what the aggregation rules give for the votes.
"""

from __future__ import annotations

import pytest

import jurist
from jurist.judges.rubric import JudgeSpec
from jurist.judges.rubric._aggregate import aggregate, agreement
from tests._llama_fixtures import llama_server, tiny_gguf  # noqa: F401

pytestmark = pytest.mark.slow

# Short texts: the fixture's server has a 512-token context.
RUBRIC = jurist.Rubric.from_dict(
    [
        {"name": "answer", "requirement": "Says Paris", "weight": 10},
        {"name": "wrong", "requirement": "Names another city", "weight": -5},
        {
            "name": "tone",
            "requirement": "Tone?",
            "scale_type": "nominal",
            "options": [{"label": "Formal", "value": 1}, {"label": "Casual", "value": 0.6}],
        },
        {
            "name": "detail",
            "requirement": "Detail?",
            "options": [
                {"label": "Low", "value": 0},
                {"label": "Some", "value": 0.5},
                {"label": "High", "value": 1},
            ],
        },
    ]
)


def _judges(url: str) -> list[JudgeSpec]:
    def model() -> jurist.Model:
        return jurist.get_model("openai:tiny", base_url=url, api_key="x", json_mode="json_object")

    return [
        JudgeSpec(model(), judge_id="greedy", temperature=0.0),
        JudgeSpec(model(), judge_id="warm", temperature=0.8, seed=1, weight=2.0),
        JudgeSpec(model(), judge_id="hot", temperature=1.5, seed=2),
    ]


@pytest.mark.parametrize("calls", ["per_item", "per_criterion"])
async def test_three_judge_ensemble_over_real_http(llama_server: str, calls: str) -> None:  # noqa: F811
    grader = jurist.CriterionGrader(
        judges=_judges(llama_server),
        aggregation="weighted",
        ordinal_aggregation="mean",
        nominal_aggregation="unanimous",
        seed=11,
        calls=calls,  # type: ignore[arg-type]
        explanations=False,
        instructions="Grade the submission.",
    )
    reports = await grader.grade_many(
        RUBRIC,
        [{"submission": "Paris.", "query": "Capital of France?"}, "It is Lyon, friend."],
        concurrency=3,
    )
    per_judge_calls = 1 if calls == "per_item" else len(RUBRIC)
    for report in reports:
        assert report.usage.calls == 3 * per_judge_calls
        assert report.usage.prompt_tokens > 0  # counted by the server
        genuine = [v for c in report.criteria for v in c.votes if not v.is_error]
        assert genuine, [v.error for c in report.criteria for v in c.votes]
        for index, (criterion, c) in enumerate(
            zip(grader.effective_criteria(RUBRIC), report.criteria, strict=True)
        ):
            assert [v.judge_id for v in c.votes] == ["greedy", "warm", "hot"]
            assert [v.weight for v in c.votes] == [1.0, 2.0, 1.0]
            for v in c.votes:
                if v.is_error:  # a failed vote abstains and says why
                    assert v.na and v.error is not None and ":" in v.error
                elif criterion.options is None:
                    assert v.verdict is not None and v.selected_label == v.verdict.value
                else:
                    assert v.selected_index is not None and v.shuffle_order is not None
                    assert v.selected_label == criterion.options[v.selected_index].label
            # the report's verdict is exactly what the aggregation rule gives for these votes
            expected = aggregate(criterion, c.votes, c.aggregation)
            assert c.final == expected.final and c.n_counted == expected.n_counted
            assert c.agreement == agreement(c.final, c.votes)
            assert c.index == index
        assert (report.score is None) == (report.error is not None)
        if report.score is not None:
            assert 0.0 <= report.score <= 1.0
    # real aggregation: some criteria combined two or more genuine votes
    assert any(c.n_counted >= 2 for r in reports for c in r.criteria)
    # the ensemble saw different option orders (per judge, per item) through real calls
    orders = {
        tuple(v.shuffle_order or ()) for r in reports for c in r.criteria[2:] for v in c.votes
    }
    assert len(orders) > 1
