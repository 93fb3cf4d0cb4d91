"""With uqlm installed, the drop-ins are accepted by uqlm's own UQEnsemble and LLMPanel,
which score through their public ``judge_responses`` on a loopback server."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

pytest.importorskip(
    "uqlm",
    reason="uqlm is not installed (pip install 'jurist[uqlm]'); it is not in the dev extra: "
    "uqlm 0.6.7 needs datasets<5, numpy<2, pandas<3, transformers<5",
)

from uqlm import UQEnsemble

import jurist
from jurist.compat.uqlm import LLMJudge
from tests._judge_server import JudgeServer

PROMPTS = ["Capital of Texas?", "Largest city in Texas?", "The red planet?"]
RESPONSES = ["Austin", "Dallas", "Mars"]


@pytest.fixture(scope="module")
def server() -> Iterator[JudgeServer]:
    with JudgeServer() as s:
        yield s


@pytest.fixture(scope="module")
def judge(server: JudgeServer) -> LLMJudge:
    model = jurist.get_model("openai:judge", base_url=server.url, api_key="x")
    return LLMJudge(llm=model, scoring_template="likert")


async def test_uqensemble_scores_with_the_drop_in(judge: LLMJudge) -> None:
    ensemble = UQEnsemble(scorers=[judge])
    with pytest.warns(UserWarning, match="could not be parsed for 1 prompt"):
        result = await ensemble.score(
            prompts=PROMPTS, responses=RESPONSES, show_progress_bars=False
        )
    scores = result.data["judge_1"]
    assert scores[:2] == [1.0, 0.25]
    assert math.isnan(scores[2])  # unreadable: uqlm's NaN, never a made-up score
    assert result.data["ensemble_scores"][:2] == [1.0, 0.25]


async def test_uqlm_llmpanel_takes_the_drop_in(judge: LLMJudge) -> None:
    from uqlm import LLMPanel

    panel = LLMPanel(judges=[judge])
    with pytest.warns(UserWarning, match="could not be parsed"):
        result = await panel.score(prompts=PROMPTS, responses=RESPONSES, show_progress_bars=False)
    assert result.data["judge_1"][:2] == [1.0, 0.25]
    assert math.isnan(result.data["avg"][2])


def test_the_drop_in_is_a_uqlm_judge(judge: LLMJudge) -> None:
    from uqlm.judges import LLMJudge as UqlmJudge

    assert isinstance(judge, UqlmJudge)


async def test_uqensemble_generate_and_score(judge: LLMJudge, server: JudgeServer) -> None:
    """uqlm generates with a LangChain chat model on the loopback server, then the drop-in
    judges the answers."""
    openai_chat = pytest.importorskip("langchain_openai", reason="langchain-openai is absent")
    llm = openai_chat.ChatOpenAI(
        model="sut", base_url=server.url, api_key="x", temperature=1.0, max_retries=0
    )
    ensemble = UQEnsemble(llm=llm, scorers=[judge])
    with pytest.warns(UserWarning, match="could not be parsed"):
        result = await ensemble.generate_and_score(
            prompts=["What is the capital of Texas?", "Which is the red planet?"],
            show_progress_bars=False,
        )
    assert result.data["responses"] == ["Austin", "Mars"]
    assert result.data["judge_1"][0] == 1.0 and math.isnan(result.data["judge_1"][1])
