"""A trajectory as compact text for a judge: numbered steps, tool calls, truncated results.

The rendering is :func:`jurist.templates._steps.render_steps` (one renderer, so a
trajectory given as an item's ``messages`` reads the same as one given here): each
assistant turn is a numbered step: its text, then one ``-> tool(arguments)`` line per call
and one ``<- result`` line per result. User and system messages are shown where they occur
(the first user message is the task, shown once as ``Task:``). Arguments longer than
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

from jurist.templates._steps import DEFAULT_MAX_ARGS, DEFAULT_MAX_RESULT, render_steps, step_lines
from jurist.trajectories._model import Trajectory

__all__ = ["DEFAULT_MAX_ARGS", "DEFAULT_MAX_RESULT", "render_step", "render_trajectory"]


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
    return render_steps(
        trajectory.messages,
        task=trajectory.task,
        show_task=task,
        max_result=max_result,
        max_args=max_args,
        system=system,
    )


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
    before = [line for s in steps[:index] for line in step_lines(s, False, max_result, max_args)]
    here = step_lines(steps[index], index == len(steps) - 1, max_result, max_args)
    return "\n".join(before) or "(none: this is the first step)", "\n".join(here)
