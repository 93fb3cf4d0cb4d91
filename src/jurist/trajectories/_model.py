"""The :class:`Trajectory`: an agent's run as OpenAI-format chat messages, tool calls included.

A trajectory is the list of messages an agent exchanged (``system``, ``user``, ``assistant``
with ``tool_calls``, ``tool`` with the result of one call), plus the task, the final
answer and free metadata. It reads and writes the OpenAI chat format, so a rollout of any
agent framework that logs that format (and a trace imported from OpenTelemetry, see
:func:`jurist.trajectories.load_traces`) is one.

A **step** is one assistant turn with the results of the tool calls it made; a
**tool use** is one call with its arguments and its result.

>>> t = Trajectory.from_messages([
...     {"role": "user", "content": "Weather in Paris?"},
...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
...         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "rainy, 14 C"},
...     {"role": "assistant", "content": "It is rainy and 14 C in Paris."},
... ])
>>> t.task, t.final_answer
('Weather in Paris?', 'It is rainy and 14 C in Paris.')
>>> [(u.name, u.arguments, u.result) for u in t.tool_uses]
[('get_weather', {'city': 'Paris'}, 'rainy, 14 C')]
>>> len(t.steps), t.to_messages()[1]["tool_calls"][0]["function"]["arguments"]
(2, '{"city": "Paris"}')
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jurist.errors import DataError

__all__ = ["ChatMessage", "Step", "ToolCall", "ToolUse", "Trajectory"]

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One tool call an assistant message asks for: its id, the tool's name, the arguments.

    ``arguments`` is the decoded JSON object; a string that is not JSON is kept as it is.
    """

    model_config = ConfigDict(frozen=True)

    id: str | None = None
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        """The call in the OpenAI chat format (``arguments`` as a JSON string)."""
        args = self.arguments
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        out: dict[str, Any] = {
            "type": "function",
            "function": {"name": self.name, "arguments": text},
        }
        if self.id is not None:
            out = {"id": self.id, **out}
        return out


class ChatMessage(BaseModel):
    """One message in the OpenAI chat format (text content, tool calls, tool results)."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat-format dict (only the fields it has)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call with its result: ``result`` is None when no tool message answered it.

    ``step`` is the index (from 0) of the step that made the call.
    """

    name: str
    arguments: dict[str, Any] | str
    result: str | None
    call_id: str | None
    step: int


@dataclass(frozen=True, slots=True)
class Step:
    """One assistant turn (``message``) and the tool messages answering its calls."""

    index: int
    message: ChatMessage
    results: tuple[ChatMessage, ...]


class Trajectory(BaseModel):
    """An agent's run: the messages in order, the task, the final answer, metadata.

    ``task`` defaults to the first user message and ``final_answer`` to the text of the
    last assistant message that calls no tool (see :attr:`task` / :attr:`final_answer`).
    Dumped, the given ones are under ``task`` and ``final_answer``.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)

    messages: tuple[ChatMessage, ...]
    id: str | None = None
    task_text: str | None = Field(default=None, alias="task")
    answer_text: str | None = Field(default=None, alias="final_answer")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_messages(
        cls,
        messages: Sequence[Mapping[str, Any]],
        *,
        id: str | None = None,
        task: str | None = None,
        final_answer: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        where: str = "trajectory",
    ) -> Trajectory:
        """A trajectory from OpenAI chat-format message dicts; errors name ``where`` and the
        message index."""
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise DataError(f"{where}: messages must be a list of chat messages")
        parsed = tuple(_message(m, f"{where}: message {i}") for i, m in enumerate(messages))
        return cls(
            messages=parsed,
            id=id,
            task=task,
            final_answer=final_answer,
            metadata=dict(metadata or {}),
        )

    def to_messages(self) -> list[dict[str, Any]]:
        """The messages as OpenAI chat-format dicts."""
        return [m.to_openai() for m in self.messages]

    @property
    def task(self) -> str | None:
        """The task: as given, else the text of the first user message."""
        if self.task_text is not None:
            return self.task_text
        return next((m.content for m in self.messages if m.role == "user" and m.content), None)

    @property
    def final_answer(self) -> str | None:
        """The final answer: as given, else the last assistant text that calls no tool."""
        if self.answer_text is not None:
            return self.answer_text
        for m in reversed(self.messages):
            if m.role == "assistant" and not m.tool_calls and m.content:
                return m.content
        return None

    @property
    def steps(self) -> list[Step]:
        """The assistant turns, each with the tool messages that answer its calls."""
        steps: list[Step] = []
        for i, m in enumerate(self.messages):
            if m.role != "assistant":
                continue
            ids = {c.id for c in m.tool_calls if c.id is not None}
            results: list[ChatMessage] = []
            for later in self.messages[i + 1 :]:
                if later.role == "assistant":
                    break
                if later.role == "tool" and (not ids or later.tool_call_id in ids):
                    results.append(later)
            steps.append(Step(len(steps), m, tuple(results)))
        return steps

    @property
    def tool_uses(self) -> list[ToolUse]:
        """Every tool call in order, each with its result (matched by call id, else by
        position among the step's results)."""
        uses: list[ToolUse] = []
        for step in self.steps:
            by_id = {r.tool_call_id: r for r in step.results if r.tool_call_id is not None}
            loose = [r for r in step.results if r.tool_call_id is None]
            for call in step.message.tool_calls:
                hit = by_id.get(call.id) if call.id is not None else None
                if hit is None and loose:
                    hit = loose.pop(0)
                result = None if hit is None else hit.content
                uses.append(ToolUse(call.name, call.arguments, result, call.id, step.index))
        return uses

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools called, in order (repeats kept)."""
        return [u.name for u in self.tool_uses]


def _arguments(raw: Any, where: str) -> dict[str, Any] | str:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        return dict(value) if isinstance(value, dict) else raw
    raise DataError(f"{where}: tool call arguments must be a JSON object or string, got {raw!r}")


def _tool_call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise DataError(f"{where}: a tool call must be an object, got {type(raw).__name__}")
    fn = raw.get("function", raw)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise DataError(f"{where}: the tool call has no function name")
    call_id = raw.get("id")
    return ToolCall(
        id=None if call_id is None else str(call_id),
        name=fn["name"],
        arguments=_arguments(fn.get("arguments"), where),
    )


def _content(raw: Any, where: str) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, list):  # OpenAI content parts: the text parts, joined
        texts = [p.get("text") for p in raw if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(t for t in texts if isinstance(t, str))
    raise DataError(f"{where}: content must be text or a list of parts, got {type(raw).__name__}")


def _message(raw: Any, where: str) -> ChatMessage:
    if isinstance(raw, ChatMessage):
        return raw
    if not isinstance(raw, Mapping):
        raise DataError(f"{where}: a message must be an object, got {type(raw).__name__}")
    calls = raw.get("tool_calls") or ()
    if not isinstance(calls, Sequence) or isinstance(calls, str):
        raise DataError(f"{where}: tool_calls must be a list")
    try:
        return ChatMessage.model_validate(
            {
                "role": raw.get("role"),
                "content": _content(raw.get("content"), where),
                "tool_calls": tuple(
                    _tool_call(c, f"{where}, tool call {j}") for j, c in enumerate(calls)
                ),
                "tool_call_id": None
                if raw.get("tool_call_id") is None
                else str(raw["tool_call_id"]),
                "name": raw.get("name"),
            }
        )
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise DataError(f"{where}: {field}: {first['msg']} (got {raw.get(field)!r})") from None
