"""Thinking judges on a real loopback server: replies cut inside their thinking are
recovered (never read as a verdict), re-asks counted exactly, reasoning tokens counted
apart, the trace kept (or dropped)."""

from __future__ import annotations

from typing import Any

import pytest

import jurist
from jurist.errors import CapabilityError
from jurist.judges._thinking import CONTINUE_PROMPT
from jurist.models import MockModel
from tests._thinking_server import Shape, ThinkingServer, is_long

SHAPES: tuple[Shape, ...] = ("reasoning_content", "think_tag", "anthropic")
N = 10


def _items(n: int = N) -> list[dict[str, str]]:
    return [
        {
            "prompt": f"Q{i}: what is {i} + {i}?",
            "response": f"{2 * i} RIGHT" if i % 2 else "0 WRONG",
        }
        for i in range(n)
    ]


def _truth(n: int = N) -> list[float]:
    return [1.0 if i % 2 else 0.0 for i in range(n)]


def _judge(server: ThinkingServer, **options: Any) -> jurist.LLMJudge:
    if server.shape == "anthropic":
        model = jurist.get_model("anthropic:claude-judge", base_url=server.base_url, api_key="k")
    else:
        model = jurist.get_model("openai:thinker", base_url=server.base_url, api_key="k")
    return jurist.LLMJudge(model, concurrency=4, **options)


@pytest.mark.parametrize("shape", SHAPES)
def test_thirty_percent_cut_in_thinking_all_recovered_none_made_up(shape: Shape) -> None:
    with ThinkingServer(shape, cut_share=0.3, long_thought=1500) as server:
        judge = _judge(server, reasoning="low")
        results = judge.judge_sync(_items())
        bodies = list(server.bodies)
    cut = [i for i in range(N) if is_long(i, 0.3)]
    assert len(cut) == 3
    judgments = list(results)
    # every verdict is the truth: none lost, none read out of the cut (wrong-leaning) thinking
    assert [j.score for j in judgments] == _truth()
    assert [j.error for j in judgments] == [None] * N
    # exactly one continuation per cut reply, counted where it was spent
    assert len(bodies) == N + len(cut)
    assert [j.attempts for j in judgments] == [2 if i in cut else 1 for i in range(N)]
    assert [i for i, j in enumerate(judgments) if j.thinking_note] == cut
    for i in cut:
        note = judgments[i].thinking_note or ""
        assert note.startswith("cut in its thinking at max_tokens=1056")
        assert note.endswith("verdict from a continuation")
    # the continuations: the trace as the assistant's turn, then the closing ask, no thinking
    continuations = [b for b in bodies if b["messages"][-1]["content"] == CONTINUE_PROMPT]
    assert len(continuations) == len(cut)
    for body in continuations:
        assert body["messages"][-2]["role"] == "assistant"
        # text, or Anthropic's content blocks (a message there may carry a cache breakpoint)
        trace = body["messages"][-2]["content"]
        if isinstance(trace, list):
            trace = "".join(block["text"] for block in trace if block.get("type") == "text")
        assert trace.startswith("The proposed answer might be")
        if shape == "anthropic":
            assert "thinking" not in body
        else:
            assert body["chat_template_kwargs"] == {"enable_thinking": False}
    # reasoning tokens counted apart: 7 short thoughts and 3 thoughts cut at 1056 words
    expected = 7 * 40 + 3 * 1056
    usage = results.usage
    if shape == "anthropic":  # not reported apart: the thinking's share of output_tokens
        assert expected - N <= usage.reasoning_tokens <= expected
    else:  # usage.completion_tokens_details.reasoning_tokens, as sent
        assert usage.reasoning_tokens == expected
    assert usage.completion_tokens == expected + N  # one verdict word per item
    # the traces are kept per judgment (a cut one: what was thought before the cut)
    assert all(j.reasoning and j.reasoning.startswith("The proposed") for j in judgments)


