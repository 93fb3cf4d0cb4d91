"""The litellm backend, for real: ``litellm.acompletion`` against OpenAI-compatible servers
on 127.0.0.1 (route ``openai/<name>`` with ``api_base``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp import web

# LiteLLM fetches its model cost map from GitHub at import unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from jurist._sync import run_sync
from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CapabilityError,
    ConfigError,
    InternalServerError,
    ModelError,
    RateLimitError,
)
from jurist.models import RetryModel, get_model
from jurist.models._retry import is_transient
from jurist.types import Completion, Message, Request
from tests._fault_server import FaultServer, drop, hang, status
from tests._loopback import Loopback

pytest.importorskip("litellm")

from jurist.models._litellm import LiteLLMModel, build_litellm

# LiteLLM's own types warn once when pydantic first builds them; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Item 'summary' on TypedDict:UserWarning")

KEY = "sk-litellm-test-secret-4242"
USER = (Message(role="user", content="Is Paris the capital of France?"),)
ROUTE = "openai/tiny"


def _run(model: Any, request: Request) -> Completion:
    result: Completion = run_sync(model.complete(request))
    return result


class Recorder(Loopback):
    """An OpenAI-compatible server whose answer a test sets; it records bodies and headers."""

    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        super().__init__(self._handle, shutdown_timeout=0.5)
        self.answer = answer
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        return web.json_response(self.answer(body))


def _answer(text: str, **choice: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "tiny-served",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": choice.pop("finish_reason", "stop"),
                **choice,
            }
        ],
        "usage": {
            "prompt_tokens": 40,
            "completion_tokens": 3,
            "total_tokens": 43,
            "prompt_tokens_details": {"cached_tokens": 32},
        },
    }


@pytest.fixture
def faults() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server


def _model(url: str, **options: Any) -> LiteLLMModel:
    return build_litellm(ROUTE, api_base=url, api_key=KEY, **options)


# -- the answer ---------------------------------------------------------------------------


def test_text_usage_finish_reason_and_model() -> None:
    with Recorder(lambda body: _answer("Yes, it is.", finish_reason="length")) as server:
        model = _model(server.url)
        out = _run(model, Request(messages=USER, max_tokens=7, temperature=0.0, seed=3))
    assert out.text == "Yes, it is."
    assert out.finish_reason == "length"
    assert out.model == "tiny-served"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (40, 3)
    assert out.usage.cached_tokens == 32 and out.usage.calls == 1
    assert out.latency > 0
    sent = server.bodies[0]
    assert sent["model"] == "tiny"
    assert sent["messages"] == [{"role": "user", "content": USER[0].content}]
    assert (sent["max_tokens"], sent["temperature"], sent["seed"]) == (7, 0.0, 3)
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"


def test_logprobs_and_top_logprobs_are_mapped() -> None:
    logprobs = {
        "content": [
            {
                "token": "Yes",
                "logprob": -0.1,
                "bytes": None,
                "top_logprobs": [
                    {"token": "Yes", "logprob": -0.1, "bytes": None},
                    {"token": "No", "logprob": -2.4, "bytes": None},
                ],
            }
        ]
    }
    with Recorder(lambda body: _answer("Yes", logprobs=logprobs)) as server:
        model = _model(server.url)
        assert model.capabilities.logprobs and model.capabilities.top_logprobs == 20
        out = _run(model, Request(messages=USER, logprobs=True, top_logprobs=2))
    assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 2
    assert out.logprobs is not None and len(out.logprobs) == 1
    first = out.logprobs[0]
    assert (first.token, first.logprob) == ("Yes", -0.1)
    assert [(t.token, t.logprob) for t in first.top] == [("Yes", -0.1), ("No", -2.4)]


def test_json_schema_arrives_as_response_format() -> None:
    schema = {
        "title": "verdict_v1",
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["Correct", "Incorrect"]}},
        "required": ["verdict"],
    }
    with Recorder(lambda body: _answer('{"verdict": "Correct"}')) as server:
        model = _model(server.url)
        assert model.capabilities.json_schema
        out = _run(
            model, Request(messages=USER, json_schema=schema, extra={"grammar": "root ::= x"})
        )
    assert out.text == '{"verdict": "Correct"}'
    assert server.bodies[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict_v1", "schema": schema, "strict": True},
    }
    assert server.bodies[0]["grammar"] == "root ::= x"  # request.extra goes into the body


def test_an_answer_without_choices_is_a_model_error() -> None:
    empty = {"id": "x", "object": "chat.completion", "choices": []}
    with Recorder(lambda body: empty) as server, pytest.raises(ModelError) as info:
        _run(_model(server.url), Request(messages=USER))
    assert str(info.value).startswith(f"litellm:{ROUTE}: ")
    assert KEY not in str(info.value)


# -- errors ---------------------------------------------------------------------------------


def test_429_carries_retry_after_and_retry_model_waits_then_succeeds(
    faults: FaultServer,
) -> None:
    faults.script(status(429, retry_after=2))
    with pytest.raises(RateLimitError) as info:
        _run(_model(faults.url), Request(messages=USER))
    assert info.value.retry_after == 2.0 and info.value.status_code == 429
    assert str(info.value).startswith(f"litellm:{ROUTE}: ") and "HTTP 429" in str(info.value)
    assert faults.requests == 1  # LiteLLM itself did not retry

    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await asyncio.sleep(seconds)

    faults.script(status(429, retry_after_ms=30))
    model = RetryModel(_model(faults.url), max_retries=2, sleep=sleep)
    out = _run(model, Request(messages=USER))
    assert out.text == f"echo: {USER[0].content}" and out.attempts == 2
    assert waits == [pytest.approx(0.03)]
    assert faults.requests == 3


def test_500_is_transient_and_retried(faults: FaultServer) -> None:
    faults.script(status(500), status(503))
    with pytest.raises(InternalServerError) as info:
        _run(_model(faults.url), Request(messages=USER))
    assert is_transient(info.value) and info.value.status_code == 500
    assert faults.requests == 1  # neither LiteLLM nor the OpenAI SDK under it retried
    model = RetryModel(_model(faults.url), max_retries=2, backoff_base=0.001)
    out = _run(model, Request(messages=USER))
    assert out.attempts == 2 and faults.requests == 3


@pytest.mark.parametrize(("code", "transient"), [(408, True), (409, True), (404, False)])
def test_status_classes(faults: FaultServer, code: int, transient: bool) -> None:
    faults.script(status(code))
    with pytest.raises(ModelError) as info:
        _run(_model(faults.url), Request(messages=USER))
    assert getattr(info.value, "status_code", None) == code
    assert is_transient(info.value) is transient


def test_400_is_not_retried_and_names_the_spec(faults: FaultServer) -> None:
    faults.script(status(400))
    model = RetryModel(_model(faults.url), max_retries=3, backoff_base=0.001)
    with pytest.raises(BadRequestError) as info:
        _run(model, Request(messages=USER))
    assert faults.requests == 1 and not is_transient(info.value)
    assert str(info.value).startswith(f"litellm:{ROUTE}: {faults.url} answered HTTP 400")


def test_a_server_that_never_answers_times_out(faults: FaultServer) -> None:
    faults.script(hang(5.0))
    with pytest.raises(APITimeoutError) as info:
        _run(_model(faults.url, timeout=0.3), Request(messages=USER))
    assert "within 0.3 s" in str(info.value) and is_transient(info.value)
    # Request.timeout overrides the model's
    faults.script(hang(5.0))
    with pytest.raises(APITimeoutError, match=r"within 0\.2 s"):
        _run(_model(faults.url, timeout=30), Request(messages=USER, timeout=0.2))


def test_refused_and_dropped_connections_are_connection_errors(faults: FaultServer) -> None:
    from tests.conftest import free_port

    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(APIConnectionError) as info:
        _run(_model(dead), Request(messages=USER))
    assert not isinstance(info.value, APITimeoutError) and is_transient(info.value)
    assert f"cannot reach {dead}" in str(info.value)
    faults.script(drop())
    with pytest.raises(APIConnectionError):
        _run(_model(faults.url), Request(messages=USER))


def test_a_call_the_sdk_refuses_to_send_is_not_a_server_error(
    faults: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No key for an openai/ route: LiteLLM reports the SDK's refusal as HTTP 500, but
    # nothing was sent, so it is neither a server error nor worth a retry.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = RetryModel(build_litellm(ROUTE, api_base=faults.url), backoff_base=0.001)
    with pytest.raises(ModelError) as info:
        _run(model, Request(messages=USER))
    assert type(info.value) is ModelError and not is_transient(info.value)
    assert "did not send the request" in str(info.value) and "api_key" in str(info.value)
    assert faults.requests == 0 and info.value.attempts == 1


def test_the_key_never_shows(faults: FaultServer) -> None:
    model = get_model(f"litellm:{ROUTE}", base_url=faults.url, api_key=KEY)
    assert isinstance(model, RetryModel)  # remote: default transport retries, like openai
    assert model.max_retries == 2
    assert model.identity() == {"provider": "litellm", "name": ROUTE, "api_base": faults.url}
    assert KEY not in repr(model) and KEY not in str(model.identity())
    in_url = build_litellm(ROUTE, api_base="http://me:url-secret-77@127.0.0.1:9/v1")
    assert "url-secret-77" not in str(in_url.identity())
    faults.script(status(401))
    with pytest.raises(AuthenticationError) as info:
        _run(model, Request(messages=USER))
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    assert KEY not in (info.value.body or "")


def test_a_key_echoed_by_the_server_is_scrubbed() -> None:
    echo = {"error": {"message": f"key {KEY} is not valid", "type": "invalid"}}

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(echo, status=400)

    with Loopback(handler) as server, pytest.raises(BadRequestError) as info:
        _run(_model(server.url), Request(messages=USER))
    assert KEY not in str(info.value) and "***" in str(info.value)


# -- capabilities and options ------------------------------------------------------------


def test_capabilities_come_from_the_route() -> None:
    claude = build_litellm("anthropic/claude-sonnet-4-20250514", api_key="k")
    caps = claude.capabilities
    assert caps.remote and not caps.logprobs and caps.top_logprobs == 0 and caps.json_schema
    ollama = build_litellm("ollama/llama3")
    assert not ollama.capabilities.json_schema and not ollama.capabilities.logprobs
    forced = build_litellm("ollama/llama3", json_schema=True, logprobs=False)
    assert forced.capabilities.json_schema


def test_asking_a_route_for_what_it_cannot_do_fails_up_front() -> None:
    claude = build_litellm("anthropic/claude-sonnet-4-20250514", api_key="k")
    with pytest.raises(CapabilityError, match="no logprobs"):
        _run(claude, Request(messages=USER, logprobs=True, top_logprobs=5))
    with pytest.raises(CapabilityError, match=r"'seed'.*drop_params=True"):
        _run(claude, Request(messages=USER, seed=1))
    small = _model("http://127.0.0.1:9/v1", top_logprobs_max=5)
    with pytest.raises(CapabilityError, match="at most 5 top logprobs, 8 were asked"):
        _run(small, Request(messages=USER, logprobs=True, top_logprobs=8))
    ollama = build_litellm("ollama/llama3")
    with pytest.raises(CapabilityError, match="JSON schema"):
        _run(ollama, Request(messages=USER, json_schema={"type": "object"}))


def test_an_unsupported_extra_field_is_a_capability_error() -> None:
    # LiteLLM refuses it before sending; api_base on loopback in case it ever did send
    claude = build_litellm(
        "anthropic/claude-sonnet-4-20250514", api_key="k", api_base="http://127.0.0.1:9"
    )
    with pytest.raises(CapabilityError, match=r"drop_params=True.*\['logit_bias'\]") as info:
        _run(claude, Request(messages=USER, extra={"logit_bias": {"1": 2}}))
    assert str(info.value).startswith("litellm:anthropic/claude-sonnet-4-20250514: ")
    assert "\n" not in str(info.value)


def test_drop_params_hands_unsupported_fields_to_litellm() -> None:
    claude = build_litellm("anthropic/claude-sonnet-4-20250514", api_key="k", drop_params=True)
    sent = claude._kwargs(Request(messages=USER, seed=1, max_tokens=3))
    assert sent["seed"] == 1 and sent["drop_params"] is True  # LiteLLM drops it, not jurist
    assert (sent["num_retries"], sent["max_retries"]) == (0, 0)
    with pytest.raises(CapabilityError, match="no logprobs"):  # a capability still fails
        claude._kwargs(Request(messages=USER, logprobs=True))


def test_bad_routes_and_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="'nosuchroute' names no provider"):
        build_litellm("nosuchroute")
    with pytest.raises(ConfigError, match="timeout must be > 0"):
        build_litellm(ROUTE, timeout=0)
    with pytest.raises(ConfigError, match="http:// or https://"):
        build_litellm(ROUTE, api_base="127.0.0.1:8000")
    with pytest.raises(ConfigError, match="same option"):
        build_litellm(ROUTE, api_base="http://a/v1", base_url="http://b/v1")
    with pytest.raises(ConfigError, match=r"may not set \['num_retries'\]"):
        build_litellm(ROUTE, litellm_params={"num_retries": 3})
    with pytest.raises(ConfigError, match="unexpected keyword argument 'nope'"):
        build_litellm(ROUTE, nope=1)


# -- a judge, end to end ---------------------------------------------------------------------


def test_a_judge_end_to_end_with_the_true_false_template() -> None:
    import jurist
    from jurist.catalog._dump import entry_of

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        item = body["messages"][-1]["content"]
        verdict = "Incorrect" if "Berlin" in item else "Correct"
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["verdict"]
        return _answer(f'{{"verdict": "{verdict}"}}')

    items = [
        {"prompt": "Capital of France?", "response": "Paris"},
        {"prompt": "Capital of Italy?", "response": "Berlin"},
        {"prompt": "Capital of Spain?", "response": "Madrid"},
    ]
    with Recorder(answer) as server:
        judge = jurist.LLMJudge(
            f"litellm:{ROUTE}", template="true_false", base_url=server.url, api_key=KEY
        )
        results = judge.judge_sync(items)
    assert results.scores == [1.0, 0.0, 1.0]
    assert all(r.error is None for r in results)
    assert results.usage.calls == 3 and results.usage.prompt_tokens == 120
    assert len(server.bodies) == 3
    entry = entry_of(judge)
    assert entry["model"] == f"litellm:{ROUTE}"
    assert entry["model_options"] == {"api_base": server.url}
    assert KEY not in str(entry)


def test_a_judge_scores_from_the_routes_top_logprobs() -> None:
    import math

    import jurist

    top = [{"token": "Correct", "logprob": -0.2}, {"token": "Incorrect", "logprob": -1.8}]
    logprobs = {"content": [{"token": "Correct", "logprob": -0.2, "top_logprobs": top}]}
    with Recorder(lambda body: _answer("Correct", logprobs=logprobs)) as server:
        judge = jurist.LLMJudge(
            f"litellm:{ROUTE}",
            template="true_false",
            scoring="logprobs",
            base_url=server.url,
            api_key=KEY,
        )
        results = judge.judge_sync([{"prompt": "Capital of France?", "response": "Paris"}])
    sent = server.bodies[0]
    assert sent["logprobs"] is True and sent["top_logprobs"] == 20
    correct, incorrect = math.exp(-0.2), math.exp(-1.8)
    assert results.scores == [pytest.approx(correct / (correct + incorrect))]
    assert results[0].error is None


def test_the_cli_passes_base_url_key_and_timeout_to_a_litellm_model() -> None:
    from jurist.cli._model_options import build_model
    from jurist.models import WrapperModel

    model = build_model(
        "litellm:openai/tiny",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-cli-test",
        timeout=7.0,
        max_retries=0,
        cache=False,
    )
    inner = model.innermost if isinstance(model, WrapperModel) else model
    assert inner.identity()["api_base"] == "http://127.0.0.1:9/v1"
    assert inner.timeout == 7.0
    assert inner._fixed["api_key"] == "sk-cli-test"  # the key reaches litellm's call
    assert "sk-cli-test" not in repr(model)


def test_a_catalog_entry_keeps_the_options_given_but_no_credentials() -> None:
    from jurist import LLMJudge
    from jurist.catalog import entry_of

    model = get_model(
        "litellm:openai/tiny",
        api_base="http://127.0.0.1:9/v1",
        api_key="sk-entry-test",
        timeout=7.0,
        drop_params=True,
        headers={"X-Token": "secret-header"},
        litellm_params={"aws_secret_access_key": "aws-secret"},
    )
    entry = entry_of(LLMJudge(model))
    assert entry["model"] == "litellm:openai/tiny"
    assert entry["model_options"] == {
        "api_base": "http://127.0.0.1:9/v1",
        "timeout": 7.0,
        "drop_params": True,
    }
    for secret in ("sk-entry-test", "secret-header", "aws-secret"):
        assert secret not in repr(entry)
