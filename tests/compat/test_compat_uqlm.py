"""The uqlm drop-in: uqlm's documented signature and shapes over jurist's own judge."""

from __future__ import annotations

import inspect
import math

import pytest

from jurist.compat.uqlm import LLMJudge
from jurist.judges import LLMJudge as NativeJudge
from jurist.models import MockModel


def test_signature_matches_uqlm() -> None:
    """uqlm 0.6's positional signature, plus earlier releases' options as keywords."""
    params = inspect.signature(LLMJudge).parameters
    positional = [n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == [
        "llm",
        "max_calls_per_min",
        "scoring_template",
        "additional_context",
        "keywords_to_scores_dict",
    ]
    keyword_only = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
    assert keyword_only == ["system_prompt", "template_ques_ans"]
    assert params["scoring_template"].default == "true_false_uncertain"
    jr = inspect.signature(LLMJudge.judge_responses).parameters
    assert list(jr) == ["self", "prompts", "responses", "retries", "progress_bar", "explanations"]
    assert jr["retries"].default == 5 and jr["explanations"].default is False
    gr = inspect.signature(LLMJudge.generate_responses).parameters
    assert (
        gr["system_prompt"].default == "You are a helpful assistant." and gr["count"].default == 1
    )


def test_is_a_thin_layer_over_the_native_judge() -> None:
    judge = LLMJudge(MockModel("j"))
    assert isinstance(judge.judge, NativeJudge)


async def test_judge_responses_with_nan_for_unreadable() -> None:
    judge = LLMJudge(MockModel("j", outputs=["Incorrect", "hmm", "hmm"]))
    out = await judge.judge_responses(["q1", "q2"], ["a1", "a2"], retries=1)
    assert out["scores"][0] == 0.0 and math.isnan(out["scores"][1])
    assert out["judge_responses"] == ["Incorrect", "hmm"]


async def test_template_ques_ans_places_question_and_answer() -> None:
    model = MockModel("j", outputs=["yes"])
    judge = LLMJudge(
        model,
        template_ques_ans="Q: {} | A: {}. Is A right? Say yes or no.",
        keywords_to_scores_dict={1.0: ["yes"], 0.0: ["no"]},
    )
    out = await judge.judge_responses(["2+2"], ["4"])
    assert out["judge_prompts"] == ["Q: 2+2 | A: 4. Is A right? Say yes or no."]
    assert out["scores"] == [1.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scoring_template": "nope"}, "scoring_template must be one of"),
        ({"keywords_to_scores_dict": {1: ["yes"]}}, "must be floats"),
        ({"keywords_to_scores_dict": {1.0: "yes"}}, "lists of strings"),
        ({"template_ques_ans": "only {} one"}, "two positional fields"),
    ],
)
def test_bad_arguments_are_value_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LLMJudge(MockModel("j"), **kwargs)  # type: ignore[arg-type]


def test_llm_none_is_an_error_not_a_local_model_to_download() -> None:
    """uqlm requires ``llm``; ``llm=None`` must not fall back to the default hf model."""
    with pytest.raises(ValueError, match=r"LLMJudge needs llm: .*got None"):
        LLMJudge(llm=None)
    with pytest.raises(TypeError):
        LLMJudge()  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("template", "output", "score"),
    [("true_false", "Correct", 1.0), ("continuous", "85", 0.85), ("likert", "2", 0.25)],
)
async def test_templates(template: str, output: str, score: float) -> None:
    judge = LLMJudge(MockModel("j", outputs=[output]), scoring_template=template)
    assert (await judge.judge_responses(["q"], ["a"]))["scores"] == [score]


async def test_generate_responses_shape() -> None:
    model = MockModel("gen", outputs=["r1", "r2", "r3", "r4"])
    judge = LLMJudge(model)
    out = await judge.generate_responses(["p1", "p2"], count=2)
    assert out["data"] == {"prompt": ["p1", "p1", "p2", "p2"], "response": ["r1", "r2", "r3", "r4"]}
    assert out["metadata"] == {
        "system_prompt": "You are a helpful assistant.",
        "temperature": None,
        "count": 2,
    }
    assert model.requests[0].messages[0].content == "You are a helpful assistant."


def test_system_prompt_override() -> None:
    model = MockModel("j", outputs=["Correct"])
    judge = LLMJudge(model, system_prompt="Grade strictly.")
    judge.judge_responses_sync(["q"], ["a"])
    assert model.requests[0].messages[0].content == "Grade strictly."


async def test_additional_context_and_explanations_per_call() -> None:
    model = MockModel("j", outputs=["Score: Correct\nExplanation: it is 4", "Incorrect"])
    judge = LLMJudge(model, additional_context="Answers are arithmetic.")
    out = await judge.judge_responses(["2+2?"], ["4"], explanations=True)
    assert out["scores"] == [1.0] and out["explanations"] == ["it is 4"]
    system = model.requests[0].messages[0].content
    assert system.endswith("Additional context:\nAnswers are arithmetic.")
    assert "Explanation" in system
    plain = await judge.judge_responses(["2+2?"], ["5"])
    assert plain["scores"] == [0.0] and "explanations" not in plain
    assert "Explanation" not in model.requests[1].messages[0].content


def test_uqlm_judges_answer_in_text_even_on_schema_backends() -> None:
    judge = LLMJudge(MockModel("j", outputs=["Correct"], json_schema=True))
    assert judge.judge.json is False and judge.judge.describe()["json_schema"] is None
