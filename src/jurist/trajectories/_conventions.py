"""What a span says about the conversation, under two conventions: OpenTelemetry GenAI and
OpenInference.

**OpenTelemetry GenAI** (semantic conventions, development status):

- inference spans (``gen_ai.operation.name`` ``chat`` / ``text_completion`` /
  ``generate_content``) carry ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages``: JSON lists of ``{"role", "parts": [...]}`` whose parts are
  ``text`` (``content``), ``tool_call`` (``id``, ``name``, ``arguments``) and
  ``tool_call_response`` (``id``, ``response``);
- older instrumentations record one event per message (``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message`` with ``tool_calls``,
  ``gen_ai.tool.message`` with ``id``, ``gen_ai.choice`` with ``message``), or
  ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` span events with a
  ``gen_ai.prompt`` / ``gen_ai.completion`` attribute (OpenAI-format messages as JSON, or
  plain text), or flat attributes ``gen_ai.prompt.N.role``, ``gen_ai.prompt.N.content``,
  ``gen_ai.completion.N.tool_calls.M.name`` ...;
- tool spans (``execute_tool``) carry ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``;
- agent spans (``invoke_agent``) may carry the run's own input and output messages.

**OpenInference** (Arize): ``openinference.span.kind`` is ``LLM``, ``TOOL``, ``AGENT``,
``CHAIN``...; LLM spans flatten messages into ``llm.input_messages.N.message.role`` /
``.message.content`` / ``.message.tool_calls.M.tool_call.function.name`` /
``.function.arguments`` / ``.tool_call.id`` and ``.message.tool_call_id``
(``llm.output_messages`` alike); TOOL spans carry ``tool.name`` and ``input.value`` /
``output.value``; the root span's ``input.value`` / ``output.value`` are the task and the
answer.

Messages come out in the OpenAI chat format (dicts).

>>> attrs = {"llm.input_messages.0.message.role": "user",
...          "llm.input_messages.0.message.content": "2+2?"}
>>> openinference_messages(attrs, "llm.input_messages", "here")
[{'role': 'user', 'content': '2+2?'}]
>>> genai_messages('[{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", '
...                '"name": "calc", "arguments": {"x": "2+2"}}]}]', "here")[0]["tool_calls"]
[{'id': 'c1', 'type': 'function', 'function': {'name': 'calc', 'arguments': '{"x": "2+2"}'}}]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jurist._json import loads
from jurist.errors import DataError
from jurist.trajectories._otlp import Span

__all__ = [
    "Kind",
    "genai_messages",
    "openinference_messages",
    "span_kind",
    "span_messages",
    "tool_of",
]

Kind = str  # "llm", "tool", "agent", "other"

_LLM_OPS = {"chat", "text_completion", "generate_content"}
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}
_ROLES = {"human": "user", "ai": "assistant", "model": "assistant", "function": "tool"}


def span_kind(span: Span) -> Kind:
    """``"llm"``, ``"tool"``, ``"agent"`` or ``"other"`` under either convention."""
    a = span.attributes
    oi = str(a.get("openinference.span.kind", "")).upper()
    op = str(a.get("gen_ai.operation.name", "")).lower()
    if oi == "LLM" or op in _LLM_OPS:
        return "llm"
    if oi == "TOOL" or op == "execute_tool":
        return "tool"
    if oi in ("AGENT", "CHAIN") or op in ("invoke_agent", "create_agent"):
        return "agent"
    if any(
        k.startswith(("gen_ai.input.messages", "gen_ai.prompt", "llm.input_messages")) for k in a
    ):
        return "llm"
    if any(e.name == "gen_ai.content.prompt" or e.name in _EVENT_ROLES for e in span.events):
        return "llm"
    return "other"


def _json(value: Any, what: str, where: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return loads(value)
    except ValueError as e:
        raise DataError(f"{where}: {what} is not valid JSON: {e}") from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _args_text(value: Any) -> str:
    if value is None:
        return "{}"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _call(name: Any, arguments: Any, call_id: Any) -> dict[str, Any]:
    """A tool call in the OpenAI chat format (arguments as JSON text)."""
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": str(name), "arguments": _args_text(arguments)},
    }
    return {"id": str(call_id), **call} if call_id else call


def genai_messages(
    raw: Any, where: str, what: str = "gen_ai.input.messages"
) -> list[dict[str, Any]]:
    """OpenAI-format messages from a GenAI ``{"role", "parts"}`` list (a JSON string or a
    decoded list); each ``tool_call_response`` part becomes a ``tool`` message."""
    data = _json(raw, what, where)
    if not isinstance(data, list):
        raise DataError(f"{where}: {what} must be a list of messages, got {type(data).__name__}")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(data):
        if not isinstance(m, Mapping) or "role" not in m:
            raise DataError(f"{where}: {what}[{i}] is not a message with a role: {m!r}")
        if "parts" not in m:  # already in the OpenAI shape
            out.append(dict(m))
            continue
        parts = m["parts"]
        if not isinstance(parts, list):
            raise DataError(f"{where}: {what}[{i}].parts must be a list")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for j, p in enumerate(parts):
            kind = p.get("type") if isinstance(p, Mapping) else None
            if kind == "text":
                texts.append(_text(p.get("content", "")))
            elif kind == "tool_call":
                if not p.get("name"):
                    raise DataError(f"{where}: {what}[{i}].parts[{j}]: a tool_call without a name")
                calls.append(_call(p["name"], p.get("arguments"), p.get("id")))
            elif kind == "tool_call_response":
                body = p.get("response", p.get("result"))
                tool: dict[str, Any] = {"role": "tool", "content": _text(body)}
                if p.get("id"):
                    tool["tool_call_id"] = str(p["id"]).strip()
                results.append(tool)
            elif kind is None:
                raise DataError(f"{where}: {what}[{i}].parts[{j}] has no type")
        role = _ROLES.get(str(m["role"]), str(m["role"]))
        if role == "tool" and results and not texts:
            out.extend(results)
            continue
        msg: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
        out.extend(results)
    return out


_INDEX = re.compile(r"(\d+)\.(.+)")


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` keys grouped by N (in order of N): ``[{rest: value}, ...]``."""
    groups: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if key.startswith(head):
            m = _INDEX.fullmatch(key[len(head) :])
            if m is not None:
                groups.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [groups[n] for n in sorted(groups)]


