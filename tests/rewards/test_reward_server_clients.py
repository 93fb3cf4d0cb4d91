"""The reward server answers its real clients: OpenRLHF's exact request, per-sample refusals
instead of a 400 for one bad label, strict JSON out, 429s counted as rate limits.

The judge server is :class:`tests.rewards.test_reward_server.ScoreServer` on 127.0.0.1 (``score=X``
-> ``Score: X``; ``garbage`` -> no score; ``boom`` -> HTTP 400), plus ``slow`` -> HTTP 429.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, NoReturn

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from jurist.cli._serve_reward import reward_judge
from jurist.judges import LLMJudge
from jurist.rewards._reward_judge import RewardJudge
from jurist.rewards._server import RewardService
from jurist.rewards._server_app import make_app
from jurist.templates import Template, get_template
from tests.rewards.test_reward_server import API_KEY, ScoreServer, _options


class LimitingServer(ScoreServer):
    """A :class:`ScoreServer` that answers HTTP 429 to a response holding ``slow``."""

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        if any("slow" in str(m["content"]) for m in body["messages"] if m["role"] == "user"):
            error = {"message": "rate limit reached", "type": "rate_limit_exceeded"}
            return web.json_response({"error": error}, status=429)
        return await super()._handle(request)


@pytest.fixture(scope="module")
def llm() -> Iterator[LimitingServer]:
    server = LimitingServer().start()
    yield server
    server.stop()


def _service(
    llm: ScoreServer,
    *,
    template: str | None = None,
    failure_value: float = -1.0,
) -> RewardService:
    rj = reward_judge(_options(llm), template=template, judge=None, failure_value=failure_value)
    return RewardService(rj, concurrency=8)


@contextlib.asynccontextmanager
async def _served(service: RewardService) -> AsyncIterator[str]:
    """The server's base URL on 127.0.0.1 while it runs."""
    server = TestServer(make_app(service), host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()
        await service.aclose()


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"not strict JSON: the token {name} is in the body")


def strict(text: str) -> Any:
    """JSON as a strict parser reads it: ``NaN`` and ``Infinity`` are errors."""
    return json.loads(text, parse_constant=_no_constant)


async def openrlhf_post(url: str, queries: list[str], prompts: list[str], labels: list[Any]) -> Any:
    """OpenRLHF 0.11.2's remote reward call, as ``SingleTurnAgentExecutor._fetch_rewards_via_http``
    makes it (openrlhf/utils/agent.py): one session per try, ``json=`` body, status raised."""
    payload = {"query": queries, "prompts": prompts, "labels": labels}
    timeout = aiohttp.ClientTimeout(total=180)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, json=payload) as response,
    ):
        response.raise_for_status()
        text = await response.text()
    return strict(text)


async def test_openrlhf_with_its_label_key_unset_gets_an_answer(llm: LimitingServer) -> None:
    """OpenRLHF sends ``labels: [""]`` when ``--data.label_key`` is unset: a refusal with a
    reason and the failure value, not a 400 it retries five times and then drops."""
    llm.reset()
    async with _served(_service(llm, failure_value=-1.0)) as url:
        out = await openrlhf_post(f"{url}/get_reward", ["Q: A: score=0.9"], ["Q: A:"], [""])
    assert out["rewards"] == [-1.0] and out["scores"] == [0.0]
    assert out["extra_logs"]["refused"] == [1] and out["extra_logs"]["failed"] == [1]
    assert out["raw_scores"] == [None]
    assert out["errors"] == [
        "usage: labels[0] is an empty string; the 'reward' template needs a reference "
        '(OpenRLHF sends "" when its label key is unset)'
    ]
    # every extra log is a number per sample: OpenRLHF makes a tensor of each
    assert all(isinstance(x, int) for v in out["extra_logs"].values() for x in v)
    assert not llm.calls  # a refused sample is not judged


