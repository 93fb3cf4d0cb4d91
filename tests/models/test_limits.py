"""LimitedModel: concurrency bound, smooth request pacing, token pacing with correction."""

from __future__ import annotations

import asyncio
import bisect

import pytest

from jurist._sync import run_sync
from jurist.errors import ConfigError, status_error
from jurist.models import LimitedModel, MockModel
from jurist.models._limits import estimate_tokens
from jurist.types import Completion, Message, Request, Usage
from tests._virtual_time import run_virtual

REQ = Request(messages=(Message(role="user", content="x" * 40),), max_tokens=90)  # 100 tokens


class FakeTime:
    """A clock that only moves when told, and a ``sleep`` that records when callers start.

    With ``advance=True`` each sleep moves the clock to the end of the wait (sequential
    callers); otherwise the clock stays put and ``starts`` holds each caller's slot.
    """

    def __init__(self, advance: bool = False) -> None:
        self.now = 0.0
        self.advance = advance
        self.starts: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        assert delay > 0
        self.starts.append(self.now + delay)
        if self.advance:
            self.now += delay
        await asyncio.sleep(0)


def max_in_window(times: list[float], window: float) -> int:
    """The most events in any half-open window ``[t, t + window)``."""
    times = sorted(times)
    return max(bisect.bisect_left(times, t + window) - i for i, t in enumerate(times))


def slots(fake: FakeTime, calls: int) -> list[float]:
    """Start times: callers that did not sleep started at the current time."""
    return sorted(fake.starts + [fake.now] * (calls - len(fake.starts)))


async def test_requests_per_minute_are_evenly_spaced() -> None:
    fake = FakeTime()
    model = LimitedModel(
        MockModel(cycle=True, outputs=["ok"]),
        max_calls_per_min=1200,
        clock=fake.clock,
        sleep=fake.sleep,
    )
    await model.complete_many([REQ] * 400)
    starts = slots(fake, 400)
    assert starts == pytest.approx([0.05 * k for k in range(400)])
    # Share of a 5-second window: 100 (one more when both ends land on a slot); limit 120.
    assert max_in_window(starts, 5.0) <= 101
    rate = (len(starts) - 1) / (starts[-1] - starts[0]) * 60
    assert rate == pytest.approx(1200)


async def test_burst_allows_that_many_at_once_then_paces() -> None:
    fake = FakeTime()
    model = LimitedModel(
        MockModel(cycle=True, outputs=["ok"]),
        max_calls_per_min=600,
        burst=5,
        clock=fake.clock,
        sleep=fake.sleep,
    )
    await model.complete_many([REQ] * 20)
    starts = slots(fake, 20)
    assert starts[:5] == [0.0] * 5
    assert starts[5:] == pytest.approx([0.1 * k for k in range(1, 16)])


async def test_idle_time_is_not_slept_through() -> None:
    fake = FakeTime(advance=True)
    model = LimitedModel(
        MockModel(cycle=True, outputs=["ok"]),
        max_calls_per_min=60,
        clock=fake.clock,
        sleep=fake.sleep,
    )
    await model.complete(REQ)  # t = 0, no wait
    await model.complete(REQ)  # waits one second
    assert fake.starts == [1.0]
    fake.now = 100.0  # a long pause: the next call goes at once, no catch-up burst either
    await model.complete(REQ)
    await model.complete(REQ)
    assert fake.starts == [1.0, 101.0]


async def test_tokens_per_minute_reserve_the_estimate() -> None:
    fake = FakeTime()
    tpm = 6000  # 100 tokens per second
    usage = Usage(prompt_tokens=10, completion_tokens=90, calls=1)
    mock = MockModel(outputs=[Completion(text="ok", usage=usage)], cycle=True)
    model = LimitedModel(mock, max_tokens_per_min=tpm, clock=fake.clock, sleep=fake.sleep)
    assert estimate_tokens(REQ) == 100
    await model.complete_many([REQ] * 10)
    assert slots(fake, 10) == pytest.approx([float(k) for k in range(10)])


