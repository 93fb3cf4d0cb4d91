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


# -- issue 31, item 18: errors are raised as uqlm raises them, never a silent NaN -----------


async def test_http_500_raises_as_uqlms_own_judge_does() -> None:
    """A judge server answering 500 to every call: uqlm's own judge raises its LLM's error,
    and so does the drop-in (after its model's retries), inside uqlm's UQEnsemble."""
    from tests._fault_server import FaultServer, status

    with FaultServer([status(500)] * 20) as server:
        model = jurist.get_model("openai:judge", base_url=server.url, api_key="x", max_retries=1)
        judge = LLMJudge(llm=model, scoring_template="likert")
        with pytest.raises(jurist.errors.InternalServerError) as err:
            await UQEnsemble(scorers=[judge]).score(
                prompts=PROMPTS[:2], responses=RESPONSES[:2], show_progress_bars=False
            )
        notes = "\n".join(getattr(err.value, "__notes__", []))
        assert "judge call(s) failed while judging 2 response(s)" in notes
        assert server.requests == 4  # 2 rows x (1 call + 1 retry): every failure seen
        openai_chat = pytest.importorskip("langchain_openai", reason="langchain-openai is absent")
        from uqlm.judges import LLMJudge as UqlmJudge

        native = UqlmJudge(
            llm=openai_chat.ChatOpenAI(
                model="judge", base_url=server.url, api_key="x", max_retries=0
            ),
            scoring_template="likert",
        )
        with pytest.raises(Exception, match="500"):  # LangChain's error for openai's 500
            await native.judge_responses(PROMPTS[:1], RESPONSES[:1])


async def test_langchain_model_on_two_event_loops_raises_with_the_reason() -> None:
    """``await judge_responses`` binds a LangChain model's async client to this loop;
    ``judge_responses_sync`` then runs on another loop: an error that says so, not NaN.
    (A server of its own: langchain-openai shares one client per base URL, bound to the
    loop of an earlier test.)"""
    openai_chat = pytest.importorskip("langchain_openai", reason="langchain-openai is absent")
    with JudgeServer() as own:
        llm = openai_chat.ChatOpenAI(model="judge", base_url=own.url, api_key="x", max_retries=0)
        judge = LLMJudge(llm=llm, scoring_template="likert")
        first = await judge.judge_responses(PROMPTS[:1], RESPONSES[:1], retries=0)
        assert first["scores"] == [1.0]
        with pytest.raises(jurist.errors.ModelError) as err:
            judge.judge_responses_sync(PROMPTS[:1], RESPONSES[:1], retries=0)
    notes = "\n".join(err.value.__notes__)
    assert "bound to a different event loop" in notes  # the cause, named
    assert "use either `await judge_responses(...)` or" in notes


async def test_jurist_llmpanel_takes_uqlms_own_judges(judge: LLMJudge) -> None:
    openai_chat = pytest.importorskip("langchain_openai", reason="langchain-openai is absent")
    from uqlm.judges import LLMJudge as UqlmJudge

    from jurist.compat.uqlm import LLMPanel

    with JudgeServer() as own:  # its own URL: langchain-openai shares a client per URL
        theirs = UqlmJudge(
            llm=openai_chat.ChatOpenAI(model="judge", base_url=own.url, api_key="x"),
            scoring_template="likert",
        )
        panel = LLMPanel(judges=[theirs, judge])
        with pytest.warns(UserWarning, match="could not be parsed"):
            result = await panel.score(PROMPTS, RESPONSES, show_progress_bars=False)
    assert result.data["judge_1"][:2] == result.data["judge_2"][:2] == [1.0, 0.25]
    assert math.isnan(result.data["judge_1"][2]) and math.isnan(result.data["judge_2"][2])


def test_continuous_reads_numbers_in_their_form_where_uqlm_joins_digits() -> None:
    """The documented difference (docs/uqlm.md): on the 0-100 scale uqlm's continuous
    judge asks for, "0.8" is 0.008 for jurist (0.8 of 100) and 0.08 for uqlm, which joins
    the digits ("08"); "85.5" is 0.855 for jurist and NaN for uqlm ("855" > 100)."""
    from uqlm.judges import LLMJudge as UqlmJudge

    theirs = UqlmJudge(llm=object(), scoring_template="continuous")
    ours = LLMJudge(
        llm=jurist.models.MockModel("c", outputs=["0.8", "85.5"]), scoring_template="continuous"
    )
    out = ours.judge_responses_sync(["q", "q"], ["a", "a"], retries=0)
    assert out["scores"] == [pytest.approx(0.008), pytest.approx(0.855)]
    assert theirs._extract_score_from_text("0.8") == pytest.approx(0.08)
    assert math.isnan(theirs._extract_score_from_text("85.5"))
