"""``jurist templates``: list the templates, or show one in full."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import app
from jurist.templates import get_template, list_templates

_COLUMNS = ("name", "kind", "fields", "scale", "verdict", "description")


@app.command("templates")
def templates(
    name: Annotated[
        str | None,
        typer.Argument(help="Show this template (a name or a YAML file) in full."),
    ] = None,
) -> int:
    """List the templates: name, kind, fields, scale, verdict form and what they score."""
    console = Console(width=max(120, Console().width))
    if name is not None:
        _show(console, name)
        return 0
    table = Table(title="jurist templates")
    for column in _COLUMNS:
        if column == "name":
            table.add_column(column, style="bold", no_wrap=True, overflow="fold")
        else:
            table.add_column(column)
    for _, t in sorted(list_templates().items()):
        row = t.summary()
        table.add_row(*(escape(row[k]) for k in _COLUMNS))
    console.print(table)
    return 0


def _show(console: Console, name: str) -> None:
    t = get_template(name)
    row = t.summary()
    for key in _COLUMNS:
        console.print(f"[bold]{key}:[/] {escape(row[key])}", highlight=False)
    console.print("\n[bold]system message[/]", markup=True)
    console.print(t.system_text(), highlight=False, markup=False)
    console.print("\n[bold]item (user message)[/]", markup=True)
    console.print(t.item, highlight=False, markup=False)
