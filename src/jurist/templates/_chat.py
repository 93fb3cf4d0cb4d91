"""Chat messages in OpenAI's format: a conversation item's, checked at the boundary, and a
trajectory's (one model for both; :mod:`jurist.trajectories` reads traces with it).

An item's ``messages`` field holds a list of messages as OpenAI's chat API writes them:
``system`` (or ``developer``), ``user``, ``assistant`` and ``tool`` roles; ``content`` a
string or a list of parts (``{"type": "text", "text": ...}`` and ``{"type": "image_url",
"image_url": {"url": ...}}``); an assistant's ``tool_calls`` (``{"id", "type": "function",
"function": {"name", "arguments"}}``, the arguments a JSON object or its JSON text); a
tool result's ``tool_call_id``. A CSV cell holds the list as JSON text; a Parquet or
JSONL list column, a pandas object column or a ``datasets`` column hold it as such.

Errors name the item, the message and the field:

>>> parse_messages('[{"role": "user", "content": "hi"}]', where="d.csv:2")[0].text()
'hi'
>>> parse_messages([{"role": "assistant", "tool_calls": [
...     {"id": "c1", "function": {"name": "f", "arguments": "{oops"}}]}], where="d.jsonl:3")
Traceback (most recent call last):
...
jurist.errors.DataError: d.jsonl:3: messages[0].tool_calls[0].function.arguments: not valid ...
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from jurist.errors import DataError

__all__ = ["LENIENT", "ChatMessage", "FunctionCall", "ToolCall", "parse_messages", "plain"]

ChatRole = Literal["system", "developer", "user", "assistant", "tool"]


LENIENT = {"lenient": True}
"""Validation context for messages read from a trace rather than given as an item (a
trajectory's, see :mod:`jurist.trajectories`): tool-call arguments that are not JSON are
kept as their text, a tool result may lack the id of its call, and a message its content."""


def _lenient(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("lenient"))


class FunctionCall(BaseModel):
    """The function a tool call names and its arguments, kept as compact JSON text (as
    given, when a trace's arguments are not JSON: see :data:`LENIENT`)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str
    arguments: str = "{}"

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("arguments", mode="before")
    @classmethod
    def _json_arguments(cls, value: Any, info: ValidationInfo) -> str:
        if value is None:
            return "{}"
        if isinstance(value, str):
            try:
                parsed = orjson.loads(value) if value.strip() else {}
            except orjson.JSONDecodeError as e:
                if _lenient(info):
                    return value
                raise ValueError(f"not valid JSON ({e})") from None
        elif isinstance(value, Mapping):
            parsed = dict(value)
        else:
            raise ValueError(f"must be a JSON object or its text, got a {type(value).__name__}")
        return orjson.dumps(parsed, option=orjson.OPT_NON_STR_KEYS).decode()


class ToolCall(BaseModel):
    """One tool call an assistant message makes.

    Built from OpenAI's form (``{"id", "type", "function": {"name", "arguments"}}``) or a
    flat one (``ToolCall(id=..., name=..., arguments={...})``); :attr:`name` and
    :attr:`arguments` read the function's.

    >>> ToolCall(name="search", arguments={"q": "Rome"}).to_openai()
    {'type': 'function', 'function': {'name': 'search', 'arguments': '{"q":"Rome"}'}}
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, value: Any) -> Any:
        if isinstance(value, Mapping) and "function" not in value and "name" in value:
            rest = {k: v for k, v in value.items() if k not in ("name", "arguments")}
            return {
                **rest,
                "function": {"name": value["name"], "arguments": value.get("arguments")},
            }
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _text_id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("type", mode="before")
    @classmethod
    def _function_default(cls, value: Any) -> Any:
        return "function" if value is None else value

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.function.name

    @property
    def arguments(self) -> dict[str, Any] | str:
        """The arguments: the decoded JSON object, else their text as it is."""
        try:
            value = orjson.loads(self.function.arguments)
        except orjson.JSONDecodeError:
            return self.function.arguments
        return value if isinstance(value, dict) else self.function.arguments

    def to_openai(self) -> dict[str, Any]:
        """The call in OpenAI's chat format (``arguments`` as JSON text)."""
        out: dict[str, Any] = {"type": "function", "function": self.function.model_dump()}
        return out if self.id is None else {"id": self.id, **out}


class ChatMessage(BaseModel):
    """One message of a conversation item or a trajectory (see the module)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    role: ChatRole
    content: str | tuple[dict[str, Any], ...] | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _parts(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if not isinstance(value, list | tuple):
            raise ValueError(f"must be a string or a list of parts, got a {type(value).__name__}")
        parts: list[dict[str, Any]] = []
        for i, part in enumerate(value):
            if not isinstance(part, Mapping):
                raise ValueError(f"part {i} is a {type(part).__name__}, not an object")
            kind = part.get("type")
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise ValueError(f"part {i}: a text part needs a 'text' string")
                parts.append({"type": "text", "text": part["text"]})
            elif kind == "image_url":
                image = part.get("image_url")
                url = image.get("url") if isinstance(image, Mapping) else image
                if not isinstance(url, str) or not url.strip():
                    raise ValueError(f"part {i}: an image_url part needs image_url.url, a string")
                detail = image.get("detail") if isinstance(image, Mapping) else None
                inner = {"url": url} if detail is None else {"url": url, "detail": detail}
                parts.append({"type": "image_url", "image_url": inner})
            else:
                raise ValueError(
                    f"part {i}: unknown part type {kind!r} (the types are 'text' and 'image_url')"
                )
        return tuple(parts)

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _no_calls(cls, value: Any) -> Any:
        return () if value is None else value

    @field_validator("tool_call_id", mode="before")
    @classmethod
    def _text_call_id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="wrap")
    @classmethod
    def _roles(
        cls, value: Any, handler: ModelWrapValidatorHandler[ChatMessage], info: ValidationInfo
    ) -> ChatMessage:
        if isinstance(value, ChatMessage):
            return value  # checked when it was built (leniently or not)
        m = handler(value)
        if m.tool_calls and m.role != "assistant":
            raise ValueError(f"only an assistant message makes tool_calls, not a {m.role}")
        if _lenient(info):
            return m
        if m.role == "tool" and not m.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if m.role != "assistant" and m.content is None:
            raise ValueError(f"a {m.role} message needs content")
        return m

    def text(self) -> str:
        """The text of the content (parts' texts joined; images left out)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p["text"] for p in self.content if p["type"] == "text")

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat-format dict (only the fields it has).

        >>> ChatMessage(role="tool", tool_call_id="c1", content="14 C").to_openai()
        {'role': 'tool', 'content': '14 C', 'tool_call_id': 'c1'}
        """
        content = self.content if not isinstance(self.content, tuple) else list(self.content)
        out: dict[str, Any] = {"role": self.role, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


def plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars (a pandas list column) as Python lists and
    values, inside lists and mappings too."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if type(value).__module__ == "numpy":
        return plain(value.tolist()) if hasattr(value, "tolist") else value
    return value


def parse_messages(value: Any, *, where: str, field: str = "messages") -> list[ChatMessage]:
    """The checked messages of one item's ``field`` (a list, or its JSON text)."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as e:
            raise DataError(f"{where}: field {field!r} is not valid JSON ({e})") from None
    value = plain(value)
    if not isinstance(value, list) or not value:
        got = f"a {type(value).__name__}" if not isinstance(value, list) else "an empty list"
        raise DataError(f"{where}: field {field!r} must be a non-empty list of messages, got {got}")
    out: list[ChatMessage] = []
    for i, message in enumerate(value):
        if not isinstance(message, Mapping):
            raise DataError(
                f"{where}: {field}[{i}] is a {type(message).__name__}, not a message object"
            )
        try:
            out.append(ChatMessage.model_validate(message))
        except ValidationError as e:
            raise DataError(f"{where}: {_first_error(e, f'{field}[{i}]')}") from None
    _check_tool_ids(out, where, field)
    return out


def _first_error(e: ValidationError, prefix: str) -> str:
    err = e.errors()[0]
    path = prefix
    for part in err["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    message = str(err["msg"]).removeprefix("Value error, ")
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{path}: {message}{more}"


def _check_tool_ids(messages: list[ChatMessage], where: str, field: str) -> None:
    called: set[str] = set()
    for i, m in enumerate(messages):
        called.update(c.id for c in m.tool_calls if c.id)
        if m.role == "tool" and m.tool_call_id not in called:
            raise DataError(
                f"{where}: {field}[{i}].tool_call_id: {m.tool_call_id!r} answers no earlier "
                "tool call"
            )
