"""Traces to trajectories: one :class:`Trajectory` per trace in exported span files.

For each trace (spans grouped by trace id, in start order):

1. The conversation is rebuilt from the LLM spans in the order they ended: a call whose
   input starts with the conversation so far extends it (chat calls resend the history);
   any other input is appended; each call's output messages follow its input.
2. A tool span whose call id no message answers adds its result as a ``tool`` message
   right after the assistant message that made the call. A trace with no LLM messages at
   all is rebuilt from its tool spans alone: each becomes an assistant tool call and its
   result.
3. The task is the root span's ``input.value`` (OpenInference) when it has one, else the
   first user message; the final answer is the root's ``output.value`` when it has one,
   else the last assistant text that calls no tool.
4. ``metadata`` keeps the trace id, the file, the models named (``gen_ai.request.model``,
   ``gen_ai.response.model``, ``llm.model_name``), the token counts summed, and the spans
   that ended in an error.

>>> import json, tempfile, pathlib
>>> span = {"traceId": "ab", "spanId": "01", "name": "chat", "startTimeUnixNano": "1",
...     "endTimeUnixNano": "2", "attributes": [
...     {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
...     {"key": "gen_ai.input.messages", "value": {"stringValue":
...         '[{"role": "user", "parts": [{"type": "text", "content": "Hi"}]}]'}},
...     {"key": "gen_ai.output.messages", "value": {"stringValue":
...         '[{"role": "assistant", "parts": [{"type": "text", "content": "Hello!"}]}]'}}]}
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.json"
>>> _ = path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
>>> [(t.id, t.task, t.final_answer) for t in load_traces(path)]
[('ab', 'Hi', 'Hello!')]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from jurist.errors import DataError
from jurist.trajectories._conventions import span_kind, span_messages, tool_of
from jurist.trajectories._model import Trajectory
from jurist.trajectories._otlp import Span, read_spans

__all__ = ["load_traces", "trajectories_from_spans"]


def load_traces(paths: str | Path | Iterable[str | Path]) -> list[Trajectory]:
    """One trajectory per trace in the span file(s) at ``paths`` (OTLP JSON or SDK JSON,
    documents or JSON Lines; see :mod:`jurist.trajectories._otlp`)."""
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    if not files:
        raise DataError("load_traces: no trace files given")
    out: list[Trajectory] = []
    for f in files:
        out.extend(trajectories_from_spans(read_spans(f), source=str(f)))
    return out


def trajectories_from_spans(spans: Sequence[Span], *, source: str = "") -> list[Trajectory]:
    """One trajectory per trace id among ``spans``, in the order the traces first appear."""
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    out = []
    for trace_id, members in traces.items():
        out.append(_trajectory(trace_id, sorted(members, key=lambda s: (s.start, s.end)), source))
    return out


def _merge(conversation: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> None:
    n = len(conversation)
    if inputs[:n] == conversation and len(inputs) >= n:
        conversation.extend(inputs[n:])
    else:
        conversation.extend(inputs)


def _answered(conversation: list[dict[str, Any]]) -> set[str]:
    return {str(m["tool_call_id"]) for m in conversation if m.get("tool_call_id")}


def _add_tool_results(conversation: list[dict[str, Any]], tools: list[Span]) -> None:
    answered = _answered(conversation)
    for span in tools:
        tool = tool_of(span)
        if tool["id"] is None or tool["id"] in answered or tool["result"] is None:
            continue
        for i, m in enumerate(conversation):
            ids = [c.get("id") for c in m.get("tool_calls") or ()]
            if tool["id"] in ids:
                j = i + 1
                while j < len(conversation) and conversation[j].get("role") == "tool":
                    j += 1
                conversation.insert(
                    j, {"role": "tool", "tool_call_id": tool["id"], "content": tool["result"]}
                )
                answered.add(tool["id"])
                break


def _from_tools(tools: list[Span]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, span in enumerate(tools):
        tool = tool_of(span)
        call_id = tool["id"] or f"call_{n}"
        fn = {"name": tool["name"], "arguments": tool["arguments"]}
        calls = [{"id": call_id, "type": "function", "function": fn}]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        out.append({"role": "tool", "tool_call_id": call_id, "content": tool["result"] or ""})
    return out


def _root(spans: list[Span]) -> Span:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
    return roots[0] if roots else spans[0]


def _metadata(trace_id: str, spans: list[Span], source: str) -> dict[str, Any]:
    models: list[str] = []
    tokens = {"input_tokens": 0, "output_tokens": 0}
    for s in spans:
        a = s.attributes
        keys = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
        model = next((a[k] for k in keys if isinstance(a.get(k), str)), None)
        if model is not None and model not in models:
            models.append(model)
        for key, name in (
            ("gen_ai.usage.input_tokens", "input_tokens"),
            ("llm.token_count.prompt", "input_tokens"),
            ("gen_ai.usage.output_tokens", "output_tokens"),
            ("llm.token_count.completion", "output_tokens"),
        ):
            if isinstance(a.get(key), int):
                tokens[name] += a[key]
    meta: dict[str, Any] = {
        "trace_id": trace_id,
        "span_id": _root(spans).span_id,  # the span an evaluation of the run belongs to
        "spans": len(spans),
        "models": models,
        **tokens,
    }
    if source:
        meta["source"] = source
    errors = [f"{s.name}: {s.status_error}" for s in spans if s.status_error is not None]
    if errors:
        meta["errors"] = errors
    return meta


def _trajectory(trace_id: str, spans: list[Span], source: str) -> Trajectory:
    conversation: list[dict[str, Any]] = []
    llm = sorted((s for s in spans if span_kind(s) == "llm"), key=lambda s: (s.end, s.start))
    tools = [s for s in spans if span_kind(s) == "tool"]
    for span in llm:
        inputs, outputs = span_messages(span)
        _merge(conversation, inputs)
        conversation.extend(outputs)
    root = _root(spans)
    if not conversation:
        agent_in, agent_out = span_messages(root)
        conversation = agent_in + _from_tools(tools) + agent_out
    else:
        _add_tool_results(conversation, tools)
    a = root.attributes
    task = a.get("input.value") if isinstance(a.get("input.value"), str) else None
    answer = a.get("output.value") if isinstance(a.get("output.value"), str) else None
    if span_kind(root) in ("llm", "tool"):
        task = answer = None  # a lone call's input/output are its own, not the run's
    if not conversation and task is not None:
        conversation = [{"role": "user", "content": task}]
        if answer is not None:
            conversation.append({"role": "assistant", "content": answer})
    if not conversation:
        raise DataError(
            f"{root.where or source}: trace {trace_id} has no messages, tool calls or "
            "input.value to build a trajectory from"
        )
    where = f"{source or 'traces'}: trace {trace_id}"
    return Trajectory.from_messages(
        conversation,
        id=trace_id,
        task=task,
        final_answer=answer,
        metadata=_metadata(trace_id, spans, source),
        where=where,
    )