async def test_each_bad_label_is_refused_on_its_own(llm: LimitingServer) -> None:
    llm.reset()
    labels: list[Any] = ["Paris", "", None, float("nan"), ["Paris"], float("inf"), "nan", 7]
    n = len(labels)
    queries = [f"Q{i}? score=0.{i + 1}" for i in range(n)]
    service = _service(llm, failure_value=-1.0)
    async with _served(service) as url:
        # aiohttp's client writes a float NaN label as the token NaN, as OpenRLHF's does
        out = await openrlhf_post(
            f"{url}/get_reward", queries, [f"Q{i}?" for i in range(n)], labels
        )
        judged = set(llm.calls)
        async with aiohttp.ClientSession() as session:
            items = [
                {"response": "score=0.5", "reference": "x"},
                {"response": "score=0.5"},
                {"response": "score=0.5", "reference": ""},
                {"response": "score=0.5", "reference": {"a": 1}},
            ]
            reply = await session.post(f"{url}/v1/rewards", json={"items": items})
            assert reply.status == 200
            records = strict(await reply.text())["rewards"]
            metrics = await (await session.get(f"{url}/metrics")).text()
    assert out["extra_logs"]["refused"] == [0, 1, 1, 1, 1, 1, 0, 0]
    assert out["rewards"] == [0.1, -1.0, -1.0, -1.0, -1.0, -1.0, 0.7, 0.8]
    errors = out["errors"]
    assert errors[0] is None and errors[6] is None and errors[7] is None
    assert errors[1].startswith("usage: labels[1] is an empty string; the 'reward' template")
    assert errors[2] == "usage: labels[2] is null; the 'reward' template needs a reference"
    assert errors[3] == (
        "usage: labels[3] is NaN (a missing value); the 'reward' template needs a reference"
    )
    assert errors[4] == "usage: labels[4] is a list, not a string or a number"
    assert errors[5] == "usage: labels[5] is inf, not a finite number"
    # the string "nan" is text, as in `jurist judge`; only the number NaN is a missing value
    assert judged == {queries[0][3:], queries[6][3:], queries[7][3:]}
    assert [r["refused"] for r in records] == [False, True, True, True]
    assert records[1]["error"] == (
        "usage: items[1].reference is missing; the 'reward' template needs a reference"
    )
    assert records[3]["error"] == "usage: items[3].reference is an object, not a string or a number"
    assert [r["reward"] for r in records] == [0.5, -1.0, -1.0, -1.0]
    assert 'jurist_reward_refused_total{endpoint="/get_reward"} 5' in metrics
    assert 'jurist_reward_refused_total{endpoint="/v1/rewards"} 3' in metrics
    assert "jurist_reward_judgments_total 4" in metrics  # refusals are not judgments


async def test_a_template_without_a_reference_takes_empty_labels(llm: LimitingServer) -> None:
    llm.reset()
    body = {"query": ["Q? score=4", "Q? score=2"], "prompts": ["Q?", "Q?"], "labels": ["", ""]}
    async with (
        _served(_service(llm, template="likert")) as url,
        aiohttp.ClientSession() as session,
    ):
        reply = await session.post(f"{url}/get_reward", json=body)
        assert reply.status == 200
        out = strict(await reply.text())
    assert out["rewards"] == [0.75, 0.25]
    assert out["extra_logs"]["refused"] == [0, 0] and out["errors"] == [None, None]


def test_an_empty_label_leaves_an_optional_reference_out() -> None:
    likert = get_template("likert")
    with_ref = Template.model_validate(
        {
            **likert.model_dump(),
            "name": "likert_ref",
            "item": likert.item + "{reference}",
            "optional_fields": ("reference",),
            "sections": {"reference": "\n<reference>\n{reference}\n</reference>"},
        }
    )
    service = RewardService(RewardJudge(LLMJudge("mock:j", template=with_ref)))
    body = {"query": ["Q? a", "Q? b", "Q? c"], "prompts": ["Q?"] * 3, "labels": ["", "Paris", 3]}
    items = service.openrlhf_items(body)
    assert [i["reference"] for i in items] == [None, "Paris", "3"]
    assert [i["_refused"] for i in items] == [None, None, None]
    assert "<reference>" not in items[0]["_key"][-1][1]
    assert "<reference>\nParis\n</reference>" in items[1]["_key"][-1][1]


async def test_json_answers_never_carry_nan(llm: LimitingServer) -> None:
    llm.reset()
    # failure_value=None (library only): a failed sample's reward is null, never NaN
    rj = reward_judge(_options(llm), template=None, judge=None, failure_value=0.0)
    service = RewardService(RewardJudge(rj.judge, failure_value=None), concurrency=4)
    async with _served(service) as url, aiohttp.ClientSession() as session:
        body = {"query": ["Q? garbage", "Q? score=0.4"], "labels": ["x", "x"]}
        text = await (await session.post(f"{url}/get_reward", json=body)).text()
        items = {"items": [{"response": "garbage", "reference": "x"}]}
        v1 = await (await session.post(f"{url}/v1/rewards", json=items)).text()
    out = strict(text)
    assert out["rewards"] == [None, 0.4] and out["scores"] == [None, 0.4]
    assert out["raw_scores"] == [None, 0.4]
    assert out["errors"][0].startswith("parse:") and out["errors"][1] is None
    record = strict(v1)["rewards"][0]
    assert record["reward"] is None and record["raw_score"] is None


async def test_metrics_count_429s_as_rate_limited(llm: LimitingServer) -> None:
    llm.reset()
    async with _served(_service(llm)) as url, aiohttp.ClientSession() as session:
        body = {"query": ["slow down", "boom", "garbage", "score=0.3"], "labels": ["x"] * 4}
        out = strict(await (await session.post(f"{url}/get_reward", json=body)).text())
        text = await (await session.get(f"{url}/metrics")).text()
    assert out["errors"][0].startswith("rate_limit:")
    assert out["errors"][1].startswith("api:")
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    kinds = {"rate_limit": "1", "api": "1", "parse": "1", "timeout": "0", "error": "0"}
    for kind, n in kinds.items():
        assert samples[f'jurist_reward_failures_total{{kind="{kind}"}}'] == n, kind
    assert API_KEY not in text
