"""The judge's hot path, counted rather than timed: what one judgment builds and calls.

``benchmarks/throughput.py`` measures jurist's CPU per judgment against bare aiohttp (issue
22, item 5); these tests hold the reasons it is low, so they cannot regress silently. An
``LLMJudge`` over the ``openai`` backend judges items against the benchmark's stub server (a
real OpenAI-compatible HTTP server in a process of its own, on 127.0.0.1), and every pydantic
model built, copied, assembled or constructed unvalidated is counted by class. Per judgment
the path validates no model: it assembles exactly one user ``Message``, one ``Request``, one
``Completion`` with its ``Usage`` (which is the billed one) and one ``Judgment`` from values
it made itself (``jurist.types.assembled``, held to the validated construction by
``tests/test_types_assembled.py``): no copies, no ``model_construct`` (which costs pydantic 2
several times a validated construction), one backend call, and a bare verdict is parsed once
per template and remembered. A change that adds to this list must change the counts here,
knowingly.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import jurist
import jurist.judges._llm_judge
import jurist.models._openai
import jurist.templates._template
from jurist.models import RetryModel
from jurist.models._loop_sessions import LoopSessions
from jurist.models._openai import OpenAIModel
from jurist.templates import Template

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import throughput  # noqa: E402
from _stub_server import StubServer  # noqa: E402

N = 24


@pytest.fixture(scope="module")
def stub_server() -> Iterator[StubServer]:
    with StubServer(latency=0.0) as server:
        yield server


class Tally:
    """Counts pydantic constructions, copies and unvalidated constructions by class, and
    calls of chosen functions, while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built: Counter[str] = Counter()
        self.assembled: Counter[str] = Counter()
        self.copied: Counter[str] = Counter()
        self.constructed: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._mp = monkeypatch
        self.on = False

    def install(self) -> None:
        init = BaseModel.__init__
        copy = BaseModel.model_copy
        construct = BaseModel.model_construct.__func__  # type: ignore[attr-defined]

        def counted_init(obj: BaseModel, /, **data: Any) -> None:
            if self.on:
                self.built[type(obj).__name__] += 1
            init(obj, **data)

        def counted_copy(obj: BaseModel, *args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.copied[type(obj).__name__] += 1
            return copy(obj, *args, **kwargs)

        def counted_construct(cls: type[BaseModel], *args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.constructed[cls.__name__] += 1
            return construct(cls, *args, **kwargs)

        self._mp.setattr(BaseModel, "__init__", counted_init)
        # where it is used: the judge, the backend, the template's user message
        for module in (jurist.judges._llm_judge, jurist.models._openai, jurist.templates._template):
            self._mp.setattr(module, "assembled", self._counted_assembled(module.assembled))
        self._mp.setattr(BaseModel, "model_copy", counted_copy)
        self._mp.setattr(BaseModel, "model_construct", classmethod(counted_construct))

    def _counted_assembled(self, assembled: Callable[..., Any]) -> Callable[..., Any]:
        def counted(cls: type[BaseModel], values: dict[str, Any]) -> Any:
            if self.on:
                self.assembled[cls.__name__] += 1
            return assembled(cls, values)

        return counted

    def count_calls(self, owner: type, name: str) -> None:
        fn: Callable[..., Any] = getattr(owner, name)
        label = f"{owner.__name__}.{name}"

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.calls[label] += 1
            return fn(*args, **kwargs)

        self._mp.setattr(owner, name, counted)


def _judge(base_url: str, **options: Any) -> jurist.LLMJudge:
    model = jurist.get_model("openai:stub", base_url=base_url, api_key="x")
    assert isinstance(model, RetryModel)  # the default stack: retries over the backend
    return jurist.LLMJudge(model, template=throughput.TEMPLATE, output="text", **options)


def _judged(tally: Tally, judge: jurist.LLMJudge, n: int) -> dict[str, list[Any]]:
    prompts, responses = throughput.make_workload(n)
    judge.judge_responses_sync(prompts[:2], responses[:2], retries=0)  # warm: parse, session
    tally.on = True
    try:
        return judge.judge_responses_sync(prompts, responses, retries=0, concurrency=8)
    finally:
        tally.on = False


@pytest.mark.slow
def test_a_judgment_builds_five_models_and_copies_none(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    tally = Tally(monkeypatch)
    tally.install()
    judge = _judge(stub_server.base_url)
    out = _judged(tally, judge, N)
    assert out["scores"] == [1.0] * N
    assert dict(tally.built) == {}
    assert dict(tally.assembled) == {
        "Message": N,  # the user message; the system message is built once per text
        "Request": N,
        "Completion": N,
        "Usage": N,  # the completion's, already the billed one (one attempt)
        "Judgment": N,
    }
    assert dict(tally.copied) == {}
    assert dict(tally.constructed) == {}


@pytest.mark.slow
def test_a_judgment_is_one_backend_call_through_one_retry_layer_and_no_parse(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    tally = Tally(monkeypatch)
    tally.count_calls(OpenAIModel, "_send")
    tally.count_calls(RetryModel, "complete")
    tally.count_calls(Template, "_read")
    tally.count_calls(OpenAIModel, "_read_body")  # the capped piecewise read: not needed
    tally.count_calls(LoopSessions, "get")  # the open session is found without a coroutine
    judge = _judge(stub_server.base_url)
    stub_server.reset()
    out = _judged(tally, judge, N)
    assert out["scores"] == [1.0] * N
    assert stub_server.count() == N + 2  # the warm-up's two, then one request each
    # the verdict "Correct" was read in the warm-up: every judgment reuses that reading
    assert dict(tally.calls) == {"OpenAIModel._send": N, "RetryModel.complete": N}


@pytest.mark.slow
def test_a_bounded_judge_that_fell_back_to_text_builds_the_same(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reward judges' shape: ``output="auto"`` against a server that answers text
    (JSON is turned off after a few replies, and the text system message is built once),
    under a concurrency bound alone (no pacing schedule, no context manager per call)."""
    from jurist.models import LimitedModel, with_limits
    from jurist.models._stack import limits_layer

    tally = Tally(monkeypatch)
    tally.install()
    tally.count_calls(LimitedModel, "_slot")
    tally.count_calls(LimitedModel, "reserve")
    model = jurist.get_model("openai:stub", base_url=stub_server.base_url, api_key="x")
    bounded = with_limits(model, limits_layer(max_concurrency=8))
    judge = jurist.LLMJudge(bounded, template=throughput.TEMPLATE)  # output="auto"
    assert judge.json
    prompts, responses = throughput.make_workload(N)
    judge.judge_responses_sync(prompts[:4], responses[:4], retries=0, concurrency=1)
    tally.on = True
    out = judge.judge_responses_sync(prompts, responses, retries=0, concurrency=8)
    tally.on = False
    assert out["scores"] == [1.0] * N
    assert dict(tally.built) == {}
    assert dict(tally.assembled) == {
        "Message": N,
        "Request": N,
        "Completion": N,
        "Usage": N,
        "Judgment": N,
    }
    assert dict(tally.copied) == {} and dict(tally.constructed) == {}
    assert dict(tally.calls) == {}


def test_a_retried_call_still_counts_its_attempts() -> None:
    """RetryModel's first-try fast path returns the completion as it is; a call that was
    retried is still copied with its attempts, so the fast path hides no retry."""
    import asyncio

    from jurist.errors import APIConnectionError
    from jurist.models import MockModel
    from jurist.types import Message, Request

    async def no_sleep(_seconds: float) -> None:
        return None

    dropped = APIConnectionError("dropped", model="mock:flaky")
    inner = MockModel("flaky", outputs=[dropped, "Correct", "Correct"])
    model = RetryModel(inner, max_retries=2, sleep=no_sleep)
    request = Request(messages=(Message(role="user", content="q"),))

    async def twice() -> tuple[int, int, int, int]:
        retried = await model.complete(request)
        first_try = await model.complete(request)
        return (
            retried.attempts,
            retried.billed_usage.attempts,
            first_try.attempts,
            first_try.billed_usage.attempts,
        )

    assert asyncio.run(twice()) == (2, 2, 1, 1)
    assert inner.calls == 3
