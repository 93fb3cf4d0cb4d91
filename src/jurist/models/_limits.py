"""Limit any model's concurrency, requests per minute and tokens per minute, smoothly.

Rates are paced with GCRA (the generic cell rate algorithm, a leaky bucket kept as one
"theoretical arrival time"): calls start ``60 / max_calls_per_min`` seconds apart, and
each call pushes the token schedule back by ``tokens * 60 / max_tokens_per_min`` seconds.
A call is never held back by a blind sleep to the next minute, so a batch runs at a
steady rate from its first call to its last.

Each caller reserves its start time under a lock (no awaiting inside), then sleeps
outside it, so many concurrent callers get distinct, evenly spaced slots at once and
wake one by one instead of all together. The lock is a :class:`threading.Lock`, so one
``LimitedModel`` paces calls coming from several event loops or threads as one stream.
The concurrency semaphore is an :class:`asyncio.Semaphore` made lazily for each running
loop (sync twins share one background loop; async callers bring their own), so
``max_concurrency`` bounds the calls in flight in each loop.

Tokens are reserved before a call from an estimate (prompt characters / 4, plus a fixed
count per image, plus ``max_tokens``; or ``token_estimator(request)``) and corrected by
the usage the completion reports; a failed call keeps its reservation (it may have been
billed).

>>> from jurist._sync import run_sync
>>> from jurist.models import MockModel
>>> from jurist.types import Message, Request
>>> model = LimitedModel(MockModel(), max_concurrency=4, max_calls_per_min=6000)
>>> req = Request(messages=(Message(role="user", content="q"),))
>>> [c.text for c in run_sync(model.complete_many([req, req, req]))]
['Correct', 'Correct', 'Correct']
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from jurist.errors import ConfigError
from jurist.models._model import Model, WrapperModel
from jurist.types import CandidateScores, Completion, ImagePart, Request

__all__ = ["Gcra", "LimitedModel", "book", "estimate_tokens", "image_tokens", "settle"]

Clock = Callable[[], float]
SleepFn = Callable[[float], Awaitable[object]]
TokenEstimator = Callable[[Request], int]

DEFAULT_COMPLETION_TOKENS = 256
LOW_DETAIL_IMAGE_TOKENS = 85
"""OpenAI's count for an image sent at ``detail: "low"``: a flat 85 tokens."""
HIGH_DETAIL_IMAGE_TOKENS = 85 + 170 * 8
"""The most OpenAI counts for an image at ``detail: "high"`` (or ``"auto"``, unset): 85
plus 170 per 512-pixel tile of the image scaled into 2048x2048 and then to a shortest side
of 768, at most 768x2048, i.e. 2x4 tiles: 1445. The image's size is not read here, so a
call reserves the bound and the usage it reports gives the difference back."""


def image_tokens(image: ImagePart) -> int:
    """The tokens one image is reserved for (see :data:`HIGH_DETAIL_IMAGE_TOKENS`)."""
    return LOW_DETAIL_IMAGE_TOKENS if image.detail == "low" else HIGH_DETAIL_IMAGE_TOKENS


def estimate_tokens(request: Request) -> int:
    """Tokens a request may use: prompt characters / 4, plus :func:`image_tokens` per image,
    plus ``max_tokens`` (256 if unset).

    >>> from jurist.types import Message, Request
    >>> estimate_tokens(Request(messages=(Message(role="user", content="x" * 40),), max_tokens=5))
    15
    """
    chars = sum(len(m.content) for m in request.messages)
    images = sum(image_tokens(i) for m in request.messages for i in m.images)
    completion = request.max_tokens if request.max_tokens is not None else DEFAULT_COMPLETION_TOKENS
    return math.ceil(chars / 4) + images + completion


@dataclass
class Gcra:
    """A leaky bucket kept as a theoretical arrival time (``tat``).

    A reservation of ``units`` may start once ``tat - tolerance`` has passed, and moves
    ``tat`` ``units * interval`` seconds past its start.
    """

    interval: float
    tolerance: float = 0.0
    tat: float = -math.inf

    def earliest(self) -> float:
        return self.tat - self.tolerance

    def take(self, start: float, units: float) -> None:
        self.tat = max(self.tat, start) + units * self.interval


def book(calls: Gcra | None, tokens: Gcra | None, now: float, units: int) -> float:
    """Book the earliest start, at ``now`` or later, of one call of ``units`` tokens on
    the call and token schedules (``None``: no such limit); the start time. The caller
    holds whatever lock guards the schedules."""
    start = now
    if calls is not None:
        start = max(start, calls.earliest())
    if tokens is not None:
        start = max(start, tokens.earliest())
    if calls is not None:
        calls.take(start, 1)
    if tokens is not None:
        tokens.take(start, units)
    return start


