"""Retry transient failures of any model, with exponential backoff and full jitter.

Only what is transient is retried: rate limits (429), request timeouts (408), conflicts
(409), server errors (5xx), timeouts and dropped connections. A bad request, a refused
key, a missing model, a server that refuses the request's form
(:class:`~jurist.errors.UnsupportedRequestError`, even as an HTTP 500), an unparseable
verdict or a capability the backend lacks fails at once. Without a server hint, the wait
before retry ``k`` (0-based) is drawn uniformly from
``[0, min(backoff_max, backoff_base * 2**k)]`` ("full jitter").

A positive ``Retry-After`` (or ``retry-after-ms``) the server sent is honoured, capped at
``retry_after_max`` (60 s by default: a hint of an hour or a day waits 60 s, then the retry
says whether the limit has lifted). A hint of zero (or a date in the past) is no hint at
all, so it never makes a hot loop against a struggling server: like the OpenAI SDK, the
wrapper then waits its own backoff, and at least half of its ceiling (``0.25 s`` before the
first retry with the defaults).

``attempts`` on the returned :class:`~jurist.types.Completion` (or on the error raised
when retries run out) counts the calls made to the backend for it.

>>> from jurist._sync import run_sync
>>> from jurist.errors import status_error
>>> from jurist.models import MockModel
>>> from jurist.types import Message, Request
>>> mock = MockModel(outputs=[status_error(503, "busy"), "Correct"])
>>> model = RetryModel(mock, backoff_base=0.001, seed=0)
>>> out = run_sync(model.complete(Request(messages=(Message(role="user", content="q"),))))
>>> out.text, out.attempts, mock.calls
('Correct', 2, 2)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from jurist._secrets import get_logger
from jurist.errors import (
    APIConnectionError,
    APIStatusError,
    ConfigError,
    ConflictError,
    InternalServerError,
    ModelError,
    RateLimitError,
    RequestTimeoutError,
    UnsupportedRequestError,
)
from jurist.models._model import Model, WrapperModel
from jurist.types import CandidateScores, Completion, Request

__all__ = ["RetryModel", "attempts_of", "backoff_delay", "is_transient"]

T = TypeVar("T")
SleepFn = Callable[[float], Awaitable[object]]

logger = get_logger("jurist.models")  # its filter scrubs keys from every record

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_TRANSIENT_TYPES = (
    RateLimitError,
    RequestTimeoutError,
    ConflictError,
    InternalServerError,
    APIConnectionError,  # APITimeoutError is a subclass
)


def is_transient(error: BaseException) -> bool:
    """Whether retrying ``error`` may succeed: 408, 409, 429, 5xx, timeouts, dropped
    connections; never a refused request form, whatever its status.

    >>> from jurist.errors import UnsupportedRequestError, status_error
    >>> is_transient(status_error(429, "slow down")), is_transient(status_error(400, "bad"))
    (True, False)
    >>> is_transient(UnsupportedRequestError("no json_schema", form="json_schema", status_code=500))
    False
    """
    if isinstance(error, UnsupportedRequestError):
        return False
    if isinstance(error, _TRANSIENT_TYPES):
        return True
    if isinstance(error, APIStatusError):
        return error.status_code in _TRANSIENT_STATUS or error.status_code >= 500
    return False


def attempts_of(error: BaseException) -> int:
    """The requests a failed call sent: its ``attempts`` (a nested retry's count), else 1.

    Judges add it to ``Judgment.attempts`` and ``usage.attempts`` for a call that failed.

    >>> from jurist.errors import status_error
    >>> error = status_error(503, "busy")
    >>> attempts_of(error), attempts_of(ValueError("x"))
    (1, 1)
    >>> error.attempts = 3
    >>> attempts_of(error)
    3
    """
    attempts = getattr(error, "attempts", 1)
    return max(1, attempts) if isinstance(attempts, int) else 1


def backoff_delay(
    retry: int,
    error: BaseException,
    *,
    base: float,
    cap: float,
    retry_after_max: float,
    rng: random.Random | None,
) -> float:
    """Seconds to wait before retry number ``retry`` (0-based) after ``error``: exponential
    backoff from ``base`` up to ``cap``, a full-jitter draw with ``rng`` (``None``: the
    whole ceiling); a positive ``Retry-After`` on the error wins, up to
    ``retry_after_max``; ``Retry-After: 0`` waits in the upper half of the backoff (no hot
    loop against a struggling server). Every retry of jurist's waits this way.

    >>> backoff_delay(3, ValueError(), base=0.5, cap=8.0, retry_after_max=60.0, rng=None)
    4.0
    """
    ceiling = min(cap, base * 2.0 ** min(retry, 64))
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, int | float) and not math.isnan(retry_after):
        if retry_after > 0:
            return min(float(retry_after), retry_after_max)
        return rng.uniform(ceiling / 2, ceiling) if rng is not None else ceiling
    return rng.uniform(0.0, ceiling) if rng is not None else ceiling


def _set_attempts(error: BaseException, attempts: int) -> None:
    if isinstance(error, ModelError):
        error.attempts = attempts
    else:
        with contextlib.suppress(AttributeError):  # exceptions with __slots__
            setattr(error, "attempts", attempts)  # noqa: B010 - not declared on foreign errors


class RetryModel(WrapperModel):
    """Retries the wrapped model's transient failures.

    ``max_retries`` retries follow the first call (so at most ``max_retries + 1`` calls).
    ``jitter=False`` waits the full backoff instead of a uniform draw below it; ``seed``
    makes the draws reproducible; ``sleep`` is awaited for each wait (tests inject a
    recorder). :meth:`candidate_scores` is retried the same way.

    Attempt counting composes: each failed try counts the ``attempts`` of its error (1
    from a backend, more from a nested retry wrapper) and the successful try counts the
    ``attempts`` of its completion (0 for a cache hit), so the total is always the number
    of calls that reached the backend.
    """

    def __init__(
        self,
        model: Model,
        *,
        max_retries: int = 2,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        retry_after_max: float = 60.0,
        jitter: bool = True,
        seed: int | None = None,
        sleep: SleepFn = asyncio.sleep,
    ) -> None:
        super().__init__(model)
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        if backoff_base < 0 or backoff_max < 0 or retry_after_max < 0:
            raise ConfigError("backoff_base, backoff_max and retry_after_max must be >= 0")
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.jitter = jitter
        self._random = random.Random(seed)
        self._sleep = sleep

    def layer(self) -> dict[str, Any]:
        """This layer's :class:`~jurist.models.Transport` settings (its retries and waits)."""
        return {
            "max_retries": self.max_retries,
            "backoff_base": self.backoff_base,
            "backoff_max": self.backoff_max,
            "retry_after_max": self.retry_after_max,
        }

    def delay(self, retry: int, error: BaseException) -> float:
        """Seconds to wait before retry number ``retry`` (0-based) after ``error``.

        >>> from jurist.errors import status_error
        >>> from jurist.models import MockModel
        >>> model = RetryModel(MockModel(), jitter=False)
        >>> model.delay(0, status_error(429, "slow", retry_after=2.5))
        2.5
        >>> model.delay(0, status_error(429, "slow", retry_after=86400.0))
        60.0
        >>> model.delay(1, status_error(429, "slow", retry_after=0.0))
        1.0
        """
        return backoff_delay(
            retry,
            error,
            base=self.backoff_base,
            cap=self.backoff_max,
            retry_after_max=self.retry_after_max,
            rng=self._random if self.jitter else None,
        )

    async def _call(
        self, fn: Callable[[], Awaitable[T]], first: Exception | None = None
    ) -> tuple[T, int]:
        """Run ``fn`` until it succeeds or fails for good; ``first`` is the error of a first
        try the caller made itself (its fast path), counted as this loop's first try.

        Returns the result and the backend calls its failed tries made.
        """
        calls = 0
        for retry in range(self.max_retries + 1):
            if first is not None:
                error, first = first, None
            else:
                try:
                    return await fn(), calls
                except Exception as failed:
                    error = failed
            calls += attempts_of(error)
            if retry >= self.max_retries or not is_transient(error):
                _set_attempts(error, calls)
                raise error
            wait = self.delay(retry, error)
            logger.info(
                "%s: %s (%s); retry %d/%d in %.2fs",
                self.spec,
                type(error).__name__,
                error,
                retry + 1,
                self.max_retries,
                wait,
            )
            await self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def complete(self, request: Request) -> Completion:
        try:  # the first try on its own, no retry loop around it: the hot path
            return await self.wrapped.complete(request)
        except Exception as error:
            first = error
        completion, failed_calls = await self._call(lambda: self.wrapped.complete(request), first)
        # _call counted the successful try as 0 calls; its completion says how many it made.
        return completion.model_copy(update={"attempts": failed_calls + completion.attempts})

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        scores, failed_calls = await self._call(
            lambda: self.wrapped.candidate_scores(request, candidates)
        )
        if not failed_calls:
            return scores
        return scores.model_copy(update={"attempts": failed_calls + scores.attempts})

    def __repr__(self) -> str:
        return f"RetryModel({self.wrapped!r}, max_retries={self.max_retries})"
