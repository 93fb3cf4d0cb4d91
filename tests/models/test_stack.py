"""The one model stack: cache(retry(limits(backend))), so every retry is paced and every
cache hit skips the limits, whoever builds the model (CLI, judges, rewards, uqlm, Ray).

No timed assertions: limits run on a fake clock, retries wait Retry-After of 1 ms, and
the tests count reservations and requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import jurist
from jurist.compat.uqlm import LLMPanel
from jurist.engines._ray_actor import Pacing, portable_entry, rebuild
from jurist.engines._ray_limits import SharedLimitModel
from jurist.errors import ConfigError, status_error
from jurist.models import (
    CachedModel,
    LimitedModel,
    MockModel,
    Model,
    RetryModel,
    Transport,
    WrapperModel,
    build_stack,
    get_model,
    with_limits,
)
from jurist.rewards._reward_judge import _build
from jurist.types import Completion, Message, Request
from tests._fake_pacer import FakePacer
from tests._fault_server import FaultServer, ok, status

REQUEST = Request(messages=(Message(role="user", content="2+2?"),), temperature=0)
ITEM = {"prompt": "2+2?", "response": "4"}


def _chain(model: Model) -> list[type]:
    out: list[type] = []
    while isinstance(model, WrapperModel):
        out.append(type(model))
        model = model.wrapped
    return [*out, type(model)]


class FakeTime:
    """A clock that stands still and a sleep that records the waits asked of it."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def clock(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


class Counting(WrapperModel):
    """A limits' layer that counts the calls reaching it."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        return await self.wrapped.complete(request)


def test_build_stack_composes_cache_retry_limits_in_that_order(tmp_path: Path) -> None:
    transport = Transport(
        max_retries=3, rpm=60, tpm=1000, max_concurrency=4, cache=True, cache_path=tmp_path / "c"
    )
    stack = build_stack(MockModel("a"), transport)
    assert _chain(stack) == [CachedModel, RetryModel, LimitedModel, MockModel]
    assert isinstance(stack, CachedModel) and stack.path == tmp_path / "c"
    retry = stack.wrapped
    assert isinstance(retry, RetryModel) and retry.max_retries == 3
    limits = retry.wrapped
    assert isinstance(limits, LimitedModel)
    assert (limits.max_calls_per_min, limits.max_tokens_per_min, limits.max_concurrency) == (
        60,
        1000,
        4,
    )
    # settings left off leave their layer out; retries default by where calls go
    assert _chain(build_stack(MockModel("a"))) == [MockModel]
    remote = get_model("openai:m", base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)
    assert _chain(build_stack(remote)) == [RetryModel, type(remote)]
    assert _chain(build_stack(remote, Transport(max_retries=0))) == [type(remote)]


def test_every_retry_of_a_429_is_paced() -> None:
    mock = MockModel(
        "a", outputs=[status_error(429, "slow down"), status_error(429, "again"), "ok"]
    )
    time = FakeTime()

    def limits(model: Model) -> Model:
        return LimitedModel(model, max_calls_per_min=60, clock=time.clock, sleep=time.sleep)

    transport = Transport(max_retries=2, backoff_base=0.0, backoff_max=0.0)
    stack = build_stack(mock, transport, limits=limits)
    out = asyncio.run(stack.complete(REQUEST))
    assert (out.text, out.attempts, mock.calls) == ("ok", 3, 3)
    # three calls, three slots one second apart: the two retries waited their turn
    assert time.waits == [1.0, 2.0]


def test_a_cache_hit_skips_the_limits(tmp_path: Path) -> None:
    layers: list[Counting] = []

    def limits(model: Model) -> Model:
        layers.append(Counting(model))
        return layers[0]

    transport = Transport(cache=True, cache_path=tmp_path / "cache.sqlite")
    stack = build_stack(MockModel("a", outputs=["ok"], cycle=True), transport, limits=limits)
    first, again = asyncio.run(stack.complete(REQUEST)), asyncio.run(stack.complete(REQUEST))
    assert (first.cached, again.cached) == (False, True)
    assert layers[0].calls == 1
    assert isinstance(stack, CachedModel)
    stack.close()


def test_with_limits_goes_under_retry_and_cache_and_leaves_the_model_as_it_was(
    tmp_path: Path,
) -> None:
    stack = build_stack(
        MockModel("a"), Transport(max_retries=1, cache=True, cache_path=tmp_path / "c")
    )
    paced = with_limits(stack, Counting)
    assert _chain(paced) == [CachedModel, RetryModel, Counting, MockModel]
    assert _chain(stack) == [CachedModel, RetryModel, MockModel]


def test_transport_settings_are_checked_with_a_config_error() -> None:
    with pytest.raises(ConfigError, match="transport setting max_retries"):
        Transport(max_retries=-1)
    with pytest.raises(ConfigError, match="transport setting max_concurrency"):
        Transport(max_concurrency=0)
    with pytest.raises(ConfigError, match="transport setting rpm"):
        Transport(rpm=0)
    with pytest.raises(ConfigError, match="transport setting retries"):
        Transport(retries=2)  # type: ignore[call-arg]


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


def _remote(server: FaultServer) -> Model:
    return get_model("openai:m", base_url=server.url, api_key="x")


def test_llm_judge_max_calls_per_min_paces_its_retries(server: FaultServer) -> None:
    judge = jurist.LLMJudge(_remote(server), max_calls_per_min=6000, output="text")
    assert _chain(judge.model)[:2] == [RetryModel, LimitedModel]
    server.script(status(429, retry_after_ms=1), ok("Correct"))
    assert judge.judge_one_sync(ITEM).score == 1.0
    assert server.requests == 2


def test_the_cli_the_rewards_and_uqlm_build_the_same_order(
    server: FaultServer, tmp_path: Path
) -> None:
    from jurist.cli._model_options import build_model

    cli = build_model(
        "openai:m",
        base_url=server.url,
        api_key="x",
        timeout=5.0,
        max_retries=2,
        rpm=60,
        cache=True,
        cache_path=tmp_path / "c",
    )
    assert _chain(cli)[:3] == [CachedModel, RetryModel, LimitedModel]
    reward = _build({"model": "openai:m", "base_url": server.url, "api_key": "x", "rpm": 60})
    assert _chain(reward.judge.model)[:2] == [RetryModel, LimitedModel]
    catalog_reward = _build({"judge": "judges.likert.openai_gpt_4o_mini", "rpm": 60})
    assert _chain(catalog_reward.judge.model)[:2] == [RetryModel, LimitedModel]
    panel = LLMPanel([_remote(server)], llm=_remote(server), max_calls_per_min=60)
    assert _chain(panel._model())[:2] == [RetryModel, LimitedModel]
    assert _chain(panel.judges[0].judge.model)[:2] == [RetryModel, LimitedModel]


def test_on_ray_the_cluster_pacer_sits_under_retry_so_retries_are_paced(
    server: FaultServer,
) -> None:
    judge = jurist.LLMJudge(_remote(server), output="text")
    pacer = FakePacer()
    rebuilt = rebuild(portable_entry(judge), Pacing((pacer,), (False,)))
    assert _chain(rebuilt.model)[:2] == [RetryModel, SharedLimitModel]
    server.script(status(429, retry_after_ms=1), status(503), ok("Correct"))
    # a 503 without Retry-After backs off 0.5 s at most (full jitter): no timing asserted
    assert rebuilt.judge_one_sync(ITEM).score == 1.0
    assert server.requests == 3
    assert len(pacer.reservations) == 3  # each attempt asked the cluster's pacer
