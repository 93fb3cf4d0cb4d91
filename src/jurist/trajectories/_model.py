"""The :class:`Trajectory`: an agent's run as OpenAI-format chat messages, tool calls included.

A trajectory is the list of messages an agent exchanged (``system``, ``user``, ``assistant``
with ``tool_calls``, ``tool`` with the result of one call), plus the task, the final
answer and free metadata. It reads and writes the OpenAI chat format, so a rollout of any
agent framework that logs that format (and a trace imported from OpenTelemetry, see
:func:`jurist.trajectories.load_traces`) is one.

The messages are :class:`jurist.templates.ChatMessage`, the model conversation items are
checked with, read leniently (:data:`jurist.templates.LENIENT`): a trace may hold tool
arguments that are not JSON (kept as text) and results without their call's id.

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
(2, '{"city":"Paris"}')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jurist.errors import DataError
from jurist.templates import LENIENT, ChatMessage, ToolCall
from jurist.templates._steps import Step, first_task, split_steps

__all__ = ["ChatMessage", "Step", "ToolCall", "ToolUse", "Trajectory"]


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

    @field_validator("messages", mode="before")
    @classmethod
    def _lenient_messages(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(
                m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m, context=LENIENT)
                for m in value
            )
        return value

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
        return first_task(self.messages)

    @property
    def final_answer(self) -> str | None:
        """The final answer: as given, else the last assistant text that calls no tool."""
        if self.answer_text is not None:
            return self.answer_text
        for m in reversed(self.messages):
            if m.role == "assistant" and not m.tool_calls and m.text():
                return m.text()
        return None

    @property
    def steps(self) -> list[Step]:
        """The assistant turns, each with the tool messages that answer its calls."""
        return split_steps(self.messages)

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
                result = None if hit is None else hit.text()
                uses.append(ToolUse(call.name, call.arguments, result, call.id, step.index))
        return uses

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools called, in order (repeats kept)."""
        return [u.name for u in self.tool_uses]


def _tool_call(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, ToolCall):
        return raw.to_openai()
    if not isinstance(raw, Mapping):
        raise DataError(f"{where}: a tool call must be an object, got {type(raw).__name__}")
    fn = raw.get("function", raw)
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        raise DataError(f"{where}: the tool call has no function name")
    args = fn.get("arguments")
    if args is not None and not isinstance(args, str | Mapping):
        raise DataError(
            f"{where}: tool call arguments must be a JSON object or string, got {args!r}"
        )
    call_id = raw.get("id")
    return {
        "id": None if call_id is None else str(call_id),
        "function": {"name": fn["name"], "arguments": args},
    }


def _message(raw: Any, where: str) -> ChatMessage:
    if isinstance(raw, ChatMessage):
        return raw
    if not isinstance(raw, Mapping):
        raise DataError(f"{where}: a message must be an object, got {type(raw).__name__}")
    calls = raw.get("tool_calls") or ()
    if not isinstance(calls, Sequence) or isinstance(calls, str):
        raise DataError(f"{where}: tool_calls must be a list")
    data = {
        "role": raw.get("role"),
        "content": raw.get("content"),
        "tool_calls": [_tool_call(c, f"{where}, tool call {j}") for j, c in enumerate(calls)],
        "tool_call_id": None if raw.get("tool_call_id") is None else str(raw["tool_call_id"]),
        "name": raw.get("name"),
    }
    try:
        return ChatMessage.model_validate(data, context=LENIENT)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        got = f" (got {raw.get(field)!r})" if field in raw else ""
        message = str(first["msg"]).removeprefix("Value error, ")
        raise DataError(f"{where}: {field or 'message'}: {message}{got}") from None
