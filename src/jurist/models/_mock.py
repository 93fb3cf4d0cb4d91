"""The scripted model: a backend like any other, for tests and docs.

>>> from jurist.types import Message, Request
>>> from jurist._sync import run_sync
>>> m = MockModel("judge", outputs=["Correct", "4"])
>>> req = Request(messages=(Message(role="user", content="q"),))
>>> run_sync(m.complete(req)).text, run_sync(m.complete(req)).text
('Correct', '4')
>>> m.calls
2
>>> rm = MockModel("rm", outputs=[1.5, -0.25], scalar=True)  # a scripted reward model
>>> run_sync(rm.complete(req)).score, rm.capabilities.scalar
(1.5, True)
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any

from jurist.errors import ConfigError, JuristError
from jurist.models._model import Capabilities, Model, refuse_images
from jurist.models._reasoning import refuse_reasoning
from jurist.types import CandidateScores, Completion, Request, Usage

__all__ = ["MockModel", "MockOutput"]

MockOutput = str | float | Completion | BaseException
OutputFn = Callable[[Request], "MockOutput | Awaitable[MockOutput]"]


class MockModel(Model):
    """Answers from a script: a list (used in order), an iterator, or a function of the request.

    A script item may be a string, a :class:`~jurist.types.Completion`, or an exception to
    raise (to simulate API failures). When a list runs out, ``cycle=True`` starts it over;
    otherwise the call raises :class:`~jurist.errors.ConfigError`. ``latency`` (seconds)
    delays each answer. ``candidate_probs`` makes :meth:`candidate_scores` available.
    ``top_logprobs`` declares that the model returns that many alternatives per token (the
    scripted :class:`~jurist.types.Completion` objects carry them), for logprob scoring.
    ``record=False`` keeps no log of requests in :attr:`requests` (for long benchmarks);
    :attr:`calls` counts them either way. ``thinking`` (default True) declares that it
    honours ``Request.reasoning`` (a script reads it from the request it is given, and
    answers with :class:`~jurist.types.Completion` objects carrying ``reasoning``);
    ``thinking=False`` refuses a request with reasoning, as a backend that cannot think.
    ``scalar=True`` makes it a scripted scalar reward model: each output is a number (or
    its text), given as :attr:`Completion.score` with no text
    (:attr:`~jurist.models.Capabilities.scalar`).
    """

    provider = "mock"

    def __init__(
        self,
        name: str = "mock",
        *,
        outputs: Iterable[MockOutput] | OutputFn | None = None,
        cycle: bool = False,
        latency: float = 0.0,
        candidate_probs: dict[str, float] | None = None,
        json_schema: bool = False,
        top_logprobs: int = 0,
        record: bool = True,
        images: bool = False,
        thinking: bool = True,
        scalar: bool = False,
    ) -> None:
        self.name = name
        self._thinking = thinking
        self._scalar = scalar
        self._images = images
        self.record = record
        self._top_logprobs = top_logprobs
        self.latency = latency
        self.calls = 0
        self.requests: list[Request] = []
        self._candidate_probs = candidate_probs
        self._json_schema = json_schema
        self._fn: OutputFn | None = None
        self._iter: Iterator[MockOutput] | None = None
        if outputs is None:
            outputs = [0.0] if scalar else ["Correct"]
            cycle = True
        if callable(outputs):
            self._fn = outputs
        else:
            items = list(outputs)
            self._iter = itertools.cycle(items) if cycle else iter(items)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            candidate_scores=self._candidate_probs is not None,
            json_schema=self._json_schema,
            logprobs=self._top_logprobs > 0,
            top_logprobs=self._top_logprobs,
            images=self._images,
            thinking=self._thinking,
            scalar=self._scalar,
        )

    def rebuild_options(self) -> dict[str, Any]:
        """``scalar=True`` when set (a rebuilt mock is a reward model again; its script is
        code and does not travel)."""
        return {"scalar": True} if self._scalar else {}

    async def complete(self, request: Request) -> Completion:
        if not self._images:
            refuse_images(self.spec, request)
        refuse_reasoning(self.spec, self._thinking, request.reasoning)
        self.calls += 1
        if self.record:
            self.requests.append(request)
        if self.latency:
            await asyncio.sleep(self.latency)
        out = await self._next(request)
        if isinstance(out, BaseException):
            raise out
        if isinstance(out, Completion):
            return out
        prompt_chars = sum(len(m.content) for m in request.messages)
        if self._scalar:
            usage = Usage(prompt_tokens=max(1, prompt_chars // 4), calls=1)
            return Completion(
                text="", score=float(out), usage=usage, finish_reason="score", model=self.name
            )
        text = str(out)
        usage = Usage(
            prompt_tokens=max(1, prompt_chars // 4),
            completion_tokens=max(1, len(text) // 4),
            calls=1,
        )
        return Completion(text=text, usage=usage, finish_reason="stop", model=self.name)

    async def _next(self, request: Request) -> MockOutput:
        if self._fn is not None:
            result = self._fn(request)
            if inspect.isawaitable(result):
                result = await result
            return result
        assert self._iter is not None
        try:
            return next(self._iter)
        except StopIteration:
            raise ConfigError(
                f"mock model {self.name!r} ran out of scripted outputs after "
                f"{self.calls - 1} calls; pass more outputs or cycle=True"
            ) from None

    async def candidate_scores(
        self, request: Request, candidates: Sequence[str]
    ) -> CandidateScores:
        if self._candidate_probs is None:
            return await super().candidate_scores(request, candidates)
        import math

        self.calls += 1
        if self.record:
            self.requests.append(request)
        raw = {c: self._candidate_probs.get(c, 0.0) for c in candidates}
        total = sum(raw.values())
        if total <= 0:
            raise JuristError("mock candidate_probs give no mass to any candidate")
        prompt_chars = sum(len(m.content) for m in request.messages)
        return CandidateScores(
            logprobs={c: (math.log(p) if p > 0 else -math.inf) for c, p in raw.items()},
            probs={c: p / total for c, p in raw.items()},
            coverage=min(1.0, total),
            usage=Usage(prompt_tokens=max(1, prompt_chars // 4), calls=1),
        )


def build_mock(name: str, **options: Any) -> MockModel:
    """Factory used by the registry: ``get_model("mock:judge", outputs=[...])``.

    >>> build_mock("judge", colour="red")
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: mock model 'judge': unknown options ['colour']; it accepts [...]
    """
    import inspect

    accepted = [
        p.name
        for p in inspect.signature(MockModel).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(f"mock model {name!r}: unknown options {unknown}; it accepts {accepted}")
    return MockModel(name, **options)
