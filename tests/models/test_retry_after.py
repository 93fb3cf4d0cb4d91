"""How the retry wrapper treats a server's ``Retry-After``: zero, small, absurd, garbage."""

from __future__ import annotations

import asyncio

import pytest

from jurist.errors import status_error
from jurist.models import MockModel, RetryModel
from jurist.types import Message, Request

REQ = Request(messages=(Message(role="user", content="q"),))


def _waits(retry_after: float | None, *, retries: int = 3, jitter: bool = True) -> list[float]:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    errors = [status_error(429, "slow down", retry_after=retry_after) for _ in range(retries)]
    mock = MockModel(outputs=[*errors, "Correct"])
    model = RetryModel(mock, max_retries=retries, jitter=jitter, seed=1, sleep=record)
    out = asyncio.run(model.complete(REQ))
    assert out.text == "Correct" and out.attempts == retries + 1
    return waits


def test_retry_after_zero_is_not_a_hot_loop() -> None:
    # Before: "Retry-After: 0" retried at once, three times in a row.
    waits = _waits(0.0)
    ceilings = [0.5, 1.0, 2.0]
    for wait, ceiling in zip(waits, ceilings, strict=True):
        assert ceiling / 2 <= wait <= ceiling
    assert _waits(0.0, jitter=False) == ceilings


def test_positive_retry_after_is_honoured_exactly() -> None:
    assert _waits(0.02) == [0.02, 0.02, 0.02]
    assert _waits(3.0, retries=1) == [3.0]


def test_absurd_retry_after_is_capped() -> None:
    assert _waits(86400.0, retries=2) == [60.0, 60.0]
    assert _waits(float("inf"), retries=1) == [60.0]
    capped = RetryModel(MockModel(), retry_after_max=5.0)
    assert capped.delay(0, status_error(429, "x", retry_after=1e9)) == 5.0


def test_nan_retry_after_is_no_hint() -> None:
    model = RetryModel(MockModel(), jitter=False, backoff_base=0.5)
    assert model.delay(2, status_error(429, "x", retry_after=float("nan"))) == 2.0


def test_huge_retry_count_does_not_overflow() -> None:
    model = RetryModel(MockModel(), jitter=False, backoff_base=0.5, backoff_max=8.0)
    assert model.delay(5000, status_error(503, "x")) == 8.0


@pytest.mark.parametrize("header", ["0", "-3"])
def test_zero_header_through_the_http_parser(header: str) -> None:
    from jurist.models._openai import retry_after_seconds

    seconds = retry_after_seconds({"Retry-After": header})
    assert seconds == 0.0
    model = RetryModel(MockModel(), jitter=False, backoff_base=0.5)
    assert model.delay(0, status_error(429, "x", retry_after=seconds)) == 0.5