def settle(tokens: Gcra | None, reserved: int, used: int) -> None:
    """Move the token schedule by the tokens a call used beyond (or short of) its
    reservation."""
    if tokens is not None and used != reserved:
        tokens.tat += (used - reserved) * tokens.interval


class LimitedModel(WrapperModel):
    """Bounds the wrapped model's concurrency and paces its calls and tokens per minute.

    ``max_concurrency``: calls in flight at once (per event loop). ``max_calls_per_min``:
    calls start evenly spaced; ``burst`` calls may start together after an idle spell
    (default 1: none). ``max_tokens_per_min``: prompt plus completion tokens, reserved by
    ``token_estimator`` (default :func:`estimate_tokens`) and corrected by the reported
    usage. ``None`` leaves a limit off. ``clock`` and ``sleep`` are injectable for tests.

    Wrap retries outside the limits (``RetryModel(LimitedModel(backend))``) so each retry
    is paced too.
    """

    def __init__(
        self,
        model: Model,
        *,
        max_concurrency: int | None = None,
        max_calls_per_min: float | None = None,
        max_tokens_per_min: float | None = None,
        burst: int = 1,
        token_estimator: TokenEstimator = estimate_tokens,
        clock: Clock = time.monotonic,
        sleep: SleepFn = asyncio.sleep,
    ) -> None:
        super().__init__(model)
        if max_concurrency is not None and max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be >= 1, got {max_concurrency}")
        for label, value in (
            ("max_calls_per_min", max_calls_per_min),
            ("max_tokens_per_min", max_tokens_per_min),
        ):
            if value is not None and not value > 0:
                raise ConfigError(f"{label} must be > 0, got {value}")
        if burst < 1:
            raise ConfigError(f"burst must be >= 1, got {burst}")
        self.max_concurrency = max_concurrency
        self.max_calls_per_min = max_calls_per_min
        self.max_tokens_per_min = max_tokens_per_min
        self._estimate = token_estimator
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._calls: Gcra | None = None
        if max_calls_per_min is not None:
            interval = 60.0 / max_calls_per_min
            self._calls = Gcra(interval, tolerance=(burst - 1) * interval)
        self._tokens: Gcra | None = None
        if max_tokens_per_min is not None:
            self._tokens = Gcra(60.0 / max_tokens_per_min)
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    def layer(self) -> dict[str, Any]:
        """This layer's :class:`~jurist.models.Transport` settings (its limits)."""
        return {
            "rpm": self.max_calls_per_min,
            "tpm": self.max_tokens_per_min,
            "max_concurrency": self.max_concurrency,
        }

    def _semaphore(self) -> asyncio.Semaphore | None:
        if self.max_concurrency is None:
            return None
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is not None:  # made already: no lock to take
            return sem
        with self._lock:
            sem = self._semaphores.get(loop)
            if sem is None:
                sem = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
            return sem

    def reserve(self, tokens: int) -> float:
        """Book the next start time for a call of ``tokens`` tokens; return the wait (s)."""
        with self._lock:
            now = self._clock()
            return book(self._calls, self._tokens, now, tokens) - now

    def _correct(self, reserved: int, used: int) -> None:
        if self._tokens is not None and used != reserved:
            with self._lock:
                settle(self._tokens, reserved, used)

    @asynccontextmanager
    async def _slot(self, tokens: int) -> AsyncIterator[None]:
        sem = self._semaphore()
        if sem is not None:
            await sem.acquire()
        try:
            wait = self.reserve(tokens)
            if wait > 0:
                await self._sleep(wait)
            yield
        finally:
            if sem is not None:
                sem.release()

    async def complete(self, request: Request) -> Completion:
        if self._calls is None and self._tokens is None:  # a bound alone: no schedule to keep
            sem = self._semaphore()
            if sem is None:
                return await self.wrapped.complete(request)
            async with sem:
                return await self.wrapped.complete(request)
        reserved = self._estimate(request) if self._tokens is not None else 0
        async with self._slot(reserved):
            completion = await self.wrapped.complete(request)
        if self._tokens is not None:
            used = completion.usage.total_tokens
            if completion.cached:
                used = 0
            elif used == 0:  # the backend reports no usage: keep the estimate
                used = reserved
            self._correct(reserved, used)
        return completion

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        tokens = 0
        if self._tokens is not None:
            tokens = self._estimate(request.model_copy(update={"max_tokens": len(candidates)}))
        async with self._slot(tokens):
            return await self.wrapped.candidate_scores(request, candidates)

    def __repr__(self) -> str:
        limits = [
            f"{k}={v}"
            for k, v in (
                ("max_concurrency", self.max_concurrency),
                ("max_calls_per_min", self.max_calls_per_min),
                ("max_tokens_per_min", self.max_tokens_per_min),
            )
            if v is not None
        ]
        return f"LimitedModel({', '.join([repr(self.wrapped), *limits])})"