async def test_images_count_toward_the_token_estimate_and_the_pacing() -> None:
    """An image reserves OpenAI's per-image tokens (85 at detail low, the high-detail bound
    of 1445 otherwise), so a request with images waits its due like a long text would."""
    from jurist.types import ImagePart

    low = ImagePart(url="https://x/a.png", sha256="a", ref="a.png", detail="low")
    high = ImagePart(url="https://x/b.png", sha256="b", ref="b.png", detail="high")
    auto = ImagePart(url="https://x/c.png", sha256="c", ref="c.png")
    text = Message(role="user", content="x" * 40)
    with_images = Request(
        messages=(text.model_copy(update={"images": (low, high, auto)}),), max_tokens=5
    )
    assert estimate_tokens(with_images) == 10 + 5 + 85 + 1445 + 1445
    fake = FakeTime()
    one = Request(messages=(text.model_copy(update={"images": (low,)}),), max_tokens=5)
    model = LimitedModel(
        MockModel(outputs=[Completion(text="ok")], cycle=True, images=True),
        max_tokens_per_min=6000,  # 100 tokens per second: each call of 100 tokens takes 1 s
        clock=fake.clock,
        sleep=fake.sleep,
    )
    await model.complete_many([one] * 3)
    assert slots(fake, 3) == pytest.approx([0.0, 1.0, 2.0])


async def test_tokens_are_corrected_by_actual_usage() -> None:
    fake = FakeTime(advance=True)
    usage = Usage(prompt_tokens=10, completion_tokens=10, calls=1)  # 20 used, 100 reserved
    mock = MockModel(outputs=[Completion(text="ok", usage=usage)], cycle=True)
    model = LimitedModel(mock, max_tokens_per_min=6000, clock=fake.clock, sleep=fake.sleep)
    await model.complete(REQ)  # at 0; schedule pushed to 1.0, then corrected to 0.2
    await model.complete(REQ)
    assert fake.starts == pytest.approx([0.2])


async def test_a_backend_without_usage_keeps_the_estimate() -> None:
    fake = FakeTime(advance=True)
    mock = MockModel(outputs=[Completion(text="ok")], cycle=True)  # usage all zero
    model = LimitedModel(mock, max_tokens_per_min=6000, clock=fake.clock, sleep=fake.sleep)
    await model.complete(REQ)
    await model.complete(REQ)
    assert fake.starts == pytest.approx([1.0])


async def test_token_rate_stays_under_the_limit_in_any_minute() -> None:
    fake = FakeTime()
    tpm = 20_000
    sizes = [(i * 37) % 900 + 50 for i in range(120)]  # 50..949 completion tokens
    requests = [
        Request(messages=(Message(role="user", content="q" * 400),), max_tokens=s) for s in sizes
    ]
    model = LimitedModel(
        MockModel(outputs=[Completion(text="ok")], cycle=True),
        max_tokens_per_min=tpm,
        clock=fake.clock,
        sleep=fake.sleep,
    )
    await model.complete_many(requests)
    starts = slots(fake, len(requests))
    costs = [estimate_tokens(r) for r in requests]  # gather reserves in request order
    order = sorted(range(len(requests)), key=lambda i: starts[i])
    assert order == list(range(len(requests)))
    for i in range(len(starts)):
        j = bisect.bisect_left(starts, starts[i] + 60.0)
        assert sum(costs[i:j]) <= tpm + max(costs)
    total_time = starts[-1] - starts[0]
    assert sum(costs[:-1]) / total_time * 60 == pytest.approx(tpm)


async def test_calls_and_tokens_combine_to_the_later_slot() -> None:
    fake = FakeTime()
    model = LimitedModel(
        MockModel(outputs=[Completion(text="ok")], cycle=True),
        max_calls_per_min=120,  # 0.5 s apart
        max_tokens_per_min=6000,  # 100 tokens: 1 s apart
        clock=fake.clock,
        sleep=fake.sleep,
    )
    await model.complete_many([REQ] * 4)
    assert slots(fake, 4) == pytest.approx([0.0, 1.0, 2.0, 3.0])


