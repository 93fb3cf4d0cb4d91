"""The hot path's assembled objects are the objects a validated construction makes.

``jurist.types.assembled`` builds a :class:`~jurist.types.Usage`, :class:`Completion`,
:class:`Request`, :class:`Judgment` or user :class:`Message` without validating its values
(the per-call path of the openai backend, of ``LLMJudge`` and of a template's rendering).
Each object it makes there must be equal to the validated construction of the same values,
dump alike (JSON, Python, repr), keep every field in declaration order with the declared
types, copy and pickle as a validated one does, and count every field as set. These tests
drive the real backend against a real HTTP server on loopback with answers of every shape
it reads, and the judge through it.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from jurist import LLMJudge, get_model
from jurist.models import Model, WrapperModel
from jurist.types import Completion, Judgment, Message, Request, Usage, assembled
from tests._loopback import Loopback


def assert_validated_alike(obj: Any) -> None:
    """``obj`` is what validating its own values builds, in every way that shows."""
    cls = type(obj)
    assert list(obj.__dict__) == list(cls.model_fields)  # every field, declaration order
    again = cls.model_validate(obj.model_dump())
    assert again == obj
    assert again.model_dump() == obj.model_dump()
    assert again.model_dump_json() == obj.model_dump_json()
    assert repr(again) == repr(obj)
    for name in cls.model_fields:  # the same types, not only equal values (1 == 1.0)
        assert type(getattr(again, name)) is type(getattr(obj, name)), name
    assert pickle.loads(pickle.dumps(obj)) == obj
    copied = obj.model_copy(update={})
    assert copied == obj and copied is not obj
    assert obj.model_fields_set <= set(cls.model_fields)  # all of them, when assembled


# -- assembled() itself ------------------------------------------------------------------


def test_assembled_fills_defaults_and_counts_every_field_as_set() -> None:
    usage = assembled(Usage, {"prompt_tokens": 3, "calls": 1})
    assert usage == Usage(prompt_tokens=3, calls=1)
    everything = set(Usage.model_fields)
    assert usage.model_fields_set == everything  # as for one validated from a full dump
    assert_validated_alike(usage)
    copied = usage.model_copy(update={"calls": 2})
    assert copied.calls == 2 and copied.model_fields_set == everything
    assert assembled(Usage, {}).model_fields_set == everything  # the shared set is unchanged
    assert usage.model_dump(exclude_unset=True) == usage.model_dump()


def test_assembled_refuses_a_model_that_is_not_frozen() -> None:
    from pydantic import BaseModel

    class Open(BaseModel):
        x: int = 0

    with pytest.raises(TypeError, match="frozen models only"):
        assembled(Open, {"x": 1})


def test_assembled_makes_a_factory_default_per_object() -> None:
    user = (Message(role="user", content="q"),)
    first, second = assembled(Request, {"messages": user}), assembled(Request, {"messages": user})
    assert first.extra == {} and first.extra is not second.extra
    assert first == Request(messages=user)
    assert_validated_alike(first)


def test_assembled_objects_stay_frozen() -> None:
    usage = assembled(Usage, {"calls": 1})
    with pytest.raises(ValueError, match="frozen"):
        usage.calls = 2


# -- the openai backend's completions, from a real server on loopback ---------------------

ANSWERS: dict[str, dict[str, Any]] = {
    "plain": {
        "model": "stub",
        "choices": [{"message": {"content": "Correct"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 1, "total_tokens": 121},
    },
    "no-usage": {"choices": [{"message": {"content": "Incorrect"}}]},
    "thinking": {
        "model": "thinker",
        "choices": [
            {
                "message": {"content": "Correct", "reasoning_content": "2 + 2 is 4."},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 30,
            "completion_tokens": 12,
            "prompt_tokens_details": {"cached_tokens": 16},
            "completion_tokens_details": {"reasoning_tokens": 10},
        },
    },
    "logprobs": {
        "model": "stub",
        "choices": [
            {
                "message": {"content": "Correct"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {
                            "token": "Correct",
                            "logprob": -0.25,
                            "top_logprobs": [
                                {"token": "Correct", "logprob": -0.25},
                                {"token": "Incorrect", "logprob": None},
                            ],
                        }
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1},
    },
    "float-counts": {  # a server that writes whole counts as floats
        "choices": [{"message": {"content": "Correct"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 7.0, "completion_tokens": 2.0},
    },
    "key-as-model": {  # a key echoed where the model name goes is not kept
        "model": "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a",
        "choices": [{"message": {"content": "Correct"}}],
    },
    "null-content": {"choices": [{"message": {"content": None}, "finish_reason": "stop"}]},
}


WRONG_TYPES = {"bad-reasoning": {"choices": [{"message": {"content": "x", "reasoning": [1]}}]}}


@pytest.fixture(scope="module")
def answers_url() -> Iterator[str]:
    async def chat(request: web.Request) -> web.Response:
        shape = request.match_info["shape"]
        return web.json_response(ANSWERS.get(shape) or WRONG_TYPES[shape])

    with Loopback(chat, path="/{shape}/v1/chat/completions", shutdown_timeout=1) as server:
        yield f"http://127.0.0.1:{server.port}"


def _asked(base_url: str) -> Completion:
    """One call of the openai backend (no retries) to ``base_url``."""
    model = get_model("openai:stub", base_url=base_url, api_key="x", max_retries=0)

    async def ask() -> Completion:
        try:
            return await model.complete(Request(messages=(Message(role="user", content="q"),)))
        finally:
            await model.aclose()

    return asyncio.run(ask())


@pytest.mark.parametrize("shape", sorted(ANSWERS))
def test_each_completion_is_what_validation_makes(answers_url: str, shape: str) -> None:
    completion = _asked(f"{answers_url}/{shape}/v1")
    assert_validated_alike(completion)
    assert_validated_alike(completion.usage)
    answer = ANSWERS[shape]
    sent = answer.get("usage", {})
    assert completion.usage.prompt_tokens == int(sent.get("prompt_tokens", 0))
    assert completion.usage.calls == completion.usage.attempts == 1
    assert completion.model != "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a"
    if shape == "thinking":
        assert (completion.reasoning, completion.usage.cached_tokens) == ("2 + 2 is 4.", 16)
        assert completion.usage.reasoning_tokens == 10
    if shape == "logprobs":
        assert completion.logprobs is not None
        assert completion.logprobs[0].top[1].logprob == float("-inf")


def test_an_answer_of_the_wrong_types_is_a_model_error(answers_url: str) -> None:
    from jurist.errors import ModelError

    with pytest.raises(ModelError, match="unexpected shape"):
        _asked(f"{answers_url}/bad-reasoning/v1")


# -- the judge's requests and judgments --------------------------------------------------


class Recorder(WrapperModel):
    """Keeps every request the judge sends through it (composition, like any wrapper)."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        return await self.wrapped.complete(request)


