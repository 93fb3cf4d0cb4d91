"""Conversation items and images, end to end against a loopback OpenAI-compatible server
that checks the structure of every message it receives (tests/_chat_server.py).

One conversation (a system prompt, a user turn with an image, an assistant tool call, a
long tool result, the final answer) goes through the four ways jurist judges: judge
(LLMJudge), compare (PairwiseJudge), grade (CriterionGrader) and a reward
(llm_as_judge_reward); each test reads what the server got.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jurist
from jurist.data import local_image
from jurist.rewards import RewardBackend, llm_as_judge_reward
from tests._chat_server import ChatServer, image_parts, problem, user_text


def _png() -> bytes:
    """A real 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _answer(body: dict[str, Any]) -> str:
    model, structured = body["model"], "response_format" in body
    if model == "judge":
        return '{"verdict": 4}' if structured else "4"
    if model == "pair":
        return '{"verdict": "A"}' if structured else "[[A]]"
    if model == "reward":
        return "Score: 0.9"
    if model == "grader":
        return json.dumps({"c1": {"verdict": "MET"}})
    return "?"


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer(_answer) as s:
        yield s


@pytest.fixture()
def image(tmp_path: Path) -> Path:
    path = tmp_path / "chart.png"
    path.write_bytes(_png())
    return path


LONG = "row," * 1500  # 6000 characters of tool output


def _conversation(image: Path, final: str = "Paris is at 18 C.") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a weather agent."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this chart, and the weather in Paris?"},
                # the caller's own file, permitted explicitly (a plain path is not read)
                {"type": "image_url", "image_url": {"url": local_image(image)}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": LONG},
        {"role": "assistant", "content": final},
    ]


def _model(server: ChatServer, name: str) -> jurist.Model:
    return jurist.get_model(f"openai:{name}", base_url=server.base_url, api_key="x")


def _check_body(body: dict[str, Any], image: Path, *, images: int = 1) -> str:
    assert problem(body) is None
    text = user_text(body)
    assert 'call_1: get_weather({"city":"Paris"})' in text  # the tool call, rendered
    assert "call_1 (get_weather): row,row" in text  # its result, named
    assert "more characters truncated]" in text and LONG not in text  # cut, visibly
    assert "[image 1]" in text
    parts = image_parts(body)
    assert len(parts) == images
    url = parts[0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == image.read_bytes()  # the file's bytes
    assert body["messages"][-1]["content"][0]["type"] == "text"  # the text, then images
    return text


def test_judge_sends_tool_calls_and_image_parts(server: ChatServer, image: Path) -> None:
    before = len(server.bodies)
    judge = jurist.LLMJudge(_model(server, "judge"), template="likert")
    results = judge.judge_sync([{"messages": _conversation(image)}])
    assert results[0].error is None and results[0].score == 0.75
    (body,) = server.bodies[before:]
    text = _check_body(body, image)
    # the last reply is the response; the rest (system, user, tool turn) is context
    answer = text.split("<answer>")[1]
    assert "Paris is at 18 C." in answer and "<system>" in text.split("<answer>")[0]
    assert not server.rejected


def test_compare_two_conversations_both_orders(server: ChatServer, image: Path) -> None:
    before = len(server.bodies)
    pair = jurist.PairwiseJudge(_model(server, "pair"), template="mt_bench_pair", swap=True)
    item = {
        "messages_a": _conversation(image),
        "messages_b": _conversation(image, final="No idea."),
    }
    out = pair.judge_one_sync(item)
    assert out.error is None
    bodies = server.bodies[before:]
    assert len(bodies) == 2  # both orders
    first, swapped = (_check_body(b, image) for b in bodies)
    assert first.index("Paris is at 18 C.") < first.index("No idea.")
    assert swapped.index("No idea.") < swapped.index("Paris is at 18 C.")
    assert not server.rejected


def test_grade_a_conversation_with_a_rubric(server: ChatServer, image: Path) -> None:
    before = len(server.bodies)
    rubric = jurist.Rubric.from_dict([{"name": "answers", "requirement": "Gives the weather"}])
    grader = jurist.CriterionGrader(judges=[_model(server, "grader")], shuffle_options=False)
    report = grader.grade_sync(rubric, _conversation(image))
    assert report.error is None and report.score == 1.0
    (body,) = server.bodies[before:]
    text = _check_body(body, image)
    query, submission = text.split("<submission>")
    # the judged turn is the agent's whole reply (tool call, result, answer); the query
    # is what came before it
    assert "Paris is at 18 C." in submission and "get_weather" in submission
    assert "[image 1]" in query and "get_weather" not in query
    assert not server.rejected


def test_reward_over_a_multi_turn_rollout(server: ChatServer, image: Path) -> None:
    before = len(server.bodies)
    backend = RewardBackend(_model(server, "reward"), max_tokens=16)
    rollout = _conversation(image)
    out = llm_as_judge_reward(
        "Paris is at 18 C.", "18 C in Paris", llm_backend=backend, messages=rollout[:-1]
    )
    assert out["error"] is None and out["reward"] == 0.9
    (body,) = server.bodies[before:]
    text = _check_body(body, image)
    assert "<response>\nParis is at 18 C.\n</response>" in text
    assert not server.rejected


def test_images_field_urls_and_details(server: ChatServer, image: Path) -> None:
    before = len(server.bodies)
    judge = jurist.LLMJudge(_model(server, "judge"), template="likert", output="text")
    item = {
        "prompt": "Describe both pictures.",
        "response": "A chart and a cat.",
        "images": [local_image(image), {"url": "https://example.com/cat.png", "detail": "low"}],
    }
    assert judge.judge_sync([item])[0].score == 0.75
    (body,) = server.bodies[before:]
    parts = image_parts(body)
    assert [p["image_url"].get("detail") for p in parts] == [None, "low"]
    assert parts[1]["image_url"]["url"] == "https://example.com/cat.png"
    assert not server.rejected


def test_a_text_only_model_refuses_images_and_sends_nothing(
    server: ChatServer, image: Path
) -> None:
    before = len(server.bodies)
    model = jurist.get_model("openai:judge", base_url=server.base_url, api_key="x", images=False)
    assert model.capabilities.images is False
    judge = jurist.LLMJudge(model, template="likert")
    (result,) = judge.judge_sync([{"messages": _conversation(image)}])
    assert result.score is None
    assert result.error is not None and result.error.startswith("capability: openai:judge")
    assert str(image.resolve()) in result.error  # the item's image, named
    assert len(server.bodies) == before  # nothing was sent without its image


def test_batch_rewards_take_each_rollouts_conversation(server: ChatServer, image: Path) -> None:
    from jurist.rewards import llm_as_judge_rewards

    before = len(server.bodies)
    backend = RewardBackend(_model(server, "reward"), max_tokens=16)
    rollout = _conversation(image)
    out = llm_as_judge_rewards(
        ["Paris is at 18 C.", "No idea."], ["18 C", "18 C"], backend, messages=[rollout[:-1], None]
    )
    assert [r["reward"] for r in out] == [0.9, 0.9]
    bodies = sorted(server.bodies[before:], key=lambda b: "No idea." in user_text(b))
    _check_body(bodies[0], image)
    assert image_parts(bodies[1]) == [] and "<question>" not in user_text(bodies[1])
    assert not server.rejected
