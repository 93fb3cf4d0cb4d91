"""A model stack describes itself (``rebuild_spec()``, never a secret) and is built again
from that and its ``secrets()`` (in memory), as a Ray actor rebuilds the driver's stacks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist._sync import run_sync
from jurist.errors import ConfigError
from jurist.models import (
    MockModel,
    ModelSpec,
    Transport,
    WrapperModel,
    build_stack,
    get_model,
    rebuild_model,
)
from jurist.types import Message, Request
from tests._fake_pacer import FakePacer
from tests._loopback import Loopback

# LiteLLM reads its model prices from its own package, never from the network
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REQUEST = Request(messages=(Message(role="user", content="Is 2+2=4?"),), max_tokens=4)


class KeyServer(Loopback):
    """An OpenAI-compatible server that keeps the Authorization headers it sees."""

    def __init__(self) -> None:
        super().__init__(self._answer, shutdown_timeout=0.5)
        self.keys: list[str] = []

    async def _answer(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.keys.append(request.headers.get("Authorization", ""))
        message = {"role": "assistant", "content": "Correct"}
        return web.json_response(
            {
                "id": "chatcmpl-k",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            }
        )


def test_a_whole_stack_round_trips_through_its_spec_and_secrets(tmp_path: Path) -> None:
    backend = get_model(
        "openai:judge",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-stack-secret-0001",
        headers={"X-Team": "tok-team-secret-0002"},
        timeout=7,
        json_mode=None,
        max_retries=0,
    )
    transport = Transport(
        max_retries=5,
        backoff_base=0.1,
        rpm=120,
        tpm=9000,
        max_concurrency=3,
        cache=True,
        cache_path=tmp_path / "c.sqlite",
    )
    stack = build_stack(backend, transport)
    spec = stack.rebuild_spec()
    assert spec == ModelSpec(
        provider="openai",
        name="judge",
        options={"base_url": "http://127.0.0.1:9/v1", "timeout": 7.0, "json_mode": None},
        transport=transport,
    )
    text = spec.model_dump_json()
    assert "secret" not in text  # neither the key nor the header
    secrets = stack.secrets()
    assert secrets == {
        "api_key": "sk-stack-secret-0001",
        "headers": {"X-Team": "tok-team-secret-0002"},
    }
    again = rebuild_model(ModelSpec.model_validate_json(text), secrets)
    assert repr(again) == repr(stack)
    assert again.rebuild_spec() == spec and again.secrets() == secrets


def test_a_url_with_credentials_keeps_them_with_the_secrets() -> None:
    model = get_model("openai:j", base_url="http://user:pw-0003@127.0.0.1:9/v1", max_retries=0)
    spec = model.rebuild_spec()
    assert spec.options["base_url"] == "http://127.0.0.1:9/v1"
    assert model.secrets()["headers"]["Authorization"].startswith("Basic ")
    again = rebuild_model(spec, model.secrets())
    assert again.secrets() == model.secrets()


def test_a_mock_backend_is_given_its_stack_and_an_unknown_wrapper_is_refused() -> None:
    mock = MockModel("a", outputs=["Correct"])
    stack = build_stack(mock, Transport(max_retries=4))
    again = rebuild_model(stack.rebuild_spec(), {}, backend=mock)
    assert repr(again) == "RetryModel(MockModel('mock:a'), max_retries=4)"

    class Logged(WrapperModel):
        pass

    with pytest.raises(ConfigError, match="Logged is no layer of the model stack"):
        Logged(stack).rebuild_spec()


def test_a_litellm_route_takes_its_key_per_call_not_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("litellm")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lite-0004")
    with KeyServer() as server:
        model = get_model("litellm:openai/tiny", api_base=server.base_url, max_retries=0)
        spec, secrets = model.rebuild_spec(), model.secrets()
        assert secrets == {"api_key": "sk-lite-0004"}  # the route's key, read here
        assert "sk-lite" not in spec.model_dump_json()
        # elsewhere (an actor) the variable is not set: the key goes with each call
        monkeypatch.delenv("OPENAI_API_KEY")
        environ = dict(os.environ)
        again = rebuild_model(spec, secrets)
        assert run_sync(again.complete(REQUEST)).text == "Correct"
        assert dict(os.environ) == environ
    assert server.keys == ["Bearer sk-lite-0004"]


def test_a_judge_actor_rebuilds_the_drivers_stacks(tmp_path: Path) -> None:
    from jurist.engines._ray_actor import JudgeActor, Secrets, portable_entry
    from jurist.runs._cost import resolve_prices

    transport = Transport(max_retries=5, cache=True, cache_path=tmp_path / "c.sqlite")
    models: list[Any] = [
        build_stack(
            get_model(f"openai:{n}", base_url="http://127.0.0.1:9/v1", timeout=3, max_retries=0),
            transport,
        )
        for n in ("a", "b")
    ]
    judge = jurist.Panel([jurist.LLMJudge(m) for m in models])
    actor = JudgeActor(portable_entry(judge), resolve_prices(None), 0, secrets=Secrets.of(judge))
    # the catalog entry alone rebuilt get_model's defaults: 2 retries, no cache, 60 s
    assert [m.rebuild_spec() for m in actor.judge.models()] == [m.rebuild_spec() for m in models]


def test_on_an_actor_a_cache_hit_skips_the_cluster_pacer(tmp_path: Path) -> None:
    from jurist.engines._ray_actor import Pacing, portable_entry, rebuild

    mock = MockModel("c", outputs=["Correct"], cycle=True)
    stack = build_stack(mock, Transport(max_retries=1, cache=True, cache_path=tmp_path / "c"))
    pacer = FakePacer()
    rebuilt = rebuild(portable_entry(jurist.LLMJudge(stack)), Pacing((pacer,), (False,)))
    item = {"prompt": "Is 2+2=4?", "response": "4"}
    scores = [rebuilt.judge_one_sync(item).score for _ in range(2)]
    assert scores == [1.0, 1.0]
    assert len(pacer.reservations) == 1  # the second call was a hit: not paced
    assert (tmp_path / "c").exists()  # the driver's cache file


def test_an_anthropic_model_round_trips_with_its_key_in_the_secrets() -> None:
    """The second provider with a batch API rebuilds like the first: its options travel in
    the spec, its key and headers only in ``secrets()``."""
    model = jurist.get_model(
        "anthropic:claude-x",
        api_key="sk-ant-planted",
        base_url="http://127.0.0.1:9/v1",
        max_tokens=64,
        headers={"x-team": "t"},
    )
    spec = model.rebuild_spec()
    assert "sk-ant-planted" not in spec.model_dump_json() and "x-team" not in spec.model_dump_json()
    assert model.secrets() == {"api_key": "sk-ant-planted", "headers": {"x-team": "t"}}
    again = rebuild_model(ModelSpec.model_validate_json(spec.model_dump_json()), model.secrets())
    assert again.rebuild_spec() == spec and again.secrets() == model.secrets()
    assert again.identity() == model.identity()
