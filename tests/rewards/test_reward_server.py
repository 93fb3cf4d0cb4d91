"""``jurist serve-reward``: the reward server against a local OpenAI-compatible judge server.

The judge server (on 127.0.0.1, in a thread) answers from the response under judgment:
``score=X`` -> ``Score: X``; ``garbage`` -> a reply with no score; ``boom`` -> HTTP 400;
``wait=S`` -> the answer after S seconds. It counts calls per response and the most calls
in flight at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jurist.cli import main
from jurist.cli._model_options import ModelOptions
from jurist.cli._serve_reward import reward_judge
from jurist.judges import LLMJudge
from jurist.rewards import _server_app
from jurist.rewards._reward_judge import RewardJudge
from jurist.rewards._server import RewardService
from jurist.rewards._server_app import make_app
from jurist.rewards._server_bodies import MAX_SAMPLES
from tests._fault_server import _completion
from tests._loopback import Loopback

API_KEY = "sk-test-serve-reward-4a7b9c"
_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.S)


class ScoreServer(Loopback):
    """An OpenAI-compatible chat server whose answer depends on the judged response.

    ``most_running`` is the most calls at once since the last :meth:`reset`, counting only
    the calls that arrived since then (a call an earlier test left waiting is not one)."""

    def __init__(self) -> None:
        super().__init__(self._handle)
        self.calls: collections.Counter[str] = collections.Counter()
        self.most_running = 0
        self._running: collections.Counter[int] = collections.Counter()  # by generation
        self._generation = 0
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.most_running = 0
            self._generation += 1

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert request.headers.get("Authorization") == f"Bearer {API_KEY}"
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        found = _RESPONSE.search(user)
        response = found.group(1) if found else user
        with self._lock:
            generation = self._generation
            self.calls[response] += 1
            self._running[generation] += 1
            self.most_running = max(self.most_running, self._running[generation])
        try:
            wait = re.search(r"wait=([\d.]+)", response)
            if wait:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), float(wait.group(1)))
            if "boom" in response:
                error = {"message": "the judge refuses this one", "type": "invalid_request"}
                return web.json_response({"error": error}, status=400)
            score = re.search(r"score=(-?[\d.]+)", response)
            text = f"Score: {score.group(1)}" if score else "I cannot tell."
            return web.json_response(_completion(body, text))
        finally:
            with self._lock:
                self._running[generation] -= 1


@pytest.fixture(scope="module")
def llm() -> Iterator[ScoreServer]:
    server = ScoreServer().start()
    yield server
    server.stop()


def _options(llm: ScoreServer, *, timeout: float = 5.0, concurrency: int = 8) -> ModelOptions:
    return ModelOptions(
        models=("openai:judge",),
        base_url=llm.url,
        api_key=API_KEY,
        timeout=timeout,
        max_retries=0,
        rpm=None,
        tpm=None,
        cache=False,
        cache_path=None,
        json_mode="none",
        concurrency=concurrency,
        temperature=0.0,
    )


def _service(
    llm: ScoreServer,
    *,
    timeout: float = 5.0,
    concurrency: int = 8,
    failure_value: float = -1.0,
    retries: int = 0,
) -> RewardService:
    options = _options(llm, timeout=timeout, concurrency=concurrency)
    rj = reward_judge(
        options, template=None, judge=None, failure_value=failure_value, retries=retries
    )
    return RewardService(rj, concurrency=concurrency)


@contextlib.asynccontextmanager
async def _client(service: RewardService) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(service), host="127.0.0.1")) as client:
        yield client
    await service.aclose()


async def test_get_reward_scores_some_and_flags_failures(llm: ScoreServer) -> None:
    llm.reset()
    prompts = ["Q1 A:", "Q2 A:", "Q3 A:", "Q4 A:", "Q5 A:"]
    responses = [" score=0.9", " garbage", " boom", " score=1.03", " score=0.2"]
    body = {
        "query": [p + r for p, r in zip(prompts, responses, strict=True)],
        "prompts": prompts,
        "labels": ["Paris", "Paris", 42, "Paris", "Paris"],
    }
    async with _client(_service(llm, failure_value=-1.0)) as client:
        reply = await client.post("/get_reward", json=body)
        assert reply.status == 200
        out = await reply.json()
    assert out["rewards"] == [0.9, -1.0, -1.0, 1.0, 0.2]
    assert out["scores"] == [0.9, 0.0, 0.0, 1.0, 0.2]
    logs = out["extra_logs"]
    assert logs["parse_failed"] == [0, 1, 0, 0, 0]
    assert logs["failed"] == [0, 1, 1, 0, 0]
    assert logs["clamped"] == [0, 0, 0, 1, 0]
    assert logs["timed_out"] == [0, 0, 0, 0, 0]
    assert logs["refused"] == [0, 0, 0, 0, 0]
    assert out["raw_scores"] == [0.9, None, None, 1.03, 0.2]
    assert out["errors"][0] is None and out["errors"][1].startswith("parse:")
    assert out["errors"][2].startswith("api:")
    # every extra log is one number per sample (OpenRLHF makes a tensor of each)
    assert all(len(v) == 5 and all(isinstance(x, int | float) for x in v) for v in logs.values())
    # the judge saw the query minus the prompt
    assert set(llm.calls) == set(responses)


async def test_v1_rewards_records(llm: ScoreServer) -> None:
    items = [
        {"response": "score=0.4", "reference": "Paris", "prompt": "Capital?"},
        {"response": "garbage", "reference": "Paris"},
        {"response": "boom", "reference": "Paris", "prompt": None},
    ]
    async with _client(_service(llm, failure_value=0.0)) as client:
        reply = await client.post("/v1/rewards", json={"items": items})
        assert reply.status == 200
        records = (await reply.json())["rewards"]
    ok, unreadable, refused = records
    assert (ok["reward"], ok["raw_score"], ok["error"], ok["parse_failed"]) == (
        0.4,
        0.4,
        None,
        False,
    )
    assert unreadable["reward"] == 0.0 and unreadable["raw_score"] is None
    assert unreadable["parse_failed"] is True and unreadable["error"].startswith("parse:")
    assert refused["reward"] == 0.0 and refused["parse_failed"] is False
    assert refused["error"].startswith("api:")
    assert all(
        set(r)
        == {"reward", "raw_score", "judge_output", "clamped", "parse_failed", "error", "refused"}
        for r in records
    )


async def test_mock_model_judges_v1_rewards() -> None:
    judge = LLMJudge("mock:j", outputs=["Score: 0.25", "no idea"], template="reward")
    service = RewardService(RewardJudge(judge, failure_value=0.5), concurrency=1)
    items = [{"response": "a", "reference": "x"}, {"response": "b", "reference": "x"}]
    async with _client(service) as client:
        records = (await (await client.post("/v1/rewards", json={"items": items})).json())[
            "rewards"
        ]
    assert [r["reward"] for r in records] == [0.25, 0.5]
    assert records[1]["parse_failed"] is True


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        ("/get_reward", "{not json", "body: not valid JSON"),
        ("/get_reward", [1, 2], "body: expected a JSON object"),
        ("/get_reward", {"prompts": ["p"]}, "query: missing"),
        ("/get_reward", {"query": "one"}, "query: expected a list"),
        ("/get_reward", {"query": ["a", 3], "labels": ["x", "y"]}, "query[1]: expected a string"),
        ("/get_reward", {"query": ["a", "b"], "labels": ["x"]}, "labels: has 1 items but query"),
        ("/get_reward", {"query": ["a"], "prompts": ["p", "q"], "labels": ["x"]}, "prompts: has 2"),
        ("/get_reward", {"query": ["a"], "labels": "x"}, "labels: expected a list"),
        ("/get_reward", {"query": ["a"], "prompts": [3]}, "prompts[0]: expected a string"),
        ("/v1/rewards", {"item": []}, "body: unknown field(s) ['item']"),
        ("/v1/rewards", {"items": {}}, "items: expected a list"),
        ("/v1/rewards", {"items": ["x"]}, "items[0]: expected an object"),
        ("/v1/rewards", {"items": [{"response": "a", "reference": "r"}, {}]}, "items[1].response"),
        ("/v1/rewards", {"items": [{"response": "a", "reference": "r", "x": 1}]}, "['x']"),
        ("/v1/rewards", {"items": [{"response": "a", "reference": "r", "prompt": 5}]}, ".prompt"),
    ],
)
async def test_malformed_body_is_a_400_naming_the_field(
    llm: ScoreServer, path: str, body: Any, named: str
) -> None:
    llm.reset()
    data = body if isinstance(body, str) else json.dumps(body)
    async with _client(_service(llm)) as client:
        reply = await client.post(path, data=data, headers={"Content-Type": "application/json"})
        assert reply.status == 400
        error = (await reply.json())["error"]
    assert named in error
    assert not llm.calls  # nothing of a bad body is judged


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("path", "data"),
    [
        # issue 31, defect 2: 1,100 deep was an HTTP 500 and a RecursionError in the log
        ("/get_reward", '{"query": ["a"], "labels": [' + _nested(1100) + "]}"),
        # NaN sends the body to Python's json (orjson refuses the token) before the depth
        ("/get_reward", '{"query": ["a"], "labels": [NaN, ' + _nested(1100) + "]}"),
        ("/v1/rewards", '{"items": ' + _nested(100_000) + "}"),
        # one past the bound: under every parser's limit, refused all the same
        ("/slime", '{"response": "a", "label": ' + _nested(64) + "}"),
    ],
    ids=["1100-deep", "1100-deep-with-nan", "100000-deep", "65-deep"],
)
async def test_a_body_nested_past_the_bound_is_a_400_and_no_traceback(
    llm: ScoreServer, path: str, data: str, caplog: pytest.LogCaptureFixture
) -> None:
    llm.reset()
    caplog.set_level(logging.DEBUG)
    async with _client(_service(llm)) as client:
        reply = await client.post(path, data=data, headers={"Content-Type": "application/json"})
        assert reply.status == 400
        error = (await reply.json())["error"]
        # the server is fine afterwards
        fine = await client.post("/v1/rewards", json={"items": []})
        assert fine.status == 200
    assert error == (
        "body: JSON nested deeper than 64 levels (arrays and objects); "
        "no documented body is more than 4 deep"
    )
    assert not llm.calls
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_label_nested_to_the_bound_is_refused_on_its_own(llm: ScoreServer) -> None:
    """64 levels (the object, the labels list, a label 62 deep) is read: the label is
    refused as a sample, the request answered."""
    llm.reset()
    data = '{"query": ["a"], "labels": [' + _nested(62) + "]}"
    async with _client(_service(llm)) as client:
        reply = await client.post("/get_reward", data=data)
        assert reply.status == 200
        body = await reply.json()
    assert body["extra_logs"]["refused"] == [1]
    assert body["errors"][0].startswith("usage: labels[0] is a list")


async def test_more_samples_than_the_bound_is_a_400_before_any_judgment(llm: ScoreServer) -> None:
    llm.reset()
    n = MAX_SAMPLES + 1
    async with _client(_service(llm)) as client:
        for path, body in (
            ("/get_reward", {"query": ["score=0.5"] * n}),
            ("/v1/rewards", {"items": [{"response": "score=0.5", "reference": "r"}] * n}),
        ):
            reply = await client.post(path, json=body)
            assert reply.status == 400
            error = (await reply.json())["error"]
            field = "query" if path == "/get_reward" else "items"
            assert error == (
                f"{field}: {n} samples in one request; the server judges at most "
                f"{MAX_SAMPLES:,} per request (split the batch)"
            )
    assert not llm.calls


async def test_a_body_past_the_size_bound_is_a_413_with_a_json_error(
    llm: ScoreServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The size bound (256 MiB) lowered to 1 MiB for the test: the body is not read past
    it, and the answer says so in the body every error has."""
    monkeypatch.setattr(_server_app, "MAX_BODY_BYTES", 1024 * 1024)
    llm.reset()
    caplog.set_level(logging.DEBUG)
    data = json.dumps({"query": ["x" * (1024 * 1024)]})
    async with _client(_service(llm)) as client:
        reply = await client.post("/get_reward", data=data)
        assert reply.status == 413
        error = (await reply.json())["error"]
        fine = await client.post("/v1/rewards", json={"items": []})
        assert fine.status == 200
    assert error == (
        "body: longer than 1,048,576 bytes, the most the server reads (send smaller batches)"
    )
    assert not llm.calls
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_identical_items_in_flight_are_judged_once(llm: ScoreServer) -> None:
    llm.reset()
    same = {"query": ["Q: wait=0.3 score=0.7"], "prompts": ["Q:"], "labels": ["x"]}
    service = _service(llm)
    async with _client(service) as client:
        replies = await asyncio.gather(*(client.post("/get_reward", json=same) for _ in range(6)))
        bodies = [await r.json() for r in replies]
        many = {"items": [{"response": "wait=0.3 score=0.3", "reference": "x"}] * 4}
        records = (await (await client.post("/v1/rewards", json=many)).json())["rewards"]
    assert [b["rewards"] for b in bodies] == [[0.7]] * 6
    assert [r["reward"] for r in records] == [0.3] * 4
    assert llm.calls == {" wait=0.3 score=0.7": 1, "wait=0.3 score=0.3": 1}
    assert service.metrics.judgments == 2 and service.metrics.coalesced == 8


