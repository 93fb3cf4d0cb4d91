"""The LangChain adapter, through jurist.get_model, on langchain_core's own fake chat models."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

import jurist
from jurist.errors import (
    APIConnectionError,
    APITimeoutError,
    CapabilityError,
    ConfigError,
    ModelError,
    RateLimitError,
)
from jurist.models._langchain import LangChainModel, is_langchain_model
from jurist.types import Message, Request


def ask(**options: Any) -> Request:
    messages = (
        Message(role="system", content="You are a judge."),
        Message(role="user", content="Is Paris the capital of France?"),
        Message(role="assistant", content="Let me think."),
        Message(role="user", content="Answer Yes or No."),
    )
    return Request(messages=messages, **options)


class RecordingChatModel(BaseChatModel):
    """A chat model that declares OpenAI-style fields and records what it was called with."""

    model_name: str = "recorder-1"
    temperature: float = 0.7
    max_tokens: int | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    reply: AIMessage = AIMessage(content="Yes")
    fail_with: Exception | None = None
    calls: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append({"messages": messages, "stop": stop, **kwargs})
        if self.fail_with is not None:
            raise self.fail_with
        return ChatResult(generations=[ChatGeneration(message=self.reply)])


async def test_fake_list_model_through_get_model() -> None:
    llm = FakeListChatModel(responses=["Yes", "No"])
    assert is_langchain_model(llm)
    model = jurist.get_model(llm)
    assert isinstance(model, LangChainModel)
    assert model.provider == "langchain"
    assert model.name == "FakeListChatModel"
    first = await model.complete(ask())
    second = await model.complete(ask(temperature=0.0, max_tokens=3))
    assert (first.text, second.text) == ("Yes", "No")
    assert first.usage.calls == 1
    assert first.latency >= 0
    assert first.logprobs is None


async def test_generic_fake_model_usage_logprobs_and_finish_reason() -> None:
    reply = AIMessage(
        content="Yes",
        usage_metadata={
            "input_tokens": 12,
            "output_tokens": 1,
            "total_tokens": 13,
            "input_token_details": {"cache_read": 4},
        },
        response_metadata={
            "finish_reason": "stop",
            "model_name": "gpt-4o-mini-2024-07-18",
            "logprobs": {
                "content": [
                    {
                        "token": "Yes",
                        "logprob": -0.1,
                        "bytes": [89, 101, 115],
                        "top_logprobs": [
                            {"token": "Yes", "logprob": -0.1, "bytes": None},
                            {"token": "No", "logprob": -2.4, "bytes": None},
                        ],
                    }
                ]
            },
        },
    )
    model = jurist.get_model(GenericFakeChatModel(messages=iter([reply, reply])), name="judge")
    assert model.name == "judge"
    out = await model.complete(ask(logprobs=True, top_logprobs=2))
    assert out.text == "Yes"
    assert out.usage.prompt_tokens == 12 and out.usage.completion_tokens == 1
    assert out.usage.cached_tokens == 4
    assert out.finish_reason == "stop"
    assert out.model == "gpt-4o-mini-2024-07-18"
    assert out.logprobs is not None
    assert out.logprobs[0].token == "Yes" and out.logprobs[0].logprob == -0.1
    assert [(t.token, t.logprob) for t in out.logprobs[0].top] == [("Yes", -0.1), ("No", -2.4)]
    plain = await model.complete(ask())  # logprobs not asked: none returned
    assert plain.logprobs is None


async def test_messages_are_converted() -> None:
    llm = RecordingChatModel()
    await jurist.get_model(llm).complete(ask())
    sent = llm.calls[0]["messages"]
    assert [type(m) for m in sent] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert [m.content for m in sent] == [m.content for m in ask().messages]


async def test_only_explicit_and_declared_params_are_forwarded() -> None:
    llm = RecordingChatModel()
    model = jurist.get_model(llm)
    await model.complete(ask())
    assert llm.calls[-1]["stop"] is None
    assert not {"temperature", "max_tokens", "logprobs", "seed"} & set(llm.calls[-1])
    await model.complete(
        ask(temperature=0.0, max_tokens=5, stop=("\n",), seed=3, logprobs=True, top_logprobs=4)
    )
    call = llm.calls[-1]
    assert call["temperature"] == 0.0 and call["max_tokens"] == 5
    assert call["stop"] == ["\n"]
    assert call["logprobs"] is True and call["top_logprobs"] == 4
    assert "seed" not in call  # the model declares no seed field
    await model.complete(ask(extra={"reasoning_effort": "low"}))
    assert llm.calls[-1]["reasoning_effort"] == "low"

    quiet = LangChainModel(RecordingChatModel(), forward_params=False)
    await quiet.complete(ask(temperature=1.0, stop=("x",)))
    assert quiet.chat_model.calls[-1]["stop"] is None
    assert "temperature" not in quiet.chat_model.calls[-1]


async def test_bound_model_name_identity_and_capabilities() -> None:
    llm = RecordingChatModel(model_name="gpt-judge", temperature=0.2)
    bound = llm.bind(logprobs=True)
    assert is_langchain_model(bound)
    model = jurist.get_model(bound)
    assert model.name == "gpt-judge"
    assert model.spec == "langchain:gpt-judge"
    ident = model.identity()
    assert ident["provider"] == "langchain" and ident["name"] == "gpt-judge"
    assert ident["class"].endswith("RecordingChatModel")
    assert ident["defaults"]["temperature"] == 0.2
    assert ident["bound"] == {"logprobs": True}
    assert model.capabilities.logprobs and model.capabilities.top_logprobs == 20
    assert model.capabilities.remote
    await model.complete(ask())
    assert llm.calls[-1]["logprobs"] is True  # the binding's kwargs still apply
    fake = jurist.get_model(FakeListChatModel(responses=["x"]))
    assert not fake.capabilities.logprobs


async def test_content_blocks_and_reasoning() -> None:
    reply = AIMessage(
        content=[
            {"type": "thinking", "thinking": "Paris is the capital."},
            {"type": "text", "text": "Ye"},
            {"type": "text", "text": "s"},
        ],
        response_metadata={"stop_reason": "max_tokens"},
    )
    out = await jurist.get_model(RecordingChatModel(reply=reply)).complete(ask())
    assert out.text == "Yes"
    assert out.reasoning == "Paris is the capital."
    assert out.finish_reason == "length"


class _RateLimited(Exception):
    status_code = 429


class _ConnectionFailed(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_RateLimited("slow down"), RateLimitError),
        (_ConnectionFailed("refused"), APIConnectionError),
        (TimeoutError("late"), APITimeoutError),
        (ValueError("bad"), ModelError),
    ],
)
async def test_errors_map_to_jurist_errors(exc: Exception, expected: type[Exception]) -> None:
    model = jurist.get_model(RecordingChatModel(fail_with=exc))
    with pytest.raises(expected) as info:
        await model.complete(ask())
    assert type(exc).__name__ in str(info.value)


async def test_timeout_and_unsupported_requests() -> None:
    class Slow(FakeListChatModel):
        async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(5)

    with pytest.raises(APITimeoutError):
        await jurist.get_model(Slow(responses=["x"])).complete(ask(timeout=0.05))
    model = jurist.get_model(FakeListChatModel(responses=["x"]))
    with pytest.raises(CapabilityError):
        await model.complete(ask(json_schema={"type": "object"}))
    with pytest.raises(ConfigError, match="base_url"):
        jurist.get_model(FakeListChatModel(responses=["x"]), base_url="http://x")


def test_non_langchain_objects_are_refused() -> None:
    assert not is_langchain_model(object())
    assert not is_langchain_model("openai:gpt-4o-mini")
    with pytest.raises(ConfigError, match="cannot use"):
        jurist.get_model(object())


def test_detection_does_not_import_langchain() -> None:
    code = (
        "import sys, jurist\n"
        "from jurist.models._langchain import is_langchain_model\n"
        "class Fake: pass\n"
        "assert not is_langchain_model(Fake())\n"
        "assert not any(m.startswith('langchain') for m in sys.modules), sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class _Response:
    headers = {"Retry-After": "3", "x-other": "1"}  # noqa: RUF012


class _RateLimitedWithHeaders(Exception):
    status_code = 429
    response = _Response()


async def test_provider_retry_after_is_kept() -> None:
    model = jurist.get_model(RecordingChatModel(fail_with=_RateLimitedWithHeaders("slow")))
    with pytest.raises(RateLimitError) as info:
        await model.complete(ask())
    assert info.value.retry_after == 3.0
