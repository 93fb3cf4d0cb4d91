"""The openai backend's prefill option against loopback servers: the request bodies of
both modes, the chat template rendered on the client, and scores made from the first
position's alternatives."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

import jurist
from jurist.errors import ConfigError
from jurist.models import Model
from jurist.models._openai import OpenAIModel
from jurist.models._prefill import PrefillOpenAIModel
from jurist.models._prefill_wire import CHATML, render_chat
from jurist.types import Message, Reasoning, Request
from tests._loopback import Loopback

MESSAGES = (
    Message(role="system", content="Grade."),
    Message(role="user", content="Is 2 + 2 = 4 right?"),
)


class Recorder:
    """Answers every request with ``answer`` and keeps the bodies."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        return web.json_response(self.answer)


CHAT_ANSWER = {
    "choices": [
        {
            "message": {"role": "assistant", "content": " Inc"},
            "logprobs": {
                "content": [
                    {
                        "token": " Inc",
                        "logprob": math.log(0.6),
                        "top_logprobs": [
                            {"token": " Inc", "logprob": math.log(0.6)},
                            {"token": " Correct", "logprob": math.log(0.3)},
                            {"token": " I", "logprob": math.log(0.05)},
                        ],
                    }
                ]
            },
            "finish_reason": "length",
        }
    ],
    "usage": {"prompt_tokens": 31, "completion_tokens": 1},
}
LEGACY_ANSWER = {
    "choices": [
        {
            "text": " 4",
            "logprobs": {
                "tokens": [" 4"],
                "token_logprobs": [math.log(0.5)],
                "top_logprobs": [{" 4": math.log(0.5), " 5": math.log(0.25), "\n": -1.0}],
            },
            "finish_reason": "length",
        }
    ],
    "usage": {"prompt_tokens": 17, "completion_tokens": 1},
}


@pytest.fixture
def chat_server() -> Iterator[tuple[Loopback, Recorder]]:
    recorder = Recorder(CHAT_ANSWER)
    with Loopback(recorder) as server:
        yield server, recorder


@pytest.fixture
def completions_server() -> Iterator[tuple[Loopback, Recorder]]:
    recorder = Recorder(LEGACY_ANSWER)
    with Loopback(recorder, path="/v1/completions") as server:
        yield server, recorder


def test_chat_mode_continues_the_final_assistant_message(
    chat_server: tuple[Loopback, Recorder],
) -> None:
    server, recorder = chat_server
    model = jurist.get_model("openai:j", base_url=server.base_url, prefill="chat", max_retries=0)
    assert isinstance(model, PrefillOpenAIModel) and model.capabilities.candidate_scores
    prefixed = (*MESSAGES, Message(role="assistant", content="Verdict:"))
    request = Request(messages=prefixed, reasoning=Reasoning(effort="none"))
    scored = asyncio.run(
        model.candidate_scores(request, [" Correct", " Incorrect", " I am not sure"])
    )
    (body,) = recorder.bodies
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["messages"][-1] == {"role": "assistant", "content": "Verdict:"}
    assert (body["max_tokens"], body["logprobs"], body["top_logprobs"]) == (1, True, 20)
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    # " Inc" begins only "Incorrect"; " I" begins two verdicts and counts for neither
    assert math.isclose(scored.logprobs[" Incorrect"], math.log(0.6))
    assert math.isclose(scored.logprobs[" Correct"], math.log(0.3))
    assert " I am not sure" not in scored.logprobs
    assert math.isclose(scored.coverage, 0.9)
    assert scored.usage.prompt_tokens == 31 and scored.usage.calls == 1


def test_chat_mode_without_a_prefix_asks_for_the_answers_first_token(
    chat_server: tuple[Loopback, Recorder],
) -> None:
    server, recorder = chat_server
    model = jurist.get_model("openai:j", base_url=server.base_url, prefill="chat", max_retries=0)
    asyncio.run(model.candidate_scores(Request(messages=MESSAGES), ["Correct", "Incorrect"]))
    (body,) = recorder.bodies
    assert "continue_final_message" not in body and "chat_template_kwargs" not in body


def _completions_model(server: Loopback, chat_template: str) -> Model:
    """A model on ``server`` scoring verdicts after a prompt written from ``chat_template``."""
    return jurist.get_model(
        "openai:j",
        base_url=server.base_url,
        prefill="completions",
        chat_template=chat_template,
        max_retries=0,
    )


def test_completions_mode_writes_the_prompt_from_the_template(
    completions_server: tuple[Loopback, Recorder],
) -> None:
    server, recorder = completions_server
    model = _completions_model(server, "chatml")
    prefixed = (*MESSAGES, Message(role="assistant", content="Score:"))
    scored = asyncio.run(model.candidate_scores(Request(messages=prefixed), [" 1", " 4", " 5"]))
    (body,) = recorder.bodies
    assert body["prompt"] == (
        "<|im_start|>system\nGrade.<|im_end|>\n<|im_start|>user\nIs 2 + 2 = 4 right?<|im_end|>\n"
        "<|im_start|>assistant\nScore:"
    )
    assert (body["max_tokens"], body["logprobs"], body["temperature"]) == (1, 20, 0.0)
    assert set(scored.logprobs) == {" 4", " 5"}
    assert math.isclose(scored.probs[" 4"], 2 / 3) and math.isclose(scored.coverage, 0.75)


def test_a_judge_on_the_prefill_model_scores_in_one_request(
    completions_server: tuple[Loopback, Recorder],
) -> None:
    server, recorder = completions_server
    model = _completions_model(server, CHATML)
    judge = jurist.LLMJudge(model, template="likert", scoring="logprobs", output="text")
    result = judge.judge_sync([{"prompt": "2+2?", "response": "4"}])[0]
    assert len(recorder.bodies) == 1  # no text generated: the verdicts scored at once
    assert recorder.bodies[0]["prompt"].endswith("<|im_start|>assistant\n")
    assert result.scoring == "logprobs" and result.verdict == 4.0
    assert result.distribution is not None
    assert math.isclose(result.distribution["4"], 2 / 3)


def test_options_are_checked_and_kept() -> None:
    url = "http://127.0.0.1:9/v1"
    plain = jurist.get_model("openai:j", base_url=url, max_retries=0)
    assert type(plain) is OpenAIModel and not plain.capabilities.candidate_scores
    model = jurist.get_model(
        "openai:j", base_url=url, prefill="completions", chat_template="chatml", max_retries=0
    )
    assert model.rebuild_options()["prefill"] == "completions"
    assert model.rebuild_options()["chat_template"] == "chatml"
    assert model.identity()["prefill"] == "completions"
    assert model.identity() != plain.identity()
    with pytest.raises(ConfigError, match="give the model's chat_template"):
        jurist.get_model("openai:j", base_url=url, prefill="completions")
    with pytest.raises(ConfigError, match="must be 'completions'"):
        jurist.get_model("openai:j", base_url=url, prefill="raw", chat_template="chatml")
    with pytest.raises(ConfigError, match="option of prefill='completions'"):
        jurist.get_model("openai:j", base_url=url, chat_template="chatml")
    with pytest.raises(ConfigError, match="neither 'chatml', Jinja text"):
        jurist.get_model("openai:j", base_url=url, prefill="completions", chat_template="x.j2")


def test_the_template_gets_the_thinking_switch() -> None:
    template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: "
        "{% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}"
        "{% endif %}"
    )
    rows = [{"role": "user", "content": "q"}]
    assert (
        render_chat(template, rows, enable_thinking=False) == "user: q\nassistant: <think></think>"
    )
    assert render_chat(template, rows) == "user: q\nassistant: "
