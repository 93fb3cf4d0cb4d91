"""The openai backend: against a real llama.cpp server and a scripted aiohttp stub, on loopback."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import json
import math
import threading
import time
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from jurist.errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CapabilityError,
    ConfigError,
    InternalServerError,
    ModelError,
    NotFoundError,
    RateLimitError,
)
from jurist.models import get_model
from jurist.models._openai import OpenAIModel, retry_after_seconds
from jurist.types import Message, Request
from tests._llama_fixtures import N_CTX, llama_server, tiny_gguf  # noqa: F401

USER = (Message(role="user", content="Is Paris the capital of France? Answer Yes or No."),)


def _dead_url() -> str:
    from tests.conftest import free_port

    return f"http://127.0.0.1:{free_port()}/v1"


# -- a scripted stub server: the first path segment picks the behaviour ------------------


class StubServer:
    """An aiohttp.web app on 127.0.0.1 in its own thread and loop, for the whole session.

    ``{url}/{scenario}/v1`` is a base URL whose ``chat/completions`` behaves as the scenario
    says: ``ok``, ``status-<code>``, ``ratelimit-seconds``, ``ratelimit-date``,
    ``ratelimit-ms``, ``hang``, ``drop``, ``truncate``, ``badjson``, ``nochoices``.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.hanging = 0  # ``hang`` requests the server still holds (it never answers them)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self.url = ""

    def __enter__(self) -> StubServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application()
        app.router.add_post("/{scenario}/v1/chat/completions", self._chat)
        app.router.add_get("/{scenario}/v1/models", self._models)
        self._runner = web.AppRunner(app, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    def base_url(self, scenario: str) -> str:
        return f"{self.url}/{scenario}/v1"

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "stub"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        scenario = request.match_info["scenario"]
        body = await request.json()
        self.requests.append({"headers": dict(request.headers), "body": body})
        error = {"error": {"message": f"scripted {scenario}", "type": "stub"}}
        if scenario.startswith("status-"):
            return web.json_response(
                error, status=int(scenario[7:]), headers={"x-request-id": "req-1"}
            )
        if scenario == "ratelimit-seconds":
            return web.json_response(error, status=429, headers={"Retry-After": "3"})
        if scenario == "ratelimit-date":
            when = email.utils.formatdate(time.time() + 86400, usegmt=True)  # in a day
            return web.json_response(error, status=429, headers={"Retry-After": when})
        if scenario == "ratelimit-ms":
            headers = {"retry-after-ms": "250", "Retry-After": "9"}
            return web.json_response(error, status=429, headers=headers)
        if scenario == "hang":
            assert self._stopping is not None
            self.hanging += 1
            try:
                await self._stopping.wait()  # until the server stops
            finally:
                self.hanging -= 1
        if scenario == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if scenario == "truncate":
            resp = web.StreamResponse(headers={"Content-Length": "1000"})
            await resp.prepare(request)
            await resp.write(b'{"choices": [')
            assert request.transport is not None
            request.transport.close()
            return resp
        if scenario == "badjson":
            return web.Response(text="<html>proxy error</html>", content_type="text/html")
        if scenario == "nochoices":
            return web.json_response({"object": "chat.completion", "choices": []})
        if scenario == "badshape":
            message = {"role": "assistant", "content": [{"type": "text"}]}
            return web.json_response({"choices": [{"message": message}]})
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "reasoning_content": "hmm",
                        },
                        "finish_reason": "length",
                        "logprobs": {
                            "content": [
                                {
                                    "token": "Yes",
                                    "logprob": -0.1,
                                    "top_logprobs": [
                                        {"token": "Yes", "logprob": -0.1},
                                        {"token": "No", "logprob": None},
                                    ],
                                }
                            ]
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": 12,
                    "completion_tokens": 1,
                    "prompt_tokens_details": {"cached_tokens": 8},
                },
            }
        )


@pytest.fixture(scope="session")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def stub_model(stub: StubServer, scenario: str, **options: Any) -> OpenAIModel:
    return OpenAIModel("stub-model", base_url=stub.base_url(scenario), **options)


# -- request and response mapping -----------------------------------------------------------