async def test_requests_share_one_concurrency_bound(llm: ScoreServer) -> None:
    llm.reset()
    service = _service(llm, concurrency=2)

    def body(k: int) -> dict[str, Any]:
        return {
            "items": [{"response": f"wait=0.1 score=0.{k}{j}", "reference": "x"} for j in (1, 2)]
        }

    async with _client(service) as client:
        replies = await asyncio.gather(
            *(client.post("/v1/rewards", json=body(k)) for k in (1, 2, 3))
        )
        assert [r.status for r in replies] == [200, 200, 200]
    assert sum(llm.calls.values()) == 6
    assert llm.most_running == 2


async def test_a_judgment_past_the_timeout_gets_the_failure_value(llm: ScoreServer) -> None:
    llm.reset()
    # 2 s: well past a quick answer on a loaded machine; the slow one waits 60 s
    body = {"query": ["wait=60 score=0.9", "score=0.6"], "labels": ["x", "x"]}
    async with _client(_service(llm, timeout=2.0, failure_value=-0.5)) as client:
        out = await (await client.post("/get_reward", json=body)).json()
        records = (
            await (
                await client.post(
                    "/v1/rewards", json={"items": [{"response": "wait=60 x", "reference": "r"}]}
                )
            ).json()
        )["rewards"]
    assert out["rewards"] == [-0.5, 0.6]
    assert out["extra_logs"]["timed_out"] == [1, 0]
    assert out["extra_logs"]["failed"] == [1, 0]
    assert records[0]["reward"] == -0.5 and records[0]["error"].startswith("timeout:")
    assert records[0]["parse_failed"] is False


