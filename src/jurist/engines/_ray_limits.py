"""Calls and tokens per minute for a whole Ray cluster, not per actor.

One limiter holds the schedule for every actor of a run: :class:`ClusterPacer`, started
as a Ray actor by :func:`start_limiter` (it takes no CPU, and serves one reservation at a
time, so its schedule needs no lock). It paces like
:class:`~jurist.models.LimitedModel` (GCRA: calls start ``60 / rpm`` seconds apart;
each call pushes the token schedule back by ``tokens * 60 / tpm`` seconds), never in
bursts. :class:`SharedLimitModel` wraps each model an actor rebuilds: before each call it
reserves a start time from the limiter (tokens: an estimate, the prompt characters / 4
plus ``max_tokens``), sleeps until then in its own process, and afterwards settles the
reservation with the usage the backend reported.

>>> clock = iter([0.0, 0.0, 0.0]).__next__
>>> pacer = ClusterPacer(rpm=60, clock=clock)
>>> [pacer.reserve(0) for _ in range(3)]
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from jurist.errors import ConfigError
from jurist.models._limits import Gcra, book, estimate_tokens, settle
from jurist.models._model import Model, WrapperModel
from jurist.types import CandidateScores, Completion, Request

__all__ = ["ClusterPacer", "SharedLimitModel", "start_limiter"]


class ClusterPacer:
    """The one schedule of a cluster's calls (``rpm``) and tokens (``tpm``) per minute.

    :meth:`reserve` books the next start time and returns the wait in seconds from now;
    :meth:`settle` moves the token schedule by the difference between a reservation and
    the tokens the call really used. ``None`` leaves a limit off.
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for label, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and not value > 0:
                raise ConfigError(f"RayOptions.{label} must be > 0, got {value}")
        self._clock = clock
        self._calls = Gcra(60.0 / rpm) if rpm is not None else None
        self._tokens = Gcra(60.0 / tpm) if tpm is not None else None

    def reserve(self, tokens: int) -> float:
        """Book a start for a call of ``tokens`` tokens; the wait (s) until it."""
        now = self._clock()
        return book(self._calls, self._tokens, now, tokens) - now

    def settle(self, reserved: int, used: int) -> None:
        """Correct a reservation of ``reserved`` tokens to the ``used`` ones."""
        settle(self._tokens, reserved, used)


def start_limiter(rpm: float | None, tpm: float | None) -> Any:
    """A :class:`ClusterPacer` running as a Ray actor (``None`` when no limit is set)."""
    if rpm is None and tpm is None:
        return None
    import ray

    actor_class = ray.remote(num_cpus=0, max_restarts=-1)(ClusterPacer)
    return actor_class.remote(rpm, tpm)


class SharedLimitModel(WrapperModel):
    """Asks the cluster's limiter (a :class:`ClusterPacer` actor) before each call.

    ``tokens``: whether the limiter paces tokens (then each call reserves an estimate
    and settles it with the reported usage; a cached answer used none).
    """

    def __init__(self, wrapped: Model, limiter: Any, *, tokens: bool) -> None:
        super().__init__(wrapped)
        self.limiter = limiter
        self.tokens = tokens

    async def _wait(self, tokens: int) -> None:
        wait = float(await self.limiter.reserve.remote(tokens))
        if wait > 0:
            await asyncio.sleep(wait)

    async def complete(self, request: Request) -> Completion:
        reserved = estimate_tokens(request) if self.tokens else 0
        await self._wait(reserved)
        completion = await self.wrapped.complete(request)
        if self.tokens:
            used = 0 if completion.cached else completion.usage.total_tokens or reserved
            if used != reserved:
                self.limiter.settle.remote(reserved, used)
        return completion

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        reserved = 0
        if self.tokens:
            reserved = estimate_tokens(request.model_copy(update={"max_tokens": len(candidates)}))
        await self._wait(reserved)
        return await self.wrapped.candidate_scores(request, candidates)

    def __repr__(self) -> str:
        return f"SharedLimitModel({self.wrapped!r})"
