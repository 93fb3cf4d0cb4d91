"""The attempts' deadline (``jurist.models._deadline``): asyncio.timeout's behaviour, one
timer per loop and length. Every wait here is on an event or a deadline, never a race."""

from __future__ import annotations

import asyncio

import pytest

from jurist.models import _deadline
from jurist.models._deadline import deadline


async def _forever() -> None:
    await asyncio.Event().wait()


def test_a_block_still_running_at_its_deadline_raises_timeout_error() -> None:
    async def main() -> tuple[str, int]:
        try:
            with deadline(0.02):
                await _forever()
        except TimeoutError:
            outcome = "timed out"
        else:  # pragma: no cover - the wait never ends
            outcome = "finished"
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # no cancellation left pending on the task
        return outcome, task.cancelling()

    assert asyncio.run(main()) == ("timed out", 0)


def test_a_block_that_finishes_leaves_the_task_uncancelled() -> None:
    async def main() -> int:
        for _ in range(50):
            with deadline(30):
                await asyncio.sleep(0)
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)
        return task.cancelling()

    assert asyncio.run(main()) == 0


def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    async def main() -> str:
        started = asyncio.Event()

        async def attempt() -> None:
            with deadline(30):
                started.set()
                await _forever()

        task = asyncio.create_task(attempt())
        await started.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        except TimeoutError:  # pragma: no cover - the defect this test guards against
            return "timed out"
        return "finished"  # pragma: no cover

    assert asyncio.run(main()) == "cancelled"


def test_attempts_of_one_length_each_get_their_own_deadline() -> None:
    """The first attempt finishes before its deadline; the one timer is then re-armed for
    the second, which times out; a third, longer one is untouched and finishes."""

    async def main() -> list[str]:
        first_may_end = asyncio.Event()
        third_may_end = asyncio.Event()
        outcomes: list[str] = []

        async def attempt(name: str, seconds: float, until: asyncio.Event) -> None:
            try:
                with deadline(seconds):
                    await until.wait()
                outcomes.append(f"{name} finished")
            except TimeoutError:
                outcomes.append(f"{name} timed out")

        first = asyncio.create_task(attempt("first", 0.2, first_may_end))
        await asyncio.sleep(0.01)  # the second begins later: a later deadline
        second = asyncio.create_task(attempt("second", 0.2, asyncio.Event()))
        third = asyncio.create_task(attempt("third", 30, third_may_end))
        await asyncio.sleep(0)
        first_may_end.set()
        await first
        await second  # ends by its own deadline only
        third_may_end.set()
        await third
        return outcomes

    assert asyncio.run(main()) == ["first finished", "second timed out", "third finished"]


def test_many_attempts_in_flight_time_out_together_and_none_is_lost() -> None:
    async def main() -> tuple[int, int]:
        results = await asyncio.gather(
            *(_one(0.05 if i % 2 else 30, i % 2 == 0) for i in range(40))
        )
        return results.count("timed out"), results.count("finished")

    async def _one(seconds: float, finish: bool) -> str:
        try:
            with deadline(seconds):
                if finish:
                    await asyncio.sleep(0)
                else:
                    await _forever()
        except TimeoutError:
            return "timed out"
        return "finished"

    assert asyncio.run(main()) == (20, 20)


def test_none_means_no_deadline() -> None:
    async def main() -> str:
        with deadline(None):
            await asyncio.sleep(0)
        return "finished"

    assert asyncio.run(main()) == "finished"


def test_outside_a_task_it_refuses() -> None:
    with pytest.raises(RuntimeError), deadline(1):
        pass  # pragma: no cover


def test_the_queues_of_ended_loops_are_forgotten() -> None:
    async def once() -> None:
        with deadline(7.5):
            await asyncio.sleep(0)

    for _ in range(3):
        asyncio.run(once())
    closed = [loop for loop in _deadline._QUEUES if loop.is_closed()]
    assert len(closed) <= 1  # at most the last one, forgotten when the next loop begins
