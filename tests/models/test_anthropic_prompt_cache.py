"""Anthropic prompt caching: where the breakpoint goes, when it is set, and how the answer's
cache reads and writes are counted and priced (and OpenAI's cached tokens beside them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jurist.judges import LLMJudge
from jurist.models import get_model
from jurist.models._anthropic import AnthropicModel, cache_minimum
from jurist.runs._cost import PriceTable, bill, uncached
from jurist.types import Message, Request, Usage
from tests._prompt_cache_server import AnthropicCacheServer, OpenAICacheServer

LONG = "Judge strictly by the rubric. " * 200  # 6,000 characters


def _model(**options: Any) -> AnthropicModel:
    return AnthropicModel(
        "claude-sonnet-4-5", base_url="http://127.0.0.1:9/v1", api_key="k", **options
    )


def _request(*messages: tuple[str, str]) -> Request:
    return Request(messages=tuple(Message(role=r, content=c) for r, c in messages))  # type: ignore[arg-type]


def test_the_system_text_is_the_breakpoint_when_it_is_long_enough() -> None:
    body = _model().request_body(_request(("system", LONG), ("user", "item")))
    assert body["system"] == [
        {"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [{"role": "user", "content": "item"}]  # the item is never marked


def test_few_shot_turns_end_the_cached_prefix() -> None:
    body = _model().request_body(
        _request(
            ("system", LONG),
            ("user", "example q"),
            ("assistant", "example verdict"),
            ("user", "item"),
        )
    )
    assert isinstance(body["system"], str)
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "example verdict", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"][-1]["content"] == "item"


def test_no_breakpoint_when_short_or_turned_off() -> None:
    short = _model().request_body(_request(("system", "Be brief."), ("user", "q")))
    assert short["system"] == "Be brief."
    off = _model(prompt_cache=False).request_body(_request(("system", LONG), ("user", "q")))
    assert off["system"] == LONG
    assert _model(prompt_cache=False).rebuild_options() == {
        "base_url": "http://127.0.0.1:9/v1",
        "prompt_cache": False,
    }
    # Haiku 4.5 caches from 4,096 tokens: 6,000 characters may not reach it
    haiku = AnthropicModel("claude-haiku-4-5", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert cache_minimum(haiku.name) == 4096
    assert haiku.request_body(_request(("system", LONG), ("user", "q")))["system"] == LONG


def test_usage_counts_cache_writes_and_reads_in_the_prompt() -> None:
    raw = json.dumps(
        {
            "content": [{"type": "text", "text": "Yes"}],
            "usage": {
                "input_tokens": 20,
                "cache_creation_input_tokens": 1500,
                "cache_read_input_tokens": 0,
                "output_tokens": 2,
            },
        }
    ).encode()
    usage = _model().completion_of(raw).usage
    assert (usage.prompt_tokens, usage.cache_write_tokens, usage.cached_tokens) == (1520, 1500, 0)


def test_a_judge_on_the_server_writes_once_then_reads() -> None:
    with AnthropicCacheServer(lambda body: "Score: 4") as server:
        model = get_model("anthropic:claude-sonnet-4-5", base_url=server.base_url, api_key="k")
        from jurist.templates._criteria import criteria_template

        judge = LLMJudge(model, criteria_template(LONG, "likert"), concurrency=1)
        out = judge.judge_sync([{"prompt": f"q{i}", "response": "a"} for i in range(3)])
    first, second, third = (j.usage for j in out)
    assert first.cache_write_tokens > 0 and first.cached_tokens == 0
    assert second.cached_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    assert third.cached_tokens == first.cache_write_tokens


def test_cache_writes_and_reads_are_priced_at_their_rates() -> None:
    table = PriceTable.default()
    sonnet = table.price_for("anthropic:claude-sonnet-4-5")
    assert sonnet is not None and (sonnet.cached, sonnet.cache_write) == (0.3, 3.75)
    write = Usage(prompt_tokens=2_000_000, cache_write_tokens=1_000_000, calls=1)
    read = Usage(prompt_tokens=2_000_000, cached_tokens=1_000_000, calls=1)
    assert bill(write, sonnet)[0] == pytest.approx(3.0 + 3.75)
    assert bill(read, sonnet)[0] == pytest.approx(3.0 + 0.3)
    assert bill(uncached(read), sonnet)[0] == pytest.approx(6.0)
    # a price without a cache-write rate bills writes as plain input (never below it)
    plain = table.with_prices({"anthropic:x": {"prompt": 1.0, "completion": 1.0}}).price_for(
        "anthropic:x"
    )
    assert plain is not None and bill(write, plain)[0] == pytest.approx(2.0)


def test_openai_cached_tokens_are_read_and_priced() -> None:
    with OpenAICacheServer(lambda body: "Yes") as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, api_key="x")
        from jurist.templates._criteria import criteria_template

        judge = LLMJudge(model, criteria_template(LONG, "yes_no"), concurrency=1, output="text")
        out = judge.judge_sync([{"prompt": f"q{i}", "response": "a"} for i in range(2)])
    assert out[0].usage.cached_tokens == 0 and out[1].usage.cached_tokens >= 1024
    price = PriceTable.default().price_for("openai:gpt-4o-mini")
    assert price is not None and price.cached == 0.075
    cost, _ = bill(out[1].usage, price)
    full, _ = bill(uncached(out[1].usage), price)
    assert cost is not None and full is not None and cost < full
