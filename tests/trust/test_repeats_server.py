"""Repeats against a real OpenAI-compatible server on loopback whose verdicts are random for
some items and fixed for the others (issue 27, must show).

The server reads the item off the judge prompt (``ITEM-<n>-<kind>``), counts its calls per
item, and answers a ``fixed`` item "Correct" every time and a ``random`` one "Correct" or
"Incorrect" drawn from a generator seeded by the item and its call number (random, yet the
same on every test run). Repeats show a flip rate only on the random items; adaptive
repeats spend extra calls only there; and a repeat is never answered from the cache.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist.models import CachedModel
from tests._fault_server import _completion
from tests._loopback import Loopback

FIXED = [f"ITEM-{i}-fixed" for i in range(6)]
RANDOM = [f"ITEM-{i}-random" for i in range(6, 12)]


class CoinServer(Loopback):
    """The server of the module's docs; ``calls[item]`` counts the calls per item."""

    def __init__(self) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.calls: dict[str, int] = {}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: dict[str, Any] = await request.json()
        text = str(body["messages"][-1]["content"])
        found = re.search(r"ITEM-\d+-(fixed|random)", text)
        assert found is not None, text
        item = found.group(0)
        n = self.calls[item] = self.calls.get(item, 0) + 1
        verdict = "Correct"
        if found.group(1) == "random":
            verdict = random.Random(f"{item}/{n}").choice(["Correct", "Incorrect"])
        return web.json_response(_completion(body, verdict))


@pytest.fixture
def server() -> Any:
    with CoinServer() as s:
        yield s


def judge_of(server: CoinServer, **model: Any) -> jurist.LLMJudge:
    backend = jurist.get_model("openai:coin", base_url=server.url, api_key="x", **model)
    return jurist.LLMJudge(backend, temperature=1.0, output="text")


ITEMS = [{"prompt": f"Is this right? {name}", "response": "yes"} for name in FIXED + RANDOM]


def by_item(run: jurist.Run) -> dict[str, dict[str, Any]]:
    return {re.search(r"ITEM-\d+-\w+", r["prompt"]).group(0): r for r in run.records()}  # type: ignore[union-attr]


def test_flip_rate_is_above_zero_only_on_the_random_items(
    server: CoinServer, tmp_path: Path
) -> None:
    run = jurist.evaluate(ITEMS, judge_of(server), run_dir=tmp_path / "run", repeats=6)
    records = by_item(run)
    assert all(records[i]["judge_repeats"]["flip_rate"] == 0.0 for i in FIXED)
    assert all(records[i]["judge_repeats"]["flip_rate"] > 0.0 for i in RANDOM)
    assert all(records[i]["judge_score"] == 1.0 for i in FIXED)
    assert server.calls == {item: 6 for item in FIXED + RANDOM}
    # every repeat is the server's own answer, stored apart
    assert all(len(records[i]["judge_repeats"]["scores"]) == 6 for i in FIXED + RANDOM)
    summary = run.summary()
    assert summary.repeats is not None
    assert summary.repeats.unstable_items == len(RANDOM)
    assert summary.repeats.judgments == 6 * len(ITEMS) == summary.calls
    assert summary.repeats.mean_low is not None and summary.repeats.items_low is not None
    # the judge's variance widens the interval beyond that of the items alone
    width = summary.repeats.mean_high - summary.repeats.mean_low  # type: ignore[operator]
    items_width = summary.repeats.items_high - summary.repeats.items_low  # type: ignore[operator]
    assert width > items_width


def test_adaptive_repeats_spend_extra_calls_only_on_the_random_items(
    server: CoinServer, tmp_path: Path
) -> None:
    run = jurist.evaluate(
        ITEMS, judge_of(server), run_dir=tmp_path / "run", repeats=8, adaptive=True
    )
    records = by_item(run)
    assert {i: server.calls[i] for i in FIXED} == {i: 3 for i in FIXED}  # min_repeats only
    extra = {i: server.calls[i] - 3 for i in RANDOM}
    assert all(n >= 0 for n in extra.values()) and sum(extra.values()) > 0
    for item in FIXED + RANDOM:  # stored repeats == the server's calls for the item
        assert records[item]["judge_repeats"]["n"] == server.calls[item]
        assert records[item]["judge_calls"] == server.calls[item]
    for item in RANDOM:  # each stopped when settled, or at the most
        scores = records[item]["judge_repeats"]["scores"]
        plan = jurist.trust.RepeatPlan(repeats=8, adaptive=True)
        assert plan.settled(scores)
        assert len(scores) == 3 or not plan.settled(scores[:-1])
    summary = run.summary()
    assert summary.repeats is not None and summary.repeats.adaptive
    assert summary.repeats.judgments == sum(server.calls.values()) < 8 * len(ITEMS)


def test_a_repeat_is_never_answered_from_the_cache(server: CoinServer, tmp_path: Path) -> None:
    """At temperature 0 the cache keeps answers; each repeat keys apart, so N repeats are N
    calls, and a second run of the same repeats is answered from the cache alone."""
    cache = tmp_path / "cache.sqlite"

    def judge() -> jurist.LLMJudge:
        backend = jurist.get_model("openai:coin", base_url=server.url, api_key="x")
        return jurist.LLMJudge(CachedModel(backend, cache), temperature=0.0, output="text")

    items = ITEMS[:2]
    first = jurist.evaluate(items, judge(), run_dir=tmp_path / "a", repeats=4)
    assert sum(server.calls.values()) == 8 and first.summary().cache_hits == 0
    again = jurist.evaluate(items, judge(), run_dir=tmp_path / "b", repeats=4)
    assert sum(server.calls.values()) == 8  # nothing new reached the server
    assert again.summary().cache_hits == 8
    assert [r["judge_repeats"]["scores"] for r in again.records()] == [
        r["judge_repeats"]["scores"] for r in first.records()
    ]
    # repeat 0 keys as a run without repeats: that run is answered from the cache too
    plain = jurist.evaluate(items, judge(), run_dir=tmp_path / "c")
    assert plain.summary().cache_hits == 2 and sum(server.calls.values()) == 8
