"""Trajectories as items for judges and runs, and back.

:func:`trajectory_items` turns trajectories into item dicts that every judge and
:func:`jurist.evaluate` take: ``id``, ``prompt`` (the task), ``trajectory`` (the compact
text the ``trajectory`` template reads), ``final_answer``, ``tools`` (the tools called, in
order) and ``trace`` (the messages in the OpenAI chat format, what the checks read);
``reference`` when given; ``trace_id`` and ``span_id`` (the trace's root span) when the
trajectory came from exported spans, so ``--otel`` links each evaluation to its span.
:func:`trajectory_from_item` reads a trajectory back from an
item's ``trace`` (or ``messages``): a :class:`Trajectory`, a list of message dicts, or that
list as JSON text (a CSV cell).

>>> from jurist.trajectories import Trajectory
>>> t = Trajectory.from_messages([{"role": "user", "content": "2+2?"},
...                               {"role": "assistant", "content": "4"}], id="t1")
>>> item = trajectory_items([t])[0]
>>> item["prompt"], item["trajectory"], item["tools"]
('2+2?', 'Step 1 (final answer): 4', [])
>>> trajectory_from_item(item).final_answer
'4'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jurist._json import loads
from jurist.errors import DataError
from jurist.trajectories._model import Trajectory
from jurist.trajectories._render import DEFAULT_MAX_ARGS, DEFAULT_MAX_RESULT, render_trajectory

__all__ = ["trajectory_from_item", "trajectory_items"]


def trajectory_items(
    trajectories: Iterable[Trajectory],
    *,
    references: Sequence[str | None] | None = None,
    max_result: int = DEFAULT_MAX_RESULT,
    max_args: int = DEFAULT_MAX_ARGS,
) -> list[dict[str, Any]]:
    """One item per trajectory (module doc); ``references``: an expected answer or
    behaviour per trajectory."""
    items: list[dict[str, Any]] = []
    trajs = list(trajectories)
    if references is not None and len(references) != len(trajs):
        raise DataError(f"{len(references)} references for {len(trajs)} trajectories")
    for i, t in enumerate(trajs):
        item: dict[str, Any] = {
            "id": t.id if t.id is not None else str(i),
            "prompt": t.task,
            "trajectory": render_trajectory(
                t, max_result=max_result, max_args=max_args, task=False
            ),
            "final_answer": t.final_answer,
            "tools": t.tool_names,
            "trace": t.to_messages(),
        }
        for key in ("trace_id", "span_id"):
            if isinstance(t.metadata.get(key), str):
                item[key] = t.metadata[key]
        if references is not None and references[i] is not None:
            item["reference"] = references[i]
        items.append(item)
    return items


def trajectory_from_item(
    item: Mapping[str, Any], field: str = "trace", *, where: str = "item"
) -> Trajectory:
    """The trajectory an item holds under ``field`` (else under ``messages``)."""
    value = item.get(field)
    if value is None and field != "messages":
        value = item.get("messages")
    if value is None:
        raise DataError(f"{where}: no {field!r} (or 'messages') field holding the trajectory")
    if isinstance(value, Trajectory):
        return value
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError as e:
            raise DataError(
                f"{where}: field {field!r} is text but not JSON messages: {e}"
            ) from None
    if hasattr(value, "tolist"):  # a numpy array from a Parquet / pandas column
        value = value.tolist()
    if not isinstance(value, list):
        raise DataError(f"{where}: field {field!r} must hold a list of chat messages")
    task = item.get("prompt")
    return Trajectory.from_messages(
        value,
        id=None if item.get("id") is None else str(item["id"]),
        task=task if isinstance(task, str) else None,
        where=f"{where}: field {field!r}",
    )
