"""The summary table printed at the end of a run (``jurist judge``, ``compare``, ``grade``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["print_summary"]


def print_summary(
    console: Console, summary: dict[str, Any], failures: list[tuple[int, str]]
) -> None:
    """Print a run's summary (``RunSummary`` fields plus ``model``/``template``/``results``)."""
    table = Table(title=f"jurist: {summary['data']}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")
    mean = summary["mean_score"]
    cost = summary.get("cost")
    rows = [
        *((k, str(summary[k])) for k in ("model", "template", "rubric") if summary.get(k)),
        ("judge", str(summary.get("judge", ""))),
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
        ("cost", "unknown (no price for this model)" if cost is None else f"${cost:.4f}"),
        ("time", f"{summary['seconds']:.2f} s"),
        ("run", str(summary.get("run_dir", ""))),
        ("results", str(summary["results"])),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    if summary["failed"]:
        console.print(
            f"[yellow]{summary['failed']} item(s) got no score[/]; first {len(failures)}:"
        )
        for i, error in failures:
            console.print(f"  item {i + 1}: {error}", highlight=False, markup=False)