def openinference_messages(
    attrs: Mapping[str, Any], prefix: str, where: str
) -> list[dict[str, Any]]:
    """OpenAI-format messages from OpenInference's flat ``prefix.N.message.*`` attributes."""
    out: list[dict[str, Any]] = []
    for n, m in enumerate(_indexed(attrs, prefix)):
        role = m.get("message.role")
        if not isinstance(role, str) or not role:
            raise DataError(f"{where}: {prefix}.{n}.message.role is missing")
        content = m.get("message.content")
        if content is None:
            parts = _indexed(m, "message.contents")
            texts = [p.get("message_content.text") for p in parts]
            content = "\n".join(t for t in texts if isinstance(t, str)) or None
        msg: dict[str, Any] = {"role": _ROLES.get(role, role), "content": content}
        calls = []
        for k, c in enumerate(_indexed(m, "message.tool_calls")):
            name = c.get("tool_call.function.name")
            if not name:
                raise DataError(
                    f"{where}: {prefix}.{n}.message.tool_calls.{k}.tool_call.function.name "
                    "is missing"
                )
            calls.append(_call(name, c.get("tool_call.function.arguments"), c.get("tool_call.id")))
        if calls:
            msg["tool_calls"] = calls
        if m.get("message.tool_call_id"):
            msg["tool_call_id"] = str(m["message.tool_call_id"])
        if m.get("message.name"):
            msg["name"] = str(m["message.name"])
        out.append(msg)
    return out


def _legacy_genai(span: Span, side: str) -> list[dict[str, Any]]:
    """``gen_ai.prompt`` / ``gen_ai.completion``: span events, or flat attributes."""
    key = f"gen_ai.{side}"
    for event in span.events:
        if event.name == f"gen_ai.content.{side}" and key in event.attributes:
            value = event.attributes[key]
            role = "user" if side == "prompt" else "assistant"
            if isinstance(value, str) and not value.lstrip().startswith(("[", "{")):
                return [{"role": role, "content": value}]
            data = _json(value, f"event gen_ai.content.{side}: {key}", span.where)
            data = data if isinstance(data, list) else [data]
            return genai_messages(
                [d.get("message", d) if isinstance(d, Mapping) else d for d in data],
                span.where,
                key,
            )
    flat = []
    for n, m in enumerate(_indexed(span.attributes, key)):
        role = m.get("role", "user" if side == "prompt" else "assistant")
        msg: dict[str, Any] = {
            "role": _ROLES.get(str(role), str(role)),
            "content": m.get("content"),
        }
        calls = []
        for k, c in enumerate(_indexed(m, "tool_calls")):
            if not c.get("name"):
                raise DataError(f"{span.where}: {key}.{n}.tool_calls.{k}.name is missing")
            calls.append(_call(c["name"], c.get("arguments"), c.get("id")))
        if calls:
            msg["tool_calls"] = calls
        if m.get("tool_call_id"):
            msg["tool_call_id"] = str(m["tool_call_id"])
        flat.append(msg)
    return flat


