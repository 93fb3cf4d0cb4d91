"""``jurist report RUN``: write a run's self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from jurist.cli._app import EXIT_OK, app
from jurist.runs import Run


@app.command("report")
def report_command(
    run_dir: Annotated[str, typer.Argument(help="A run folder.")],
    labels: Annotated[
        str | None, typer.Option(help="An item field with human labels (adds agreement).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Where to write it; default RUN/report.html.")
    ] = None,
) -> int:
    """Write the HTML report of RUN (summary, distribution, tables, agreement, failures)."""
    path = Run(run_dir).report(out, labels=labels)
    Console().print(f"report: {path}", highlight=False, markup=False)
    return EXIT_OK
