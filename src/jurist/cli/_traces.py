"""``jurist traces FILE...``: exported agent traces to trajectory items (JSON Lines).

Reads OpenTelemetry GenAI / OpenInference spans (OTLP JSON or the SDK's JSON, one document
or JSON Lines; see :mod:`jurist.trajectories`) and writes one item per trace: ``id``,
``prompt`` (the task), ``trajectory`` (the compact rendering), ``final_answer``, ``tools``,
``trace`` (OpenAI-format messages). The file feeds ``jurist judge --template trajectory``
and ``jurist grade --rubric`` with a trajectory rubric (checks beside criteria).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import app
from jurist.cli._bounds import bounded
from jurist.errors import ConfigError
from jurist.judges.rubric import CriterionGrader
from jurist.models import Model
from jurist.trajectories import (
    StepJudge,
    TrajectoryGrader,
    TrajectoryRubric,
    load_traces,
    trajectory_items,
)


@app.command("traces")
def traces(
    files: Annotated[list[Path], typer.Argument(help="Span exports: .json or .jsonl.")],
    out: Annotated[Path, typer.Option(help="The items file to write (.jsonl).")] = Path(
        "trajectories.jsonl"
    ),
    max_result: Annotated[
        int, typer.Option(**bounded("max_result", help="Tool results longer than this are cut."))
    ] = 600,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out file.")] = False,
) -> int:
    """Turn exported agent traces into trajectory items, one per trace.

    A file that is not UTF-8, not JSON, nested past 128 levels or holds no span stops it
    (exit 2)."""
    if out.suffix.lower() != ".jsonl":
        raise ConfigError(f"--out must be a .jsonl file, got {out}")
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    items = trajectory_items(load_traces(files), max_result=max_result)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as f:
        for item in items:
            f.write(orjson.dumps(item) + b"\n")
    table = Table(title=f"{len(items)} trajectories -> {out}")
    for column in ("id", "steps", "tools", "final answer"):
        table.add_column(column, overflow="fold")
    for item in items:
        steps = item["trajectory"].count("\nStep ") + item["trajectory"].startswith("Step ")
        answer = item["final_answer"] or ""
        table.add_row(
            escape(str(item["id"])),
            str(steps),
            escape(", ".join(item["tools"])),
            escape(answer if len(answer) <= 60 else answer[:57] + "..."),
        )
    Console(width=max(100, Console().width)).print(table)
    return 0


def trajectory_judge(
    rubric: TrajectoryRubric | None,
    grader: CriterionGrader,
    models: list[Model],
    query_field: str,
) -> TrajectoryGrader:
    """``jurist grade``'s judge for a trajectory rubric: the checks, the criteria judged by
    ``grader``, the steps (when the rubric has them) by the first model."""
    assert rubric is not None
    steps = StepJudge(models[0]) if rubric.steps is not None else None
    return TrajectoryGrader(
        rubric,
        grader if rubric.rubric is not None else None,
        step_judge=steps,
        task_field=query_field,
    )
