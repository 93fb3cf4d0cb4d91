"""The uqlm LLMPanel drop-in: uqlm's signature and result shape over jurist's Panel."""

from __future__ import annotations

import ast
import asyncio
import inspect
import math
from pathlib import Path
from typing import Any
from unittest import mock as mock_module

import pytest

from jurist.compat.uqlm import LLMJudge, LLMPanel, UQResult
from jurist.errors import InternalServerError
from jurist.judges import LLMJudge as NativeJudge
from jurist.models import MockModel
from jurist.types import Request

UQLM_PANEL = (
    Path(__file__).resolve().parents[2]
    / ".venvs/uqlm/lib/python3.11/site-packages/uqlm/scorers/shortform/panel.py"
)
PARAMS = [
    "judges",
    "llm",
    "system_prompt",
    "max_calls_per_min",
    "scoring_templates",
    "explanations",
    "additional_context",
]


def test_signature_matches_uqlm() -> None:
    params = inspect.signature(LLMPanel).parameters
    assert list(params) == PARAMS
    assert params["explanations"].default is False and params["llm"].default is None
    score = inspect.signature(LLMPanel.score).parameters
    assert list(score)[1:] == ["prompts", "responses", "show_progress_bars", "_display_header"]
    gen = inspect.signature(LLMPanel.generate_and_score).parameters
    assert list(gen)[1:] == ["prompts", "show_progress_bars"]