async def test_request_body_and_response_mapping(stub: StubServer) -> None:
    model = stub_model(stub, "ok", api_key="sk-secret", headers={"X-Team": "eval"})
    req = Request(
        messages=(Message(role="system", content="Be fair."), *USER),
        max_tokens=3,
        temperature=0.0,
        top_p=0.5,
        seed=7,
        stop=("\n",),
        logprobs=True,
        top_logprobs=2,
        json_schema={"title": "Verdict", "type": "object"},
        extra={"grammar": "root ::= x", "temperature": 0.2},
    )
    out = await model.complete(req)
    await model.aclose()
    sent = stub.requests[-1]
    assert sent["headers"]["Authorization"] == "Bearer sk-secret"
    assert sent["headers"]["X-Team"] == "eval"
    assert sent["body"] == {
        "model": "stub-model",
        "messages": [
            {"role": "system", "content": "Be fair."},
            {"role": "user", "content": USER[0].content},
        ],
        "max_tokens": 3,
        "temperature": 0.2,  # extra wins
        "top_p": 0.5,
        "seed": 7,
        "stop": ["\n"],
        "logprobs": True,
        "top_logprobs": 2,
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "Verdict",
                "schema": {"title": "Verdict", "type": "object"},
                "strict": True,
            },
        },
        "grammar": "root ::= x",
    }
    assert out.text == ""  # content null
    assert out.reasoning == "hmm"
    assert out.finish_reason == "length"
    assert out.model == "stub-model"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (12, 1)
    assert (out.usage.cached_tokens, out.usage.calls) == (8, 1)
    assert out.latency > 0
    assert out.logprobs is not None
    assert [(t.token, t.logprob) for t in out.logprobs] == [("Yes", -0.1)]
    assert [(t.token, t.logprob) for t in out.logprobs[0].top] == [("Yes", -0.1), ("No", -math.inf)]


async def test_minimal_body_and_json_object_mode(stub: StubServer) -> None:
    model = stub_model(
        stub, "ok", json_mode="json_object", max_tokens_param="max_completion_tokens"
    )
    schema = {"type": "object"}
    await model.complete(Request(messages=USER, max_tokens=4, json_schema=schema))
    await model.aclose()
    sent = stub.requests[-1]
    assert "Authorization" not in sent["headers"]
    assert sent["body"] == {
        "model": "stub-model",
        "messages": [{"role": "user", "content": USER[0].content}],
        "max_completion_tokens": 4,
        "response_format": {"type": "json_object", "schema": schema},
    }


async def test_capability_errors_before_any_call(stub: StubServer) -> None:
    before = len(stub.requests)
    with pytest.raises(CapabilityError, match="at most 20"):
        await stub_model(stub, "ok").complete(Request(messages=USER, top_logprobs=21))
    with pytest.raises(CapabilityError, match="logprobs"):
        await stub_model(stub, "ok", logprobs=False).complete(Request(messages=USER, logprobs=True))
    with pytest.raises(CapabilityError, match="JSON schema"):
        await stub_model(stub, "ok", json_mode=None).complete(
            Request(messages=USER, json_schema={"type": "object"})
        )
    assert len(stub.requests) == before


def test_identity_capabilities_and_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = get_model("openai:gpt-4o-mini", max_retries=0)
    assert isinstance(model, OpenAIModel)
    assert model.identity() == {
        "provider": "openai",
        "name": "gpt-4o-mini",
        "base_url": "https://api.openai.com/v1",
    }
    assert "sk-from-env" not in repr(model.identity()) + repr(model)
    assert model._headers["Authorization"] == "Bearer sk-from-env"
    local = get_model(
        "openai:tiny", base_url="http://127.0.0.1:1/v1/", api_key="x", logprobs=False, max_retries=0
    )
    assert local.identity()["base_url"] == "http://127.0.0.1:1/v1"
    caps = local.capabilities
    assert (caps.remote, caps.logprobs, caps.top_logprobs, caps.json_schema) == (
        True,
        False,
        0,
        True,
    )
    with pytest.raises(ConfigError, match="base_url"):
        get_model("openai:x", base_url="127.0.0.1:8000")
    with pytest.raises(ConfigError, match="json_mode"):
        get_model("openai:x", json_mode="grammar")
    with pytest.raises(ConfigError, match="unexpected keyword"):
        get_model("openai:x", temprature=0)


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    assert retry_after_seconds({"Retry-After": "-3"}) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    now = datetime(2026, 11, 26, 6, 0, 0, tzinfo=UTC)  # a fixed clock: exact seconds
    future = email.utils.format_datetime(now + timedelta(seconds=60), usegmt=True)
    assert retry_after_seconds({"Retry-After": future}, now=now) == 60.0
    past = email.utils.format_datetime(now - timedelta(seconds=5), usegmt=True)
    assert retry_after_seconds({"Retry-After": past}, now=now) == 0.0
    naive = "Thu, 26 Nov 2026 06:00:30"  # no zone: read as UTC
    assert retry_after_seconds({"Retry-After": naive}, now=now) == 30.0


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (404, NotFoundError),
        (418, APIStatusError),
        (429, RateLimitError),
        (500, InternalServerError),
        (503, InternalServerError),
    ],
)
async def test_status_mapping(stub: StubServer, code: int, cls: type[APIStatusError]) -> None:
    model = stub_model(stub, f"status-{code}")
    with pytest.raises(cls) as info:
        await model.complete(Request(messages=USER))
    await model.aclose()
    err = info.value
    assert type(err) is cls
    assert err.status_code == code
    assert err.request_id == "req-1"
    assert err.model == "openai:stub-model"
    assert err.body is not None and "scripted" in err.body
    assert f"HTTP {code}: scripted status-{code}" in str(err)
    assert stub.base_url(f"status-{code}") in str(err)
    if code == 401:
        assert "OPENAI_API_KEY" in str(err)


