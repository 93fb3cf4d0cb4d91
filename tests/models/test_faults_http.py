"""The wrappers against real HTTP faults: the real OpenAI backend talking to a scripted server.

Every count is checked against what the server received: a retried call's ``attempts``
equals the requests it cost, a batch with mixed faults loses no row, and a rerun through
the cache costs zero requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    BadRequestError,
    InternalServerError,
    ModelError,
)
from jurist.models import CachedModel, LimitedModel, Model, RetryModel, get_model
from jurist.types import Message, Request
from tests._fault_server import Fault, FaultServer, drop, hang, ok, status

pytestmark = pytest.mark.slow

TIMEOUT = 0.5  # the client's per-attempt timeout; a hang lasts longer


class RecordingSleep:
    """Records each wait; sleeps for real only when ``real`` (capped, to keep tests short)."""

    def __init__(self, real: bool = True) -> None:
        self.delays: list[float] = []
        self.real = real

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(min(delay, 0.05) if self.real else 0)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as s:
        yield s


def openai(server: FaultServer, api_key: str = "x") -> Model:
    return get_model(
        "openai:judge", base_url=server.url, api_key=api_key, timeout=TIMEOUT, max_retries=0
    )


def retrying(inner: Model, sleep: RecordingSleep, max_retries: int = 4) -> RetryModel:
    return RetryModel(inner, max_retries=max_retries, backoff_base=0.01, seed=1, sleep=sleep)


def req(prompt: str, temperature: float | None = 0) -> Request:
    return Request(messages=(Message(role="user", content=prompt),), temperature=temperature)


async def test_every_fault_then_success_counts_exactly(server: FaultServer) -> None:
    server.script(status(429, retry_after_ms=40), status(500), hang(5), drop(), ok())
    sleep = RecordingSleep()
    backend = openai(server)
    model = retrying(backend, sleep)
    out = await model.complete(req("Is 2+2=4?"))
    await backend.aclose()
    assert out.text == "echo: Is 2+2=4?"
    assert out.attempts == server.requests == 5
    assert server.faults_served == ["status", "status", "hang", "drop", "ok"]
    assert len(sleep.delays) == 4
    assert sleep.delays[0] == pytest.approx(0.04)  # retry-after-ms honoured
    assert all(0 <= d <= 0.01 * 2**k for k, d in enumerate(sleep.delays[1:], start=1))


async def test_integer_retry_after_header_is_honoured(server: FaultServer) -> None:
    server.script(status(429, retry_after=1), status(503, retry_after=120))
    sleep = RecordingSleep(real=False)
    backend = openai(server)
    model = RetryModel(backend, max_retries=2, retry_after_max=30, sleep=sleep)
    out = await model.complete(req("q"))
    await backend.aclose()
    assert sleep.delays == [1.0, 30.0]
    assert out.attempts == server.requests == 3


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (status(500), InternalServerError),
        (drop(), APIConnectionError),
        (hang(5), APITimeoutError),
    ],
    ids=["500", "drop", "hang"],
)
async def test_exhausted_retries_raise_with_attempts(
    server: FaultServer, fault: Fault, error: type[ModelError]
) -> None:
    server.script(fault, fault, fault, ok())
    backend = openai(server)
    model = retrying(backend, RecordingSleep(), max_retries=2)
    with pytest.raises(error) as info:
        await model.complete(req("q"))
    await backend.aclose()
    assert info.value.attempts == server.requests == 3


async def test_bad_request_is_not_retried(server: FaultServer) -> None:
    server.script(status(400), ok())
    sleep = RecordingSleep()
    backend = openai(server)
    with pytest.raises(BadRequestError) as info:
        await retrying(backend, sleep).complete(req("q"))
    await backend.aclose()
    assert info.value.attempts == server.requests == 1
    assert sleep.delays == []


# Faults per row of a batch, by row number modulo 6.
ROW_FAULTS: list[list[Fault]] = [
    [],
    [status(429, retry_after_ms=10)],
    [status(500), status(502)],
    [drop()],
    [hang(5)],
    [status(503), drop(), status(429, retry_after_ms=10)],
]


def script_batch(server: FaultServer, n: int) -> list[Request]:
    requests = []
    for i in range(n):
        prompt = f"item {i}: is the answer right?"
        server.script_for(prompt, *ROW_FAULTS[i % len(ROW_FAULTS)])
        requests.append(req(prompt))
    return requests


def extra_requests(n: int) -> int:
    """The failed requests a batch of ``n`` rows costs before every row succeeds."""
    return sum(len(ROW_FAULTS[i % len(ROW_FAULTS)]) for i in range(n))


async def test_batch_with_mixed_faults_loses_no_row(server: FaultServer) -> None:
    n = 36
    requests = script_batch(server, n)
    backend = openai(server)
    model = retrying(LimitedModel(backend, max_concurrency=8), RecordingSleep())
    outs = await model.complete_many(requests)
    await backend.aclose()
    assert [o.text for o in outs] == [f"echo: {r.messages[0].content}" for r in requests]
    assert [o.attempts for o in outs] == [len(ROW_FAULTS[i % 6]) + 1 for i in range(n)]
    assert sum(o.attempts for o in outs) == server.requests == n + extra_requests(n)


async def test_rerun_through_the_cache_makes_no_request(
    server: FaultServer, tmp_path: Path
) -> None:
    n = 24
    path = tmp_path / "cache.sqlite"
    requests = script_batch(server, n)
    backend = openai(server)
    first = CachedModel(retrying(backend, RecordingSleep()), path)
    outs = await first.complete_many(requests)
    await first.aclose()
    sent = server.requests
    assert sent == sum(o.attempts for o in outs) == n + extra_requests(n)
    assert (first.misses, first.hits) == (n, 0)

    # A new process would see the same file; a new backend with another key shares the entries.
    backend2 = openai(server, api_key="another-key")
    again = CachedModel(retrying(backend2, RecordingSleep()), path)
    outs2 = await again.complete_many(requests)
    await again.aclose()
    assert server.requests == sent  # zero requests on the rerun
    assert [o.text for o in outs2] == [o.text for o in outs]
    assert all(o.cached and o.attempts == 0 and o.usage.calls == 0 for o in outs2)
    assert (again.hits, again.misses) == (n, 0)


async def test_sampled_requests_go_to_the_server_every_time(
    server: FaultServer, tmp_path: Path
) -> None:
    backend = openai(server)
    model = CachedModel(backend, tmp_path / "cache.sqlite")
    for _ in range(3):
        await model.complete(req("write a poem", temperature=0.7))
    await model.aclose()
    assert server.requests == 3
    assert (model.hits, model.misses) == (0, 0)
