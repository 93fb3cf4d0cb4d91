"""A trajectory as compact text for a judge: numbered steps, tool calls, truncated results.

Each assistant turn is a numbered step: its text, then one ``-> tool(arguments)`` line per
call and one ``<- result`` line per result. User and system messages are shown where they
occur (the first user message is the task, shown once as ``Task:``). Arguments longer than
``max_args`` and results longer than ``max_result`` characters are cut, with a marker
saying how much was left out, so a huge tool output cannot crowd out the rest.

>>> from jurist.trajectories import Trajectory
>>> t = Trajectory.from_messages([
...     {"role": "user", "content": "Population of Lyon?"},
...     {"role": "assistant", "content": "Searching.", "tool_calls": [{"id": "1",
...         "function": {"name": "search", "arguments": '{"q": "Lyon population"}'}}]},
...     {"role": "tool", "tool_call_id": "1", "content": "Lyon: 522,250 (2021). " * 40},
...     {"role": "assistant", "content": "About 522,000."}])
>>> print(render_trajectory(t, max_result=40))
Task: Population of Lyon?
Step 1: Searching.
  -> search({"q": "Lyon population"})
  <- Lyon: 522,250 (2021). Lyon: 522,250 (202 [... 840 more characters]
Step 2 (final answer): About 522,000.
"""

from __future__ import annotations

import json

from jurist.trajectories._model import ChatMessage, Step, Trajectory

__all__ = ["DEFAULT_MAX_ARGS", "DEFAULT_MAX_RESULT", "render_step", "render_trajectory"]

DEFAULT_MAX_RESULT = 600
DEFAULT_MAX_ARGS = 300


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split()) if "\n" in text else text
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]} [... {len(flat) - limit} more characters]"


def _args(args: dict[str, object] | str, limit: int) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return _cut(text, limit)


def _step_lines(step: Step, last: bool, max_result: int, max_args: int) -> list[str]:
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


def _other(m: ChatMessage, max_result: int) -> str:
    label = {"user": "User", "system": "System", "developer": "System", "tool": "Tool"}[m.role]
    return f"{label}: {_cut(m.text(), max_result)}"


def _shown(m: ChatMessage, system: bool, answered: set[int]) -> bool:
    """Whether a message outside the steps is shown: users always, system messages when
    asked, tool results that answer no call."""
    if m.role == "tool":
        return id(m) not in answered
    return m.role == "user" or (m.role in ("system", "developer") and system)


def render_trajectory(
    trajectory: Trajectory,
    *,
    max_result: int = DEFAULT_MAX_RESULT,
    max_args: int = DEFAULT_MAX_ARGS,
    system: bool = False,
    task: bool = True,
) -> str:
    """The whole trajectory as numbered steps (module doc); ``system=True`` shows system
    messages too; ``task=False`` leaves out the ``Task:`` line (a template that shows the
    task apart)."""
    steps = {id(s.message): s for s in trajectory.steps}
    answered = {id(r) for s in steps.values() for r in s.results}
    lines: list[str] = []
    the_task = trajectory.task
    if the_task is not None and task:
        lines.append(f"Task: {the_task.strip()}")
    shown_task = False
    n_steps = len(steps)
    for m in trajectory.messages:
        if m.role == "assistant":
            step = steps[id(m)]
            lines += _step_lines(step, step.index == n_steps - 1, max_result, max_args)
        elif m.role == "user" and not shown_task and m.text() == the_task:
            shown_task = True
        elif _shown(m, system, answered):
            lines.append(_other(m, max_result))
    return "\n".join(lines)


def render_step(
    trajectory: Trajectory,
    index: int,
    *,
    max_result: int = DEFAULT_MAX_RESULT,
    max_args: int = DEFAULT_MAX_ARGS,
) -> tuple[str, str]:
    """``(history, step)``: the steps before step ``index`` (from 0) and that step, as text."""
    steps = trajectory.steps
    if not 0 <= index < len(steps):
        raise IndexError(f"step {index} of a trajectory with {len(steps)} steps")
    before = [line for s in steps[:index] for line in _step_lines(s, False, max_result, max_args)]
    here = _step_lines(steps[index], index == len(steps) - 1, max_result, max_args)
    return "\n".join(before) or "(none: this is the first step)", "\n".join(here)
