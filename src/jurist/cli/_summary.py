"""The summary table printed at the end of a run."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from jurist.judges import JudgeResults


def print_summary(console: Console, summary: dict[str, Any], results: JudgeResults) -> None:
    table = Table(title=f"jurist judge: {summary['data']}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    mean = summary["mean_score"]
    rows = [
        ("model", summary["model"]),
        ("template", summary["template"]),
        ("items", str(summary["items"])),
        ("scored", str(summary["scored"])),
        ("failed", str(summary["failed"])),
        ("mean score", "-" if mean is None else f"{mean:.4f}"),
        ("verdicts", ", ".join(f"{k}: {v}" for k, v in sorted(summary["verdicts"].items()))),
        ("calls / cache hits", f"{summary['calls']} / {summary['cache_hits']}"),
        (
            "tokens (prompt / completion)",
            f"{summary['prompt_tokens']} / {summary['completion_tokens']}",
        ),
        ("time", f"{summary['seconds']:.2f} s"),
        ("results", summary["results"]),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    if results.n_failed:
        shown = results.failures[:5]
        console.print(f"[yellow]{results.n_failed} item(s) got no score[/]; first {len(shown)}:")
        for i, j in shown:
            console.print(f"  item {i + 1}: {j.error}", highlight=False, markup=False)
