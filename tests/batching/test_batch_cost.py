"""Batch calls are priced at the batch rate of the price table (issue 12, item 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.engines import BatchAPIEngine, BatchAPIOptions
from jurist.runs import Price, PriceTable
from jurist.runs._cost import bill
from jurist.types import Usage
from tests._batch_server import BatchServer

USAGE = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, calls=4)


def test_builtin_table_carries_half_the_live_rates_for_batches() -> None:
    table = PriceTable.default()
    for spec in ("openai:gpt-4o", "openai:gpt-4o-mini", "openai:gpt-4.1", "openai:gpt-3.5-turbo"):
        price = table.price_for(spec)
        assert price is not None
        assert price.batch_prompt == price.prompt / 2
        assert price.batch_completion == price.completion / 2
        live, _ = bill(USAGE, price)
        batch, estimated = bill(USAGE.model_copy(update={"batch_calls": 4}), price)
        assert live is not None and batch == pytest.approx(live / 2)
        assert estimated is False


def test_batch_cached_rate_is_used_for_cached_prompt_tokens() -> None:
    price = Price(
        prompt=2.0,
        completion=8.0,
        cached=1.0,
        batch_prompt=1.0,
        batch_completion=4.0,
        batch_cached=0.25,
    )
    usage = Usage(prompt_tokens=1_000_000, cached_tokens=400_000, calls=1, batch_calls=1)
    # 600k uncached at 1.0 + 400k cached at 0.25
    assert bill(usage, price) == (pytest.approx(0.6 + 0.1), False)
    # no batch_cached: cached tokens at the batch prompt rate
    plain = price.model_copy(update={"batch_cached": None})
    assert bill(usage, plain) == (pytest.approx(1.0), False)


def test_a_price_without_batch_rates_leaves_batch_calls_unpriced() -> None:
    price = Price(prompt=1.0, completion=2.0)
    assert bill(USAGE, price) == (2.0, False)
    assert bill(USAGE.model_copy(update={"batch_calls": 1}), price) == (None, False)


def test_mixed_batch_and_live_calls_are_billed_in_proportion_and_marked_estimated() -> None:
    price = Price(prompt=1.0, completion=2.0, batch_prompt=0.5, batch_completion=1.0)
    cost, estimated = bill(USAGE.model_copy(update={"batch_calls": 1}), price)
    assert estimated is True
    assert cost == pytest.approx(2.0 * 3 / 4 + 1.0 * 1 / 4)


def test_usage_adds_batch_calls() -> None:
    total = Usage(calls=1, batch_calls=1) + Usage(calls=2) + Usage(calls=1, batch_calls=1)
    assert (total.calls, total.batch_calls) == (4, 2)


def test_price_overrides_take_batch_rates() -> None:
    table = PriceTable.default().with_prices(
        {
            "openai:mine": {
                "prompt": 1.0,
                "completion": 2.0,
                "batch_prompt": 0.4,
                "batch_completion": 0.8,
            }
        }
    )
    price = table.price_for("openai:mine")
    assert price is not None and price.batch_rates == (0.4, 0.4, 0.8)


def test_a_batch_run_costs_half_the_same_run_live(tmp_path: Path) -> None:
    items = [{"prompt": f"q{i}", "response": f"a{i}"} for i in range(5)]
    with BatchServer(delay=0.0) as server:
        model = jurist.get_model(
            "openai:gpt-4o-mini", base_url=server.base_url, api_key="k", json_mode=None
        )
        judge = jurist.LLMJudge(model)
        live = jurist.evaluate(items, judge, run_dir=tmp_path / "live").summary()
        batch = jurist.evaluate(
            items,
            judge,
            run_dir=tmp_path / "batch",
            engine=BatchAPIEngine(BatchAPIOptions(poll_interval=0.01)),
        ).summary()
        # with a price that has no batch rate the batch run's cost is unknown, not guessed
        unpriced = jurist.evaluate(
            items,
            judge,
            run_dir=tmp_path / "batch",
            engine=BatchAPIEngine(BatchAPIOptions(poll_interval=0.01)),
            prices={"openai:gpt-4o-mini": {"prompt": 0.15, "completion": 0.6}},
            resume=False,
        ).summary()
    assert (batch.prompt_tokens, batch.completion_tokens) == (
        live.prompt_tokens,
        live.completion_tokens,
    )
    assert live.cost is not None and live.cost > 0 and live.batch_calls == 0
    assert batch.cost == pytest.approx(live.cost / 2)
    assert batch.batch_calls == 5 and batch.cost_estimated_items == 0
    assert unpriced.cost is None and unpriced.cost_unknown_items == 5


def test_followup_live_items_are_billed_in_proportion_and_marked_estimated(
    tmp_path: Path,
) -> None:
    asked: set[str] = set()

    def unreadable_first(body: dict[str, Any]) -> str:
        key = body["messages"][-1]["content"]
        if key in asked:
            return "Correct"
        asked.add(key)
        return "no idea"

    with BatchServer(delay=0.0, answer=unreadable_first) as server:
        model = jurist.get_model(
            "openai:gpt-4o-mini", base_url=server.base_url, api_key="k", json_mode=None
        )
        run = jurist.evaluate(
            [{"prompt": "q", "response": "a"}],
            jurist.LLMJudge(model),
            retries=1,
            run_dir=tmp_path / "run",
            engine=BatchAPIEngine(BatchAPIOptions(poll_interval=0.01, followup="live")),
        )
    row = next(iter(run.rows()))
    assert row["score"] == 1.0 and row["usage"].calls == 2
    assert row["cost_estimated"] is True and row["cost"] is not None