def test_deepeval_3042_thinking_by_default_past_max_tokens_1024_gets_its_verdict() -> None:
    """A Claude judge that thinks by default, asked at max_tokens=1024 (DeepEval #3042):
    its thinking runs past the limit (stop_reason max_tokens after a thinking block)."""
    with ThinkingServer("anthropic", cut_share=1.0, long_thought=1500) as server:
        judge = _judge(server, max_tokens=1024)
        judgment = judge.judge_one_sync({"prompt": "Q1: 1 + 1?", "response": "2 RIGHT"})
        bodies = list(server.bodies)
    assert judgment.score == 1.0 and judgment.verdict == "Correct"
    assert judgment.attempts == 2 and len(bodies) == 2
    assert bodies[0]["max_tokens"] == 1024 and "thinking" not in bodies[0]
    assert "cut in its thinking at max_tokens=1024" in (judgment.thinking_note or "")
    assert judgment.usage.reasoning_tokens == 1024


def test_recovery_off_is_no_score_with_truncated_in_thinking() -> None:
    with ThinkingServer("think_tag", cut_share=1.0, long_thought=1500) as server:
        judge = _judge(server, reasoning="low", thinking_recovery="off")
        judgment = judge.judge_one_sync({"prompt": "Q0: 0?", "response": "1 WRONG"})
        assert len(server.bodies) == 1
    assert judgment.score is None and judgment.verdict is None
    assert (judgment.error or "").startswith("parse: truncated in thinking")


def test_grow_retries_at_twice_the_budget_up_to_the_cap() -> None:
    with ThinkingServer("reasoning_content", cut_share=1.0, long_thought=1500) as server:
        judge = _judge(server, reasoning="low", thinking_recovery="grow")
        judgment = judge.judge_one_sync({"prompt": "Q0: 0?", "response": "1 WRONG"})
        sizes = [b["max_tokens"] for b in server.bodies]
    assert sizes == [1056, 2112]
    assert judgment.score == 0.0 and judgment.attempts == 2
    assert (judgment.thinking_note or "").endswith("verdict from a retry at max_tokens=2112")
    # a cap below the next size: nothing left to try, the item fails, no score is made up
    with ThinkingServer("reasoning_content", cut_share=1.0, long_thought=5000) as server:
        judge = _judge(server, reasoning="low", thinking_recovery="grow", max_thinking_tokens=3000)
        judgment = judge.judge_one_sync({"prompt": "Q0: 0?", "response": "1 WRONG"})
        sizes = [b["max_tokens"] for b in server.bodies]
    assert sizes == [1056, 2112]
    assert judgment.score is None and judgment.attempts == 2
    assert (judgment.error or "").startswith("parse: truncated in thinking")


def test_no_keep_reasoning_drops_the_trace() -> None:
    with ThinkingServer("think_tag", cut_share=0.0) as server:
        kept = _judge(server).judge_one_sync({"prompt": "Q1: ?", "response": "RIGHT"})
        dropped = _judge(server, keep_reasoning=False).judge_one_sync(
            {"prompt": "Q1: ?", "response": "RIGHT"}
        )
    assert kept.reasoning and dropped.reasoning is None
    assert kept.score == dropped.score == 1.0


def test_a_backend_that_cannot_think_refuses_before_any_call() -> None:
    model = MockModel("plain", thinking=False)
    with pytest.raises(CapabilityError, match="cannot honour reasoning='high'"):
        jurist.LLMJudge(model, reasoning="high")
    with pytest.raises(CapabilityError, match="cannot honour reasoning=2048"):
        jurist.PairwiseJudge(model, reasoning=2048)
    with pytest.raises(CapabilityError, match="cannot honour"):
        jurist.CriterionGrader(judges=[model], reasoning="low")
    assert model.calls == 0
    server_model = jurist.get_model(
        "openai:plain", base_url="http://127.0.0.1:9/v1", reasoning_form=None
    )
    with pytest.raises(CapabilityError, match=r"capabilities\.thinking is False"):
        jurist.LLMJudge(server_model, reasoning="low")
