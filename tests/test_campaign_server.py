"""The fault server of benchmarks/campaign.py: its plan is deterministic and it does what
the plan says, recording every request (the campaign's checks rest on both).

The campaign itself (several ``jurist judge`` processes) takes too long for a test; run it
with ``python benchmarks/campaign.py --rows 2000``.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from _campaign_server import (
    GARBAGE_TEXT,
    CampaignServer,
    expected_rating,
    fault,
    item_plan,
)

SEED = 19


def test_plan_is_deterministic_with_about_thirty_percent_first_faults() -> None:
    n = 10_000
    first = [fault(SEED, i, 1) for i in range(n)]
    item_plan.cache_clear()
    assert first == [fault(SEED, i, 1) for i in range(n)]
    assert 0.27 < sum(k != "ok" for k in first) / n < 0.33
    always = {i for i in range(n) if item_plan(SEED, i).always}
    assert 0.015 < len(always) / n < 0.025
    for i in range(n):
        if i in always:
            assert {fault(SEED, i, a) for a in range(1, 6)} == {item_plan(SEED, i).always}
        else:
            assert fault(SEED, i, 3) == fault(SEED, i, 9) == "ok"
    kinds = {"429", "429ms", "500", "502", "503", "drop", "hang", "garbage", "badjson", "400"}
    assert set(first) >= kinds


def _item_with(first: str) -> int:
    return next(
        i
        for i in range(10_000)
        if fault(SEED, i, 1) == first
        and not item_plan(SEED, i).always
        and fault(SEED, i, 2) == "ok"
    )


def _post(server: CampaignServer, item: int, schema: bool) -> tuple[int | str, Any]:
    body: dict[str, Any] = {
        "model": "campaign",
        "messages": [{"role": "user", "content": f"[campaign item {item}] What is 1 + 1?"}],
    }
    if schema:
        body["response_format"] = {"type": "json_schema", "json_schema": {"schema": {}}}
    req = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer sk-test-key", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)
    except (ConnectionError, urllib.error.URLError) as e:
        return "dropped", repr(e)


@pytest.mark.parametrize("schema", [True, False])
def test_server_follows_the_plan_and_records_each_request(schema: bool) -> None:
    items = {kind: _item_with(kind) for kind in ("429", "garbage", "badjson", "drop", "503")}
    with CampaignServer(SEED, hang=0.2) as server:
        server.set_session(3)
        first = {kind: _post(server, i, schema) for kind, i in items.items()}
        second = {kind: _post(server, i, schema) for kind, i in items.items()}
        stats = server.stats()
    assert first["429"][0] == 429 and first["429"][1]["Retry-After"] == "1"
    assert first["503"][0] == 503
    assert first["drop"][0] == "dropped"
    assert first["garbage"] == (200, GARBAGE_TEXT)
    assert first["badjson"][0] == 200 and json.loads(first["badjson"][1])["verdict"] == 9
    for kind, (status, text) in second.items():
        rating = expected_rating(items[kind])
        assert status == 200
        if schema:
            assert json.loads(text) == {
                "explanation": f"campaign item {items[kind]} rated {rating}.",
                "verdict": rating,
            }
        else:
            assert text.startswith(f"Score: {rating}\nExplanation: campaign item {items[kind]} ")
    assert stats["count"] == 10
    assert stats["item"] == [*items.values(), *items.values()]
    assert stats["attempt"] == [1] * 5 + [2] * 5
    assert stats["session"] == [3] * 10
    assert stats["fault"] == [*items, *["ok"] * 5]
    assert stats["keys"] == {"3": {"sk-test-key": 10}}
    assert stats["models"] == {"3": {"campaign": 10}}