async def test_the_timeout_bounds_the_whole_judgment_with_its_re_asks(llm: ScoreServer) -> None:
    llm.reset()
    # each call (0.3 s) is well within the timeout, however loaded the machine; the 20
    # re-asks of the unreadable verdict (6 s at least) are not
    item = {"response": "wait=0.3 garbage", "reference": "r"}
    async with _client(_service(llm, timeout=2.0, retries=20)) as client:
        records = (await (await client.post("/v1/rewards", json={"items": [item]})).json())[
            "rewards"
        ]
    assert records[0]["reward"] == -1.0
    assert records[0]["error"].startswith("timeout:")
    assert 2 <= llm.calls["wait=0.3 garbage"] < 21


_SAMPLE = re.compile(r'^[a-z_]+(\{([a-z_]+="[^"]*",?)*\})? (-?[0-9][0-9.e+-]*|\+Inf|NaN)$')


async def test_metrics_and_health(llm: ScoreServer) -> None:
    service = _service(llm)
    async with _client(service) as client:
        await client.post(
            "/get_reward", json={"query": ["score=0.5", "garbage"], "labels": ["x", "x"]}
        )
        await client.post("/get_reward", json={"query": 1})
        health = await (await client.get("/health")).json()
        reply = await client.get("/metrics")
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await reply.text()
    assert health["status"] == "ok" and health["model"] == "openai:judge"
    assert health["template"] == "reward"
    assert API_KEY not in json.dumps(health) and API_KEY not in text
    samples: dict[str, float] = {}
    typed: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("# HELP "):
            continue
        assert _SAMPLE.match(line), line
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
        base = re.sub(r"(_bucket|_sum|_count)$", "", name.split("{")[0])
        assert base in typed, line
    assert samples['jurist_reward_requests_total{endpoint="/get_reward",status="200"}'] == 1
    assert samples['jurist_reward_requests_total{endpoint="/get_reward",status="400"}'] == 1
    assert samples['jurist_reward_items_total{endpoint="/get_reward"}'] == 2
    assert samples["jurist_reward_judgments_total"] == 2
    assert samples['jurist_reward_failures_total{kind="parse"}'] == 1
    assert samples["jurist_reward_judgment_seconds_count"] == 2
    assert samples['jurist_reward_judgment_seconds_bucket{le="+Inf"}'] == 2
    assert samples["jurist_reward_in_flight"] == 0


