"""RetryModel: what is retried, how often, how long it waits, and how attempts are counted."""

from __future__ import annotations

import pytest

from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    BadRequestError,
    CapabilityError,
    ConfigError,
    ModelError,
    ParseError,
    RateLimitError,
    status_error,
)
from jurist.models import MockModel, RetryModel
from jurist.models._retry import is_transient
from jurist.types import Completion, Message, Request

REQ = Request(messages=(Message(role="user", content="Is 2+2=4?"),), temperature=0)


class SleepRecorder:
    """A ``sleep`` that records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def retry(model: MockModel, **options: object) -> tuple[RetryModel, SleepRecorder]:
    sleep = SleepRecorder()
    return RetryModel(model, sleep=sleep, seed=0, **options), sleep  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [
        status_error(429, "slow down"),
        status_error(408, "request timeout"),
        status_error(409, "conflict"),
        status_error(500, "boom"),
        status_error(502, "bad gateway"),
        status_error(503, "unavailable"),
        APITimeoutError("timed out"),
        APIConnectionError("connection reset"),
    ],
    ids=lambda e: type(e).__name__ + str(getattr(e, "status_code", "")),
)
async def test_transient_errors_are_retried_and_attempts_counted(error: ModelError) -> None:
    mock = MockModel(outputs=[error, "Correct"])
    model, sleep = retry(mock)
    out = await model.complete(REQ)
    assert (out.text, out.attempts, mock.calls) == ("Correct", 2, 2)
    assert len(sleep.delays) == 1


@pytest.mark.parametrize(
    "error",
    [
        status_error(400, "bad"),
        status_error(401, "no key"),
        status_error(403, "forbidden"),
        status_error(404, "no model"),
        status_error(422, "unprocessable"),
        ParseError("no verdict"),
        CapabilityError("no logprobs"),
        ConfigError("bad option"),
        ValueError("a bug"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_permanent_errors_fail_at_once(error: Exception) -> None:
    mock = MockModel(outputs=[error, "Correct"])
    model, sleep = retry(mock, max_retries=5)
    with pytest.raises(type(error)) as info:
        await model.complete(REQ)
    assert info.value is error
    assert mock.calls == 1
    assert sleep.delays == []
    assert getattr(info.value, "attempts", None) == 1


async def test_exhausted_retries_raise_last_error_with_attempts() -> None:
    errors = [status_error(500, f"boom {i}") for i in range(4)]
    mock = MockModel(outputs=[*errors, "never"])
    model, sleep = retry(mock, max_retries=3)
    with pytest.raises(ModelError) as info:
        await model.complete(REQ)
    assert info.value is errors[-1]
    assert info.value.attempts == 4
    assert mock.calls == 4
    assert len(sleep.delays) == 3


async def test_transient_then_permanent_stops_and_counts_both() -> None:
    mock = MockModel(outputs=[status_error(429, "slow"), status_error(400, "bad"), "never"])
    model, _ = retry(mock, max_retries=5)
    with pytest.raises(BadRequestError) as info:
        await model.complete(REQ)
    assert info.value.attempts == 2
    assert mock.calls == 2


async def test_zero_retries_is_one_call() -> None:
    mock = MockModel(outputs=[status_error(503, "down"), "Correct"])
    model, _ = retry(mock, max_retries=0)
    with pytest.raises(ModelError) as info:
        await model.complete(REQ)
    assert (info.value.attempts, mock.calls) == (1, 1)


async def test_retry_after_is_honoured_and_capped() -> None:
    mock = MockModel(
        outputs=[
            status_error(429, "slow", retry_after=1.5),
            status_error(503, "down", retry_after=0.0),
            status_error(429, "very slow", retry_after=3600.0),
            "Correct",
        ]
    )
    model, sleep = retry(mock, max_retries=3, retry_after_max=30.0)
    out = await model.complete(REQ)
    assert out.attempts == 4
    # "Retry-After: 0" is no hint: the second retry waits in the upper half of its backoff
    # ceiling (0.5 * 2 = 1 s), never at once (see tests/models/test_retry_after.py).
    assert sleep.delays[0] == 1.5 and sleep.delays[2] == 30.0
    assert 0.5 <= sleep.delays[1] <= 1.0


async def test_backoff_without_jitter_doubles_up_to_the_cap() -> None:
    mock = MockModel(outputs=[*(status_error(500, "x") for _ in range(6)), "Correct"])
    model, sleep = retry(mock, max_retries=6, backoff_base=0.5, backoff_max=4.0, jitter=False)
    out = await model.complete(REQ)
    assert out.attempts == 7
    assert sleep.delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


async def test_full_jitter_is_bounded_and_seeded() -> None:
    def run_once(seed: int) -> list[float]:
        model = RetryModel(MockModel(), max_retries=8, backoff_base=0.5, backoff_max=8.0, seed=seed)
        return [model.delay(k, APIConnectionError("x")) for k in range(8)]

    delays = run_once(7)
    assert delays == run_once(7)
    assert delays != run_once(8)
    for k, delay in enumerate(delays):
        assert 0.0 <= delay <= min(8.0, 0.5 * 2**k)
    # Full jitter actually spreads: not every draw sits at its ceiling.
    assert any(d < 0.9 * min(8.0, 0.5 * 2**k) for k, d in enumerate(delays))


async def test_seeded_runs_sleep_the_same() -> None:
    async def delays() -> list[float]:
        mock = MockModel(outputs=[*(status_error(502, "x") for _ in range(3)), "ok"])
        model, sleep = retry(mock, max_retries=3)
        await model.complete(REQ)
        return sleep.delays

    assert await delays() == await delays()


async def test_nested_retries_count_backend_calls() -> None:
    # Inner: 2 retries (3 calls) per outer try. Outer try 1 fails after 3 calls, try 2 needs 2.
    outputs = [status_error(503, f"x{i}") for i in range(4)]
    mock = MockModel(outputs=[*outputs, "Correct"])
    inner, _ = retry(mock, max_retries=2)
    outer = RetryModel(inner, max_retries=2, sleep=SleepRecorder(), seed=0)
    out = await outer.complete(REQ)
    assert (out.attempts, mock.calls) == (5, 5)


async def test_completion_fields_pass_through() -> None:
    scripted = Completion(text="Correct", finish_reason="length", latency=0.25, model="m")
    mock = MockModel(outputs=[RateLimitError("slow", status_code=429), scripted])
    model, _ = retry(mock)
    out = await model.complete(REQ)
    assert out.model_copy(update={"attempts": 1}) == scripted
    assert out.attempts == 2


async def test_candidate_scores_are_retried() -> None:
    failures = iter([status_error(429, "slow"), APITimeoutError("late")])

    class Flaky(MockModel):
        async def candidate_scores(self, request, candidates):  # type: ignore[no-untyped-def]
            for error in failures:
                self.calls += 1
                raise error
            return await super().candidate_scores(request, candidates)

    mock = Flaky(candidate_probs={"Yes": 0.75, "No": 0.25})
    model, sleep = retry(mock)
    scores = await model.candidate_scores(REQ, ["Yes", "No"])
    assert scores.probs == {"Yes": 0.75, "No": 0.25}
    assert mock.calls == 3
    assert len(sleep.delays) == 2


async def test_wrapper_passes_identity_and_capabilities() -> None:
    mock = MockModel("judge", candidate_probs={"A": 1.0})
    model = RetryModel(mock)
    assert model.spec == "mock:judge"
    assert model.identity() == mock.identity()
    assert model.capabilities.candidate_scores
    assert model.innermost is mock


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        RetryModel(MockModel(), max_retries=-1)
    with pytest.raises(ConfigError):
        RetryModel(MockModel(), backoff_base=-1)


def test_is_transient_uses_status_codes_of_generic_errors() -> None:
    from jurist.errors import APIStatusError

    assert is_transient(APIStatusError("x", status_code=429))
    assert is_transient(APIStatusError("x", status_code=599))
    assert not is_transient(APIStatusError("x", status_code=418))
