"""Trajectories: the typed model, the span importers (OpenTelemetry GenAI, OpenInference,
the older gen_ai.prompt/completion events), the renderer and the errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jurist.errors import DataError
from jurist.trajectories import (
    Trajectory,
    load_traces,
    render_step,
    render_trajectory,
    trajectory_from_item,
    trajectory_items,
)

DATA = Path(__file__).parents[1] / "fixtures" / "traces"
TASK = "Book the cheapest direct flight from Madrid to Rome on 3 April 2026 for one adult."


def _by_id() -> dict[str, Trajectory]:
    files = sorted(DATA.glob("flights_*"))
    return {t.id or "": t for t in load_traces(files)}


def test_genai_trace_rebuilds_the_conversation_with_tool_calls_and_results() -> None:
    good, hasty = load_traces(DATA / "flights_genai.json")
    assert good.id == "5b8efff798038103d269b633813fc60c"
    assert [m.role for m in good.messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert good.messages[0].content is not None and "travel assistant" in good.messages[0].content
    assert good.task == TASK
    assert good.tool_names == ["search_flights", "book_flight"]
    search, book = good.tool_uses
    assert search.arguments == {
        "origin": "MAD", "destination": "FCO", "date": "2026-04-03", "direct": True, "adults": 1,
    }  # fmt: skip
    assert search.result is not None and json.loads(search.result)["flights"][0]["price_eur"] == 89
    assert (book.call_id, book.arguments) == ("call_b1", {"flight_id": "IB3234", "passengers": 1})
    assert good.final_answer is not None and good.final_answer.endswith("Booking reference X7K2LQ.")
    assert len(good.steps) == 3
    assert good.metadata["input_tokens"] == 420 + 1210 + 1330
    assert good.metadata["models"] == ["gpt-4o-mini-2024-07-18"]
    # the second trace's chat history leaves the tool result out: the execute_tool span gives it
    assert hasty.tool_names == ["book_flight"]
    assert hasty.tool_uses[0].result is not None and "QW83PZ" in hasty.tool_uses[0].result


def test_openinference_trace_uses_the_root_input_and_output() -> None:
    (t,) = load_traces(DATA / "flights_openinference.json")
    assert t.task == TASK
    assert t.final_answer is not None and t.final_answer.startswith("Booked Ryanair FR8312")
    assert t.tool_names == ["search_flights", "book_flight"]
    assert t.tool_uses[1].call_id == "toolu_02"
    assert t.tool_uses[1].result is not None and "RY55TT" in t.tool_uses[1].result
    assert t.messages[3].role == "tool" and t.messages[3].tool_call_id == "toolu_01"
    assert t.metadata["models"] == ["claude-3-5-haiku"]


def test_legacy_prompt_and_completion_events_in_json_lines() -> None:
    (t,) = load_traces(DATA / "flights_legacy.jsonl")
    assert t.tool_names == ["search_flights"] * 3 + ["book_flight"]
    assert len(t.steps) == 5 and t.final_answer is not None and "K9M2DD" in t.final_answer
    # the history each call resends extends the conversation once, not four times
    assert sum(1 for m in t.messages if m.role == "user") == 1


def test_flat_legacy_attributes_and_sdk_json(tmp_path: Path) -> None:
    span: dict[str, Any] = {
        "name": "openai.chat",
        "context": {"trace_id": "0xabc", "span_id": "0x01"},
        "parent_id": None,
        "start_time": "2026-03-14T10:00:00.000000Z",
        "end_time": "2026-03-14T10:00:01.000000Z",
        "attributes": {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Convert 250 USD to EUR",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "c1",
            "gen_ai.completion.0.tool_calls.0.name": "convert",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"amount": 250, "from": "USD"}',
        },
        "events": [],
    }
    path = tmp_path / "sdk.json"
    path.write_text(json.dumps([span]))
    (t,) = load_traces(path)
    assert t.task == "Convert 250 USD to EUR"
    assert t.tool_uses[0].arguments == {"amount": 250, "from": "USD"}
    assert t.tool_uses[0].result is None


def test_per_message_events(tmp_path: Path) -> None:
    """The gen_ai.{system,user,assistant,tool}.message and gen_ai.choice span events."""

    def event(name: str, **attrs: str) -> dict[str, Any]:
        kv = [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]
        return {"name": name, "timeUnixNano": "1", "attributes": kv}

    calls = (
        '[{"id": "c1", "type": "function", "function": {"name": "fx", "arguments": {"to": "EUR"}}}]'
    )
    span = {
        "traceId": "e1",
        "spanId": "s1",
        "name": "chat gpt-4o",
        "attributes": [{"key": "gen_ai.system", "value": {"stringValue": "openai"}}],
        "events": [
            event("gen_ai.system.message", content="Be brief."),
            event("gen_ai.user.message", content="250 USD in EUR?"),
            event("gen_ai.assistant.message", tool_calls=calls),
            event("gen_ai.tool.message", id="c1", content="231.0"),
            event("gen_ai.choice", message='{"role": "assistant", "content": "About 231 EUR."}'),
        ],
    }
    path = tmp_path / "events.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (t,) = load_traces(path)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.tool_uses[0].arguments == {"to": "EUR"} and t.tool_uses[0].result == "231.0"
    assert t.final_answer == "About 231 EUR."


def test_structured_attribute_values(tmp_path: Path) -> None:
    """gen_ai.input.messages recorded in structured form (arrayValue of kvlistValue)."""

    def kv(**values: Any) -> dict[str, Any]:
        return {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in values.items()]}}

    def text(value: str) -> dict[str, Any]:
        return {"stringValue": value}

    part = kv(type=text("text"), content=text("Hi there"))
    call = kv(type=text("tool_call"), id=text("c9"), name=text("lookup"),
              arguments=kv(q=text("x"), n={"intValue": "2"}))  # fmt: skip
    messages = {"arrayValue": {"values": [
        kv(role=text("user"), parts={"arrayValue": {"values": [part]}}),
    ]}}  # fmt: skip
    outputs = {"arrayValue": {"values": [
        kv(role=text("assistant"), parts={"arrayValue": {"values": [call]}}),
    ]}}  # fmt: skip
    span = {
        "traceId": "kv",
        "spanId": "s1",
        "name": "chat m",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": text("chat")},
            {"key": "gen_ai.input.messages", "value": messages},
            {"key": "gen_ai.output.messages", "value": outputs},
        ],
    }
    path = tmp_path / "kv.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    (t,) = load_traces(path)
    assert t.task == "Hi there"
    assert t.tool_uses[0].arguments == {"q": "x", "n": 2} and t.tool_uses[0].call_id == "c9"


def _otlp(attrs: dict[str, str], name: str = "chat m") -> dict[str, Any]:
    span = {
        "traceId": "t",
        "spanId": "s1",
        "name": name,
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            _otlp({"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{oops"}),
            r"bad\.json: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\] \(span 'chat m', id s1\): "
            r"gen_ai\.input\.messages is not valid JSON",
        ),
        (
            _otlp({"gen_ai.operation.name": "chat", "gen_ai.input.messages": '[{"parts": []}]'}),
            r"\(span 'chat m', id s1\): gen_ai\.input\.messages\[0\] is not a message with a role",
        ),
        (
            _otlp({"openinference.span.kind": "LLM", "llm.input_messages.0.message.content": "x"}),
            r"\(span 'chat m', id s1\): llm\.input_messages\.0\.message\.role is missing",
        ),
        (
            _otlp({"openinference.span.kind": "TOOL"}, name=""),
            r"\(span '', id s1\): a tool span without gen_ai\.tool\.name or tool\.name",
        ),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]},
         r"spans\[0\] \(span 'x'\): traceId and spanId are required"),
        ({"data": []}, r"bad\.json: neither OTLP JSON \(no 'resourceSpans'\) nor an SDK span"),
    ],
)  # fmt: skip
def test_malformed_traces_name_the_file_and_span(
    tmp_path: Path, doc: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=message):
        load_traces(path)


def test_a_bad_json_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    good = json.dumps(_otlp({"gen_ai.operation.name": "chat"}))
    path.write_text(good + "\n{not json\n")
    with pytest.raises(DataError, match=r"spans\.jsonl:2: not JSON"):
        load_traces(path)


def test_a_trace_with_nothing_to_judge_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(_otlp({"http.method": "GET"}, name="GET /")))
    with pytest.raises(DataError, match="trace t has no messages, tool calls or input"):
        load_traces(path)


def test_messages_validation_names_the_message() -> None:
    with pytest.raises(DataError, match=r"run 7: message 1: role: Input should be"):
        Trajectory.from_messages([{"role": "user", "content": "a"}, {"role": "bot"}], where="run 7")
    with pytest.raises(DataError, match=r"message 0, tool call 0: the tool call has no function"):
        Trajectory.from_messages([{"role": "assistant", "tool_calls": [{"id": "1"}]}])


def test_one_chat_message_model_for_conversations_and_trajectories() -> None:
    """A trajectory's messages are the conversation items' messages (one model, owned by
    jurist.templates): what one checks the other takes, and the renderers share it."""
    import jurist.templates as templates
    import jurist.trajectories as trajectories
    from jurist.templates import render_conversation

    assert trajectories.ChatMessage is templates.ChatMessage
    assert trajectories.ToolCall is templates.ToolCall
    t = _by_id()["5b8efff798038103d269b633813fc60c"]
    assert all(isinstance(m, templates.ChatMessage) for m in t.messages)
    assert "<tool_call>" in render_conversation(list(t.messages))
    # the flat form a trajectory's tool call was built from still builds one
    call = trajectories.ToolCall(id="c1", name="search", arguments={"q": "Rome"})
    assert (call.name, call.arguments, call.function.arguments) == (
        "search",
        {"q": "Rome"},
        '{"q":"Rome"}',
    )
    # trajectories keep what a trace may lack: a result with no call id, arguments that are
    # not JSON; a conversation item refuses both (the checked boundary of items)
    loose = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "x=1"}}]},
        {"role": "tool", "content": "r"},
    ]
    [use] = Trajectory.from_messages(loose).tool_uses
    assert (use.name, use.arguments, use.result) == ("f", "x=1", "r")
    with pytest.raises(DataError, match=r"messages\[1\].tool_calls\[0\].function.arguments"):
        templates.parse_messages(loose, where="item 1")


def test_round_trip_through_openai_messages_and_items() -> None:
    t = _by_id()["5b8efff798038103d269b633813fc60c"]
    again = Trajectory.from_messages(t.to_messages())
    assert again.messages == t.messages
    assert Trajectory.model_validate_json(t.model_dump_json()) == t  # pydantic at the boundary
    given = Trajectory.from_messages(t.to_messages(), task="Book MAD-FCO", final_answer="done")
    assert Trajectory.model_validate(given.model_dump()).task == "Book MAD-FCO"
    item = trajectory_items([t], references=["IB3234, 89 EUR"])[0]
    assert item["id"] == t.id and item["prompt"] == TASK and item["reference"] == "IB3234, 89 EUR"
    assert not item["trajectory"].startswith("Task:")  # the template shows the task apart
    back = trajectory_from_item(json.loads(json.dumps(item)))  # as a JSONL row reads back
    assert back.tool_uses == t.tool_uses
    as_text = {**item, "trace": json.dumps(item["trace"])}  # a CSV cell
    assert trajectory_from_item(as_text).final_answer == t.final_answer
    with pytest.raises(DataError, match="no 'trace' \\(or 'messages'\\) field"):
        trajectory_from_item({"prompt": "x"})


def test_render_truncates_long_results_and_marks_the_cut() -> None:
    t = _by_id()["9c1f7e3a2b5d4c6e8f0a1b2c3d4e5f60"]
    text = render_trajectory(t, max_result=80)
    lines = text.splitlines()
    assert lines[0] == f"Task: {TASK}"
    assert lines[1] == "Step 1:"
    assert lines[2].startswith("  -> search_flights({")
    assert lines[3].startswith("  <- {") and lines[3].endswith("more characters]")
    assert "Step 3 (final answer): Booked Ryanair FR8312" in text
    history, step = render_step(t, 1, max_result=80)
    assert history.startswith("Step 1:") and step.startswith("Step 2: FR8312 is the cheapest")
    assert render_step(t, 0)[0] == "(none: this is the first step)"
    with pytest.raises(IndexError):
        render_step(t, 3)
