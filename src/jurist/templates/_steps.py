"""An agent's messages as steps, and the steps as compact text for a judge.

This is where a trajectory is rendered, for :func:`jurist.trajectories.render_trajectory`
and for a conversation item (``messages``) judged by a template that reads a
``trajectory`` field (see :func:`~jurist.templates.conversation_fields`).

A **step** is one assistant turn and the tool messages that answer its calls. Rendered,
each step is numbered: its text, then one ``-> tool(arguments)`` line per call and one
``<- result`` line per result. User and system messages are shown where they occur (the
first user message is the task: shown once as ``Task:``, or left to the template).
Arguments longer than ``max_args`` and results longer than ``max_result`` characters are
cut, with a marker saying how much was left out, so a huge tool output cannot crowd out
the rest.

>>> from jurist.templates import parse_messages
>>> messages = parse_messages([
...     {"role": "user", "content": "Population of Lyon?"},
...     {"role": "assistant", "content": "Searching.", "tool_calls": [{"id": "1",
...         "function": {"name": "search", "arguments": '{"q": "Lyon population"}'}}]},
...     {"role": "tool", "tool_call_id": "1", "content": "Lyon: 522,250 (2021). " * 40},
...     {"role": "assistant", "content": "About 522,000."}], where="item")
>>> print(render_steps(messages, task="Population of Lyon?", max_result=40))
Task: Population of Lyon?
Step 1: Searching.
  -> search({"q": "Lyon population"})
  <- Lyon: 522,250 (2021). Lyon: 522,250 (202 [... 840 more characters]
Step 2 (final answer): About 522,000.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from jurist.templates._chat import ChatMessage

__all__ = [
    "DEFAULT_MAX_ARGS",
    "DEFAULT_MAX_RESULT",
    "Step",
    "first_task",
    "render_steps",
    "split_steps",
    "step_lines",
]

DEFAULT_MAX_RESULT = 600
"""A tool result longer than this is cut in a rendered trajectory."""
DEFAULT_MAX_ARGS = 300
"""Tool-call arguments longer than this are cut in a rendered trajectory."""


@dataclass(frozen=True, slots=True)
class Step:
    """One assistant turn (``message``) and the tool messages answering its calls."""

    index: int
    message: ChatMessage
    results: tuple[ChatMessage, ...]


def split_steps(messages: Sequence[ChatMessage]) -> list[Step]:
    """The assistant turns, each with the tool messages that answer its calls (by call id;
    every tool message up to the next assistant turn when the calls have no ids)."""
    steps: list[Step] = []
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        ids = {c.id for c in m.tool_calls if c.id is not None}
        results: list[ChatMessage] = []
        for later in messages[i + 1 :]:
            if later.role == "assistant":
                break
            if later.role == "tool" and (not ids or later.tool_call_id in ids):
                results.append(later)
        steps.append(Step(len(steps), m, tuple(results)))
    return steps


def first_task(messages: Sequence[ChatMessage]) -> str | None:
    """The text of the first user message that has some: the task."""
    return next((m.text() for m in messages if m.role == "user" and m.text()), None)


def _cut(text: str, limit: int | None) -> str:
    flat = " ".join(text.split()) if "\n" in text else text
    if limit is None or len(flat) <= limit:
        return flat
    return f"{flat[:limit]} [... {len(flat) - limit} more characters]"


def _args(args: dict[str, object] | str, limit: int | None) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return _cut(text, limit)


def step_lines(step: Step, last: bool, max_result: int | None, max_args: int | None) -> list[str]:
    """One step as lines (see the module); ``last``: the trajectory's last step."""
    m = step.message
    final = last and not m.tool_calls
    head = f"Step {step.index + 1}" + (" (final answer)" if final else "") + ":"
    text = m.text().strip()
    lines = [f"{head} {text}" if text else head]
    by_id = {r.tool_call_id: r for r in step.results if r.tool_call_id is not None}
    loose = [r for r in step.results if r.tool_call_id is None]
    for call in m.tool_calls:
        lines.append(f"  -> {call.name}({_args(call.arguments, max_args)})")
        hit = by_id.pop(call.id, None) if call.id is not None else None
        if hit is None and loose:
            hit = loose.pop(0)
        if hit is None:
            lines.append("  <- (no result)")
        else:
            lines.append(f"  <- {_cut(hit.text(), max_result)}")
    for extra in [*by_id.values(), *loose]:  # results that answer no call of this step
        lines.append(f"  <- {_cut(extra.text(), max_result)}")
    return lines


_LABELS = {"user": "User", "system": "System", "developer": "System", "tool": "Tool"}


def _shown(m: ChatMessage, system: bool, answered: set[int]) -> bool:
    """Whether a message outside the steps is shown: users always, system messages when
    asked, tool results that answer no call."""
    if m.role == "tool":
        return id(m) not in answered
    return m.role == "user" or (m.role in ("system", "developer") and system)


def render_steps(
    messages: Sequence[ChatMessage],
    *,
    task: str | None,
    show_task: bool = True,
    max_result: int | None = DEFAULT_MAX_RESULT,
    max_args: int | None = DEFAULT_MAX_ARGS,
    system: bool = False,
) -> str:
    """The messages as numbered steps (see the module). ``task``: the run's task (the first
    user message equal to it is not repeated); ``show_task=False`` leaves out its ``Task:``
    line (a template that shows the task apart); ``system=True`` shows system messages;
    ``None`` limits cut nothing."""
    steps = {id(s.message): s for s in split_steps(messages)}
    answered = {id(r) for s in steps.values() for r in s.results}
    lines: list[str] = []
    if task is not None and show_task:
        lines.append(f"Task: {task.strip()}")
    shown_task = False
    n_steps = len(steps)
    for m in messages:
        if m.role == "assistant":
            step = steps[id(m)]
            lines += step_lines(step, step.index == n_steps - 1, max_result, max_args)
        elif m.role == "user" and not shown_task and m.text() == task:
            shown_task = True
        elif _shown(m, system, answered):
            lines.append(f"{_LABELS[m.role]}: {_cut(m.text(), max_result)}")
    return "\n".join(lines)
