"""``jurist templates``: list the built-in templates."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from jurist.cli._app import app
from jurist.templates import LabelScale, list_templates


@app.command("templates")
def templates() -> int:
    """List the templates, their scales and what they score."""
    table = Table(title="jurist templates")
    table.add_column("name", style="bold", no_wrap=True, overflow="fold")
    table.add_column("scale")
    table.add_column("fields")
    table.add_column("description")
    for name, t in sorted(list_templates().items()):
        if isinstance(t.scale, LabelScale):
            scale = ", ".join(f"{lb.name}={lb.score:g}" for lb in t.scale.labels)
        else:
            scale = f"{t.scale.low:g}..{t.scale.high:g}" + (
                " (integers)" if t.scale.integer else ""
            )
        table.add_row(name, scale, ", ".join(t.fields), t.description)
    Console(width=max(120, Console().width)).print(table)
    return 0