@pytest.mark.parametrize(
    ("scenario", "low", "high"),
    [
        ("ratelimit-seconds", 3.0, 3.0),
        # a date a day ahead; test_retry_after_parsing pins the reading on a fixed clock
        ("ratelimit-date", 3600.0, 86400.0),
        ("ratelimit-ms", 0.25, 0.25),
    ],
)
async def test_rate_limit_retry_after(
    stub: StubServer, scenario: str, low: float, high: float
) -> None:
    model = stub_model(stub, scenario)
    with pytest.raises(RateLimitError) as info:
        await model.complete(Request(messages=USER))
    await model.aclose()
    assert info.value.retry_after is not None
    assert low <= info.value.retry_after <= high


async def test_timeout(stub: StubServer) -> None:
    """The request's 0.2-s timeout overrides the model's 10 s: the error names the deadline
    that fired (the value the client's timer was set to), and it comes while the server
    still holds the request unanswered (an ordering, not a wall-clock bound)."""
    model = stub_model(stub, "hang", timeout=10)
    url = stub.base_url("hang") + "/chat/completions"
    with pytest.raises(APITimeoutError, match=f"no answer from {url} within 0.2 s"):
        await model.complete(Request(messages=USER, timeout=0.2))
    assert stub.hanging >= 1  # never answered: the client gave up on its own deadline
    await model.aclose()


@pytest.mark.parametrize("scenario", ["drop", "truncate"])
async def test_dropped_connection(stub: StubServer, scenario: str) -> None:
    model = stub_model(stub, scenario)
    with pytest.raises(APIConnectionError, match="dropped") as info:
        await model.complete(Request(messages=USER))
    await model.aclose()
    assert not isinstance(info.value, APITimeoutError)
    assert stub.base_url(scenario) in str(info.value)


async def test_connection_refused_names_url() -> None:
    url = _dead_url()
    model = OpenAIModel("x", base_url=url)
    with pytest.raises(APIConnectionError, match="cannot reach " + url) as info:
        await model.complete(Request(messages=USER))
    assert not isinstance(info.value, APITimeoutError)
    with pytest.raises(APIConnectionError, match=f"cannot reach {url}/models"):
        await model.check()
    await model.aclose()


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        ("badjson", "not JSON: '<html>proxy error</html>'"),
        ("nochoices", "no choices"),
        ("badshape", "unexpected shape"),
    ],
)
async def test_malformed_success_body(stub: StubServer, scenario: str, words: str) -> None:
    model = stub_model(stub, scenario)
    with pytest.raises(ModelError, match=words) as info:
        await model.complete(Request(messages=USER))
    await model.aclose()
    assert not isinstance(info.value, APIConnectionError | APIStatusError)


async def test_check_reachable(stub: StubServer) -> None:
    model = stub_model(stub, "ok")
    await model.check()
    await model.prepare()
    await model.aclose()


# -- sessions and event loops ---------------------------------------------------------------


def test_two_event_loops_share_one_model(stub: StubServer) -> None:
    model = stub_model(stub, "ok")
    req = Request(messages=USER)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = asyncio.run(model.complete(req))
        assert model._pools.sessions == {}  # closed when its loop shut down
        second = asyncio.run(model.complete(req))
        gc.collect()
    assert first.usage.calls == second.usage.calls == 1
    assert model._pools.sessions == {}
    assert not [w for w in caught if "nclosed" in str(w.message)], [str(w.message) for w in caught]


async def test_aclose_closes_the_pool_and_reopens_on_use(stub: StubServer) -> None:
    model = stub_model(stub, "ok")
    await asyncio.gather(*(model.complete(Request(messages=USER)) for _ in range(20)))
    session = next(iter(model._pools.sessions.values()))
    await model.aclose()
    assert session.closed and model._pools.sessions == {}
    await model.complete(Request(messages=USER))
    await model.aclose()


