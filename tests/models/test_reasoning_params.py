"""What each backend sends for each ``reasoning=`` value, read from the request bodies a
real loopback server received (docs/reasoning.md is the table these check)."""

from __future__ import annotations

import os
from typing import Any

import pytest

import jurist
from tests._thinking_server import Shape, ThinkingServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

VALUES: tuple[str | int, ...] = ("none", "low", "medium", "high", 2048)
VERDICT = 32  # the default template's verdict budget
_WIRE = ("messages", "model", "response_format", "system", "output_format")


def _sent(shape: Shape, spec: str, value: str | int | None, **options: Any) -> dict[str, Any]:
    """The body one judgment with ``reasoning=value`` sends (less messages, model, format)."""
    # Claude thinks only when asked (thinks_by_default=False); the OpenAI shapes think
    with ThinkingServer(shape, cut_share=0.0, thinks_by_default=False) as server:
        url = server.base_url
        if spec.startswith("litellm:"):
            options.setdefault("api_base", url.removesuffix("/v1") if shape == "anthropic" else url)
        else:
            options.setdefault("base_url", url)
        model = jurist.get_model(spec, api_key="k", **options)
        judgment = jurist.LLMJudge(model, reasoning=value).judge_one_sync(
            {"prompt": "Q1: 1+1?", "response": "2 RIGHT"}
        )
        assert judgment.score == 1.0, judgment.error
        [body] = server.bodies
    return {k: v for k, v in body.items() if k not in _WIRE}


OPENAI_TEMPLATE = {
    "none": {"chat_template_kwargs": {"enable_thinking": False}},
    "low": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "low"},
    "medium": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "medium"},
    "high": {"chat_template_kwargs": {"enable_thinking": True}, "reasoning_effort": "high"},
    2048: {"chat_template_kwargs": {"enable_thinking": True}, "thinking_token_budget": 2048},
}
BUDGET = {"none": 0, "low": 1024, "medium": 2048, "high": 4096, 2048: 2048}


@pytest.mark.parametrize("value", VALUES)
def test_openai_compatible_server_gets_the_chat_template_switch(value: str | int) -> None:
    """A server other than OpenAI's (vLLM, SGLang, llama.cpp): the hybrid thinker's
    ``chat_template_kwargs.enable_thinking``, the budget added to ``max_tokens``."""
    for shape in ("reasoning_content", "think_tag"):
        sent = _sent(shape, "openai:qwen3", value)
        assert sent == {
            "max_tokens": VERDICT + BUDGET[value],
            "temperature": 0.0,
            **OPENAI_TEMPLATE[value],
        }


@pytest.mark.parametrize("value", VALUES)
def test_openai_effort_form_sends_reasoning_effort_and_no_sampling(value: str | int) -> None:
    sent = _sent("reasoning_content", "openai:gpt-5.1", value, reasoning_form="effort")
    effort = {"none": "none", "low": "low", "medium": "medium", "high": "high", 2048: "medium"}
    expected: dict[str, Any] = {"max_tokens": VERDICT + BUDGET[value]}
    expected["reasoning_effort"] = effort[value]
    if value == "none":  # no thinking: the judge's temperature goes as before
        expected["temperature"] = 0.0
    assert sent == expected


@pytest.mark.parametrize("value", VALUES)
def test_anthropic_thinking_budget_below_max_tokens_and_no_temperature(value: str | int) -> None:
    sent = _sent("anthropic", "anthropic:claude-judge", value)
    if value == "none":
        assert sent == {"max_tokens": VERDICT, "temperature": 0.0}
        return
    assert sent == {
        "max_tokens": VERDICT + BUDGET[value],
        "thinking": {"type": "enabled", "budget_tokens": BUDGET[value]},
    }
    assert sent["max_tokens"] > sent["thinking"]["budget_tokens"]


def test_anthropic_budget_under_its_minimum_is_refused_unsent() -> None:
    with ThinkingServer("anthropic", cut_share=0.0) as server:
        model = jurist.get_model("anthropic:claude-judge", base_url=server.base_url, api_key="k")
        judgment = jurist.LLMJudge(model, reasoning=512).judge_one_sync(
            {"prompt": "Q1: ?", "response": "RIGHT"}
        )
        assert server.bodies == []
    assert judgment.score is None
    assert (judgment.error or "").startswith("capability: ")
    assert "smallest thinking budget" in (judgment.error or "")


def test_anthropic_max_tokens_at_or_below_the_budget_is_raised_above_it() -> None:
    with ThinkingServer("anthropic", cut_share=0.0) as server:
        model = jurist.get_model("anthropic:claude-judge", base_url=server.base_url, api_key="k")
        from jurist._sync import run_sync
        from jurist.types import Message, Reasoning, Request

        request = Request(
            messages=(Message(role="user", content="Q1: RIGHT"),),
            max_tokens=1024,
            reasoning=Reasoning(budget_tokens=2048),
        )
        run_sync(model.complete(request))
        [body] = server.bodies
    assert body["thinking"]["budget_tokens"] == 2048 and body["max_tokens"] == 3072


@pytest.mark.parametrize(("value", "expected"), [("low", 1024), (2048, 2048)])
def test_litellm_anthropic_route_gets_thinking(value: str | int, expected: int) -> None:
    pytest.importorskip("litellm")
    sent = _sent("anthropic", "litellm:anthropic/claude-sonnet-4-5", value)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": expected}
    assert sent["max_tokens"] == VERDICT + BUDGET[value]
    assert "temperature" not in sent and "top_p" not in sent


@pytest.mark.parametrize("value", VALUES)
def test_litellm_openai_route_gets_reasoning_effort(value: str | int) -> None:
    pytest.importorskip("litellm")
    sent = _sent("reasoning_content", "litellm:openai/thinker", value)
    effort = {"none": "none", "low": "low", "medium": "medium", "high": "high", 2048: "medium"}
    assert sent["reasoning_effort"] == effort[value]
    assert sent["max_tokens"] == VERDICT + BUDGET[value]
    assert ("temperature" in sent) == (value == "none")