async def test_concurrency_never_exceeds_the_bound() -> None:
    in_flight = peak = 0

    async def answer(request: Request) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        return "ok"

    model = LimitedModel(MockModel(outputs=answer), max_concurrency=3)
    outs = await model.complete_many([REQ] * 30)
    assert len(outs) == 30
    assert peak == 3


async def test_failures_release_the_slot() -> None:
    mock = MockModel(outputs=[status_error(500, "x")] * 5 + ["ok"])
    model = LimitedModel(mock, max_concurrency=1)
    for _ in range(5):
        with pytest.raises(Exception, match="x"):
            await model.complete(REQ)
    assert (await model.complete(REQ)).text == "ok"


async def test_a_cancelled_waiter_does_not_leak_its_slot() -> None:
    gate = asyncio.Event()

    async def answer(request: Request) -> str:
        await gate.wait()
        return "ok"

    model = LimitedModel(MockModel(outputs=answer), max_concurrency=1)
    first = asyncio.ensure_future(model.complete(REQ))
    waiting = asyncio.ensure_future(model.complete(REQ))
    await asyncio.sleep(0.01)
    waiting.cancel()
    gate.set()
    assert (await first).text == "ok"
    assert (await asyncio.wait_for(model.complete(REQ), 1)).text == "ok"


def test_a_fresh_event_loop_per_call_works() -> None:
    model = LimitedModel(MockModel(cycle=True, outputs=["ok"]), max_concurrency=2)
    for _ in range(3):  # an async caller's asyncio.run per batch: a new loop each time
        outs = asyncio.run(model.complete_many([REQ] * 5))
        assert [o.text for o in outs] == ["ok"] * 5
    outs = run_sync(model.complete_many([REQ] * 5))  # and the sync twins' shared loop
    assert [o.text for o in outs] == ["ok"] * 5


async def test_candidate_scores_are_limited() -> None:
    fake = FakeTime()
    mock = MockModel(candidate_probs={"Yes": 0.5, "No": 0.5})
    model = LimitedModel(mock, max_calls_per_min=60, clock=fake.clock, sleep=fake.sleep)
    await asyncio.gather(*(model.candidate_scores(REQ, ["Yes", "No"]) for _ in range(3)))
    assert slots(fake, 3) == [0.0, 1.0, 2.0]


def test_bad_limits_are_config_errors() -> None:
    for options in ({"max_concurrency": 0}, {"max_calls_per_min": 0}, {"max_tokens_per_min": -1}):
        with pytest.raises(ConfigError):
            LimitedModel(MockModel(), **options)  # type: ignore[arg-type]


def test_pacing_under_real_scheduling_keeps_every_five_second_window() -> None:
    """1200 calls/min over 130 calls from 50 concurrent callers, on the real event loop
    machinery (tasks, semaphore, ``asyncio.sleep``) with a virtual clock: every start
    time is exact, and no real time passes."""
    starts: list[float] = []
    in_flight = peak = 0

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def answer(request: Request) -> str:
            nonlocal in_flight, peak
            starts.append(loop.time())
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(2.0)  # each call takes 2 s: about 40 are in flight at once
            in_flight -= 1
            return "ok"

        model = LimitedModel(
            MockModel(outputs=answer), max_calls_per_min=1200, max_concurrency=50, clock=loop.time
        )
        await model.complete_many([REQ] * 130)

    run_virtual(main())
    assert 39 <= peak <= 41
    assert starts == pytest.approx([0.05 * k for k in range(130)])
    # Share of a 5-second window: 100 (one more when both ends land on a slot); limit 120.
    assert max_in_window(starts, 5.0) <= 101
    rate = (len(starts) - 1) / (starts[-1] - starts[0]) * 60
    assert rate == pytest.approx(1200)