def _event_message(role: str, a: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One per-message event's message (its attributes, or a choice's ``message``)."""
    content = a.get("content")
    msg: dict[str, Any] = {"role": str(a.get("role") or role), "content": content}
    if content is not None and not isinstance(content, str):
        msg["content"] = _text(content)
    calls = _json(a.get("tool_calls"), f"{role} message tool_calls", where)
    if calls:
        if not isinstance(calls, list):
            raise DataError(f"{where}: {role} message tool_calls must be a list")
        out = []
        for k, c in enumerate(calls):
            fn = c.get("function", c) if isinstance(c, Mapping) else None
            if not isinstance(fn, Mapping) or not fn.get("name"):
                raise DataError(f"{where}: {role} message tool_calls[{k}] has no function name")
            out.append(_call(fn["name"], fn.get("arguments"), c.get("id")))
        msg["tool_calls"] = out
    if role == "tool" and a.get("id"):
        msg["tool_call_id"] = str(a["id"])
    return msg


def _message_events(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(inputs, outputs) from per-message events; both empty when the span has none."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for e in span.events:
        role = _EVENT_ROLES.get(e.name)
        if role is None:
            continue
        if e.name == "gen_ai.choice":
            body = _json(e.attributes.get("message", {}), "gen_ai.choice message", span.where)
            if not isinstance(body, Mapping):
                raise DataError(f"{span.where}: gen_ai.choice message must be an object")
            outputs.append(_event_message("assistant", body, span.where))
        else:
            inputs.append(_event_message(role, e.attributes, span.where))
    return inputs, outputs


def span_messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(input messages, output messages) of an LLM or agent span, under either convention."""
    a = span.attributes
    if any(k.startswith("llm.input_messages.") or k.startswith("llm.output_messages.") for k in a):
        return (
            openinference_messages(a, "llm.input_messages", span.where),
            openinference_messages(a, "llm.output_messages", span.where),
        )
    inputs: list[dict[str, Any]] = []
    if "gen_ai.system_instructions" in a:
        parts = _json(a["gen_ai.system_instructions"], "gen_ai.system_instructions", span.where)
        items = parts if isinstance(parts, list) else [parts]
        text = "\n".join(
            _text(p.get("content", "")) if isinstance(p, Mapping) else _text(p) for p in items
        )
        inputs.append({"role": "system", "content": text})
    if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
        if "gen_ai.input.messages" in a:
            inputs += genai_messages(a["gen_ai.input.messages"], span.where)
        outputs = (
            genai_messages(a["gen_ai.output.messages"], span.where, "gen_ai.output.messages")
            if "gen_ai.output.messages" in a
            else []
        )
        return inputs, outputs
    event_in, event_out = _message_events(span)
    if event_in or event_out:
        return inputs + event_in, event_out
    return inputs + _legacy_genai(span, "prompt"), _legacy_genai(span, "completion")


def tool_of(span: Span) -> dict[str, Any]:
    """A tool span's ``name``, ``id``, ``arguments`` (text) and ``result`` (text or None)."""
    a = span.attributes
    name = a.get("gen_ai.tool.name", a.get("tool.name"))
    if not name:
        name = span.name.removeprefix("execute_tool").strip()
    if not name:
        raise DataError(f"{span.where}: a tool span without gen_ai.tool.name or tool.name")
    call_id = a.get("gen_ai.tool.call.id", a.get("tool_call.id", a.get("tool.id")))
    args = a.get("gen_ai.tool.call.arguments", a.get("input.value", a.get("tool.parameters")))
    result = a.get("gen_ai.tool.call.result", a.get("output.value"))
    if result is None and span.status_error is not None:
        result = f"error: {span.status_error}"
    return {
        "name": str(name),
        "id": None if call_id is None else str(call_id),
        "arguments": _args_text(args),
        "result": None if result is None else _text(result),
    }