async def test_aclose_closes_pools_of_other_running_loops(stub: StubServer) -> None:
    model = stub_model(stub, "ok")
    await model.complete(Request(messages=USER))
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(model.complete(Request(messages=USER)), other).result(5)
        sessions = list(model._pools.sessions.values())
        assert len(sessions) == 2
        await model.aclose()
        assert all(s.closed for s in sessions) and model._pools.sessions == {}
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(5)
        other.close()


# -- a real llama.cpp server ---------------------------------------------------------------


@pytest.fixture(scope="session")
def hf_tiny(tiny_model_dir: Path) -> Any:
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    return tok, model


def llama_model(base_url: str, **options: Any) -> OpenAIModel:
    options.setdefault("json_mode", "json_object")
    return OpenAIModel("tiny", base_url=base_url, api_key="unused", **options)


@pytest.mark.slow
async def test_llama_chat_completion(llama_server: str, hf_tiny: Any) -> None:  # noqa: F811
    tok, _ = hf_tiny
    model = llama_model(llama_server)
    await model.check()
    out = await model.complete(Request(messages=USER, max_tokens=6, temperature=0))
    await model.aclose()
    hf_ids = tok.apply_chat_template([m.model_dump() for m in USER], add_generation_prompt=True)
    if not isinstance(hf_ids, list):
        hf_ids = hf_ids["input_ids"]
    assert out.usage.prompt_tokens == len(hf_ids)  # the GGUF tokenises like the HF tokenizer
    assert 1 <= out.usage.completion_tokens <= 6
    assert out.finish_reason in ("stop", "length")
    assert isinstance(out.text, str) and out.latency > 0
    assert out.model == "tiny"


@pytest.mark.slow
async def test_llama_logprobs_match_transformers(llama_server: str, hf_tiny: Any) -> None:  # noqa: F811
    import torch

    tok, hf = hf_tiny
    model = llama_model(llama_server)
    out = await model.complete(
        Request(messages=USER, max_tokens=3, temperature=0, logprobs=True, top_logprobs=5)
    )
    await model.aclose()
    assert out.logprobs is not None and len(out.logprobs) == out.usage.completion_tokens
    assert all(len(t.top) == 5 for t in out.logprobs)
    first = out.logprobs[0]
    ids = tok.apply_chat_template(
        [m.model_dump() for m in USER], add_generation_prompt=True, return_tensors="pt"
    )
    if not isinstance(ids, torch.Tensor):
        ids = ids["input_ids"]
    with torch.no_grad():
        logprobs = torch.log_softmax(hf(ids).logits[0, -1].float(), -1)
    top = torch.topk(logprobs, 5)
    expected = [
        (tok.decode([i]), v) for v, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)
    ]
    got = [(t.token, t.logprob) for t in first.top]
    assert [t for t, _ in got] == [t for t, _ in expected]
    for (_, a), (_, b) in zip(got, expected, strict=True):
        assert a == pytest.approx(b, abs=1e-3)
    assert first.token == expected[0][0]  # greedy
    assert first.logprob == pytest.approx(expected[0][1], abs=1e-3)


@pytest.mark.slow
async def test_llama_json_schema_output(llama_server: str) -> None:  # noqa: F811
    schema = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
            "verdict": {"type": "string", "enum": ["Correct", "Incorrect"]},
        },
        "required": ["score", "verdict"],
    }
    model = llama_model(llama_server)
    out = await model.complete(
        Request(messages=USER, max_tokens=60, temperature=0, json_schema=schema)
    )
    await model.aclose()
    data = json.loads(out.text)
    assert data["score"] in (1, 2, 3, 4, 5)
    assert data["verdict"] in ("Correct", "Incorrect")


@pytest.mark.slow
async def test_llama_error_status(llama_server: str) -> None:  # noqa: F811
    model = llama_model(llama_server)
    # past the server's context: at least 8 tokens a sentence (every digit is a token)
    too_long = (Message(role="user", content="Score: 1 2 3 4 5. " * (N_CTX // 4)),)
    with pytest.raises(BadRequestError) as info:
        await model.complete(Request(messages=too_long, max_tokens=4))
    assert info.value.status_code == 400
    missing = llama_model(llama_server.removesuffix("/v1") + "/nope/v1")
    with pytest.raises(NotFoundError):
        await missing.complete(Request(messages=USER, max_tokens=1))
    await model.aclose()
    await missing.aclose()
