"""``jurist report RUN [RUN...]``: write a run's self-contained HTML report, or the page of
several runs side by side (:func:`jurist.runs.report.write_side_by_side`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from jurist.cli._app import EXIT_OK, app
from jurist.errors import ConfigError


@app.command("report")
def report_command(
    run_dirs: Annotated[
        list[str],
        typer.Argument(metavar="RUN...", help="A run folder; several: the runs side by side."),
    ],
    labels: Annotated[
        str | None, typer.Option(help="An item field with human labels (adds agreement).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write it; default RUN/report.html (several runs: "
            "RUN/side-by-side.html of the first)."
        ),
    ] = None,
    on: Annotated[
        str | None,
        typer.Option(metavar="FIELD", help="Several runs: align items on this field, not the row."),
    ] = None,
    show: Annotated[
        str,
        typer.Option(metavar="I,J", help="Several runs: the two shown item by item (1-based)."),
    ] = "1,2",
) -> int:
    """Write the HTML report of RUN (summary, distribution, tables, agreement, failures);
    of several runs, a page that lists them and shows two item by item, where they differ."""
    from jurist.runs import Run
    from jurist.runs.report import write_side_by_side

    if len(run_dirs) == 1:
        path = Run(run_dirs[0]).report(out, labels=labels)
        Console().print(f"report: {path}", highlight=False, markup=False)
        return EXIT_OK
    if labels is not None:
        raise ConfigError("--labels is for the report of one run")
    i, sep, j = show.partition(",")
    if not sep or not i.strip().isdigit() or not j.strip().isdigit():
        raise ConfigError(f"--show takes two run numbers like 1,2, not {show!r}")
    runs = [Run(d) for d in run_dirs]
    path = write_side_by_side(
        runs,
        out or runs[0].run_dir / "side-by-side.html",
        on=on,
        show=(int(i) - 1, int(j) - 1),
    )
    Console().print(f"report: {path}", highlight=False, markup=False)
    return EXIT_OK