def test_signature_matches_the_installed_uqlm_source() -> None:
    if not UQLM_PANEL.exists():
        pytest.skip("uqlm's isolated venv (.venvs/uqlm) is absent")
    tree = ast.parse(UQLM_PANEL.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LLMPanel")
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for name in ("__init__", "score", "generate_and_score", "score_sync"):
        theirs = [a.arg for a in methods[name].args.args]
        ours = list(inspect.signature(getattr(LLMPanel, name)).parameters)
        assert ours == theirs, name


def mock(name: str, outputs: Any) -> MockModel:
    return MockModel(name, outputs=outputs, cycle=isinstance(outputs, list))


async def test_score_gives_uqlm_columns_and_aggregates() -> None:
    panel = LLMPanel(
        judges=[mock("a", ["Correct"]), mock("b", ["2"]), mock("c", ["Incorrect"])],
        scoring_templates=["true_false", "likert", "true_false_uncertain"],
    )
    result = await panel.score(["q1", "q2"], ["r1", "r2"])
    assert isinstance(result, UQResult)
    assert list(result.data) == [
        "prompts",
        "responses",
        "judge_1",
        "judge_2",
        "judge_3",
        "avg",
        "max",
        "min",
        "median",
    ]
    assert result.data["judge_2"] == [0.25, 0.25]
    assert result.data["avg"] == [pytest.approx(1.25 / 3)] * 2
    assert result.data["max"] == [1.0, 1.0] and result.data["min"] == [0.0, 0.0]
    assert result.data["median"] == [0.25, 0.25]
    assert result.metadata["num_judges"] == 3 and result.metadata["temperature"] is None
    assert result.to_dict()["data"] is result.data


def test_to_df_renames_plural_columns_like_uqlm() -> None:
    pytest.importorskip("pandas")
    panel = LLMPanel(judges=[mock("a", ["Correct"]), mock("b", ["Incorrect"])])
    df = panel.score_sync(["q"], ["r"]).to_pandas()
    assert list(df.columns) == [
        "prompt",
        "response",
        "judge_1",
        "judge_2",
        "avg",
        "max",
        "min",
        "median",
    ]
    assert df["avg"].tolist() == [0.5]


def test_wrong_number_of_scoring_templates_is_an_error() -> None:
    with pytest.raises(ValueError, match="Length of scoring_templates list must be equal"):
        LLMPanel(judges=["mock:a", "mock:b"], scoring_templates=["likert"])


def test_bad_judge_is_an_error() -> None:
    with pytest.raises(ValueError, match="judges must be a list containing"):
        LLMPanel(judges=[42])


async def test_unscored_rows_are_nan_with_a_warning_and_metadata() -> None:
    def reads(request: Request) -> str:
        return "???" if "q2" in request.messages[-1].content else "Correct"

    judge_a = MockModel("a", outputs=reads)
    panel = LLMPanel(judges=[judge_a, mock("b", ["no verdict here"])])
    with pytest.warns(UserWarning, match=r"could not be parsed for 2 prompt\(s\)"):
        result = await panel.score(["q1", "q2"], ["r1", "r2"])
    assert math.isnan(result.data["judge_2"][0]) and math.isnan(result.data["judge_2"][1])
    assert result.data["judge_1"][0] == 1.0 and math.isnan(result.data["judge_1"][1])
    assert result.data["avg"][0] == 1.0  # the failed judge is skipped, not counted as 0
    assert all(math.isnan(result.data[c][1]) for c in ("avg", "max", "min", "median"))
    assert result.metadata["n_counted"] == [1, 0]
    assert result.metadata["unscored"] == {"judge_1": [1], "judge_2": [0, 1]}
    assert judge_a.calls == 1 + 6  # an unreadable verdict is re-asked 5 times, as in uqlm


async def test_a_failed_call_raises_as_in_uqlm_never_a_silent_nan() -> None:
    """uqlm's panel awaits each judge, whose LLM error propagates: a call that fails is
    raised (for a drop-in judge and a jurist.LLMJudge alike), not scored NaN."""
    boom = InternalServerError("down", status_code=500)
    for failing in (mock("b", [boom]), NativeJudge(mock("n", [boom]), template="true_false")):
        panel = LLMPanel(judges=[mock("a", ["Correct"]), failing])
        with pytest.raises(InternalServerError, match="down") as err:
            await panel.score(["q1", "q2"], ["r1", "r2"], show_progress_bars=False)
        assert "2 judge call(s) failed while judging 2 response(s)" in err.value.__notes__[-1]


async def test_judges_as_compat_native_and_model_objects() -> None:
    compat = LLMJudge(mock("c", ["4"]), scoring_template="likert")
    native = NativeJudge(mock("n", ["Incorrect"]), template="true_false")
    panel = LLMPanel(
        judges=[compat, native, mock("m", ["85"])],
        scoring_templates=["true_false", "true_false", "continuous"],  # used for models only
    )
    assert panel.judges[0] is compat and panel.judges[1] is native
    assert (
        isinstance(panel.judges[2], LLMJudge) and panel.judges[2].scoring_template == "continuous"
    )
    result = await panel.score(["q"], ["r"])
    assert [result.data[f"judge_{k}"][0] for k in (1, 2, 3)] == [0.75, 0.0, 0.85]


async def test_langchain_chat_models_as_judges() -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    panel = LLMPanel(
        judges=[
            fake.FakeListChatModel(responses=["Correct"]),
            fake.FakeListChatModel(responses=["Incorrect"]),
        ]
    )
    result = await panel.score(["q"], ["r"])
    assert result.data["judge_1"] == [1.0] and result.data["judge_2"] == [0.0]


async def test_generate_and_score_uses_llm_and_system_prompt() -> None:
    seen: list[Request] = []

    def answer(request: Request) -> str:
        seen.append(request)
        if "fail" in request.messages[-1].content:
            raise InternalServerError("generation down", status_code=503)
        return "Paris"

    llm = MockModel("gen", outputs=answer)
    judge = mock("j", ["Correct"])
    panel = LLMPanel(judges=[judge], llm=llm, system_prompt="Be brief.")
    with pytest.warns(UserWarning):
        result = await panel.generate_and_score(["Capital of France?", "please fail"])
    assert result.data["responses"] == ["Paris", None]
    assert result.data["judge_1"][0] == 1.0 and math.isnan(result.data["judge_1"][1])
    assert result.metadata["generation_errors"] == {1: "api: generation down"}
    assert seen[0].messages[0].content == "Be brief."
    assert "Paris" in judge.requests[0].messages[-1].content
    with pytest.raises(ValueError, match="needs the llm="):
        await LLMPanel(judges=[judge]).generate_and_score(["q"])
    with pytest.raises(ValueError, match="list of strings"):
        await panel.generate_and_score([1])  # type: ignore[list-item]


async def test_explanations_and_additional_context() -> None:
    judge = mock("j", ["Score: Correct\nExplanation: matches the reference."])
    panel = LLMPanel(judges=[judge], explanations=True, additional_context="Answers are in French.")
    result = await panel.score(["q"], ["r"])
    assert result.data["judge_1"] == [1.0]
    assert result.data["judge_1_explanation"] == ["matches the reference."]
    system = judge.requests[0].messages[0].content
    assert system.endswith("Additional context:\nAnswers are in French.")
    assert "Explanation:" in system


def test_generate_and_score_sync_inside_and_outside_a_loop() -> None:
    panel = LLMPanel(judges=[mock("j", ["Correct"])], llm=mock("g", ["Paris"]))
    assert panel.generate_and_score_sync(["q"]).data["judge_1"] == [1.0]


class RecordingJudge(LLMJudge):
    """A subclass whose ``judge_responses`` override must be what the panel calls."""

    def __init__(self, scores: list[float]) -> None:
        super().__init__(mock("unused", ["Incorrect"]))
        self.scores = scores
        self.calls: list[dict[str, Any]] = []

    async def judge_responses(
        self,
        prompts: list[str],
        responses: list[str],
        retries: int = 5,
        progress_bar: Any = None,
        explanations: bool = False,
    ) -> dict[str, Any]:
        self.calls.append(
            {"prompts": prompts, "responses": responses, "explanations": explanations}
        )
        n = len(responses)
        return {"judge_prompts": prompts, "judge_responses": ["x"] * n, "scores": self.scores[:n]}


async def test_each_judge_is_asked_through_its_own_judge_responses() -> None:
    """uqlm's panel calls ``judge.judge_responses(...)``: an override is honoured, not bypassed."""
    recording = RecordingJudge([0.2, math.nan])
    inner = recording.judge.model
    plain = LLMJudge(mock("p", ["Correct"]))
    panel = LLMPanel(judges=[recording, plain])
    with pytest.warns(
        UserWarning, match=r"could not be parsed for 1 prompt\(s\) \(indices: \[1\]\)"
    ):
        result = await panel.score(["q1", "q2"], ["r1", "r2"], show_progress_bars=False)
    assert recording.calls == [
        {"prompts": ["q1", "q2"], "responses": ["r1", "r2"], "explanations": False}
    ]
    assert inner.calls == 0  # type: ignore[attr-defined]
    assert result.data["judge_1"][0] == 0.2 and math.isnan(result.data["judge_1"][1])
    assert result.data["judge_2"] == [1.0, 1.0]
    assert result.data["avg"] == [pytest.approx(0.6), 1.0]
    assert result.metadata["unscored"] == {"judge_1": [1], "judge_2": []}


async def test_a_mock_judge_is_asked_and_the_judges_run_concurrently() -> None:
    """A ``Mock(spec=LLMJudge)`` (how uqlm users test) answers; the judges overlap in time."""
    running = 0
    most = 0

    async def answer(**kwargs: Any) -> dict[str, Any]:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return {"scores": [0.5] * len(kwargs["responses"])}

    judges = [mock_module.AsyncMock(spec=LLMJudge) for _ in range(3)]
    for j in judges:
        j.judge_responses.side_effect = answer
    result = await LLMPanel(judges=judges, explanations=True).score(["q"], ["r"])
    for j in judges:
        j.judge_responses.assert_awaited_once_with(
            prompts=["q"], responses=["r"], progress_bar=None, explanations=True
        )
    assert result.data["avg"] == [0.5] and most == 3


async def test_a_judge_that_answers_the_wrong_shape_is_named() -> None:
    bad = mock_module.AsyncMock(spec=LLMJudge)
    bad.judge_responses.return_value = {"scores": [1.0]}
    panel = LLMPanel(judges=[LLMJudge(mock("a", ["Correct"])), bad])
    with pytest.raises(ValueError, match=r"judge 2 \(AsyncMock\): judge_responses\(\) gave 1"):
        await panel.score(["q1", "q2"], ["r1", "r2"])