@pytest.mark.parametrize(
    ("shape", "options"),
    [
        ("plain", {}),
        ("thinking", {"temperature": 0.7, "extra_body": {"top_k": 5}}),
        ("no-usage", {"explanations": True, "max_tokens": 64}),
    ],
)
def test_the_judges_requests_and_judgments_are_what_validation_makes(
    answers_url: str, shape: str, options: dict[str, Any]
) -> None:
    backend = get_model("openai:stub", base_url=f"{answers_url}/{shape}/v1", api_key="x")
    recorder = Recorder(backend)
    judge = LLMJudge(recorder, template="true_false", output="text", **options)
    items = [{"prompt": f"Is {n} even?", "response": "Yes"} for n in range(3)]

    async def run() -> list[Judgment]:
        try:
            return [await judge.judge(item) for item in items]
        finally:
            await backend.aclose()

    judgments = asyncio.run(run())
    expected = 0.0 if shape == "no-usage" else 1.0  # that server answers "Incorrect"
    assert [j.score for j in judgments] == [expected] * 3
    for judgment in judgments:
        assert_validated_alike(judgment)
        assert isinstance(judgment.score, float)
    assert len(recorder.requests) == 3
    for request in recorder.requests:
        assert_validated_alike(request)
        for message in request.messages:  # the user message is assembled by the template
            assert_validated_alike(message)
        assert request.temperature == options.get("temperature", 0.0)
        assert request.extra == options.get("extra_body", {})
        # the cache key is the validated request's, and it is JSON as before
        validated = Request.model_validate(request.model_dump())
        assert request.cache_fields() == validated.cache_fields()
        json.dumps(request.cache_fields(), sort_keys=True)