async def test_a_catalog_judge_with_its_model_replaced(llm: ScoreServer, tmp_path: Path) -> None:
    from jurist import catalog

    catalog.add(LLMJudge("mock:j", template="likert"), "judges.likert.mine", root=tmp_path)
    options = _options(llm)
    rj = reward_judge(options, template=None, judge="judges.likert.mine", catalog_dir=tmp_path)
    assert rj.judge.model.spec == "openai:judge" and rj.judge.template.name == "likert"
    body = {"query": ["Q? score=4", "Q? garbage"], "prompts": ["Q?", "Q?"]}  # no labels needed
    async with _client(RewardService(rj)) as client:
        out = await (await client.post("/get_reward", json=body)).json()
    assert out["rewards"] == [0.75, 0.0]
    assert out["raw_scores"][0] == 4.0
    assert out["extra_logs"]["parse_failed"] == [0, 1]


def test_template_and_judge_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve-reward", "--model", "mock:j", "--template", "reward", "--judge", "x"])
    assert code == 2
    assert "--template and --judge exclude each other" in capsys.readouterr().err


def _start_server(llm: ScoreServer, *extra: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "JURIST_API_KEY": API_KEY}
    command = [sys.executable, "-m", "jurist", "serve-reward", "--model", "openai:judge"]
    command += ["--base-url", llm.url, "--port", "0", "--json-mode", "none", *extra]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"serving rewards on (http://\S+) ", line)
    if found is None:
        proc.kill()
        raise AssertionError(f"no URL in {line!r}; stderr: {proc.communicate()[1]}")
    return proc, found.group(1)


async def test_sigterm_finishes_requests_in_flight(llm: ScoreServer, tmp_path: Path) -> None:
    llm.reset()
    proc, url = _start_server(llm, "--timeout", "10")
    try:
        assert url.startswith("http://127.0.0.1:")  # the default bind address
        body = {"query": ["Q: wait=0.6 score=0.6"], "prompts": ["Q:"], "labels": ["x"]}
        async with aiohttp.ClientSession() as session:
            pending = asyncio.ensure_future(session.post(f"{url}/get_reward", json=body))
            while not llm.calls:  # the judgment is under way
                await asyncio.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            reply = await pending
            assert reply.status == 200
            assert (await reply.json())["rewards"] == [0.6]
        out, err = await asyncio.to_thread(proc.communicate, timeout=20)
        assert proc.returncode == 0, err
        assert "reward server stopped" in err
        assert API_KEY not in out + err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_binds_loopback_by_default() -> None:
    import inspect

    from jurist.cli._serve_reward import serve_reward
    from jurist.rewards._server_app import serve

    assert inspect.signature(serve).parameters["host"].default == "127.0.0.1"
    assert inspect.signature(serve_reward).parameters["host"].default == "127.0.0.1"
