"""``jurist leaderboard RUN [RUN...]``: rank the systems of pairwise runs.

Prints the table (Bradley-Terry score and interval, raw and length-controlled win rates
against the baseline), and writes it as CSV (``--csv``) and as a self-contained HTML page
with a plot of the scores and intervals (``--html``, default ``leaderboard.html`` in the
first run's folder). The figures: :func:`jurist.runs.leaderboard`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded

if TYPE_CHECKING:
    from jurist.runs import Leaderboard


__all__ = ["leaderboard_command", "print_leaderboard"]


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_leaderboard(console: Console, board: Leaderboard) -> None:
    """The ranking as a terminal table, with the baseline and the runs read."""
    table = Table(
        title=f"jurist leaderboard: {len(board.rows)} systems, {board.battles} judged pairs, "
        f"baseline {escape(board.baseline)}"
    )
    for name in ("rank", "system", "score", "95% interval", "win rate", "LC win rate"):
        table.add_column(name, justify="left" if name == "system" else "right")
    table.add_column("W / T / L", justify="right")
    table.add_column("length", justify="right")
    for r in board.rows:
        table.add_row(
            str(r.rank),
            escape(r.system),
            _fmt(r.score),
            f"{r.lower:.1f} - {r.upper:.1f}",
            "-" if r.win_rate is None else f"{r.win_rate:.1f} ± {_fmt(r.win_rate_se)}",
            "-" if r.lc_win_rate is None else f"{r.lc_win_rate:.1f} ± {_fmt(r.lc_win_rate_se)}",
            f"{r.wins} / {r.ties} / {r.losses}" if r.pairs_vs_baseline else "-",
            f"{r.mean_length:.0f}",
        )
    console.print(table)
    for run in board.runs:
        left_out = f"{run.failed} failed, {run.inconsistent} inconsistent"
        console.print(
            f"{run.run_dir}: {run.battles} of {run.pairs} pairs counted ({left_out})",
            highlight=False,
            markup=False,
        )
    if board.baseline_from == "most battles":
        console.print(
            f"baseline {board.baseline}: no system is in every pair, so the one in the most "
            "pairs; choose one with --baseline",
            highlight=False,
            markup=False,
        )
    if board.style_control:
        console.print(
            "scores style-controlled; coefficients: "
            + ", ".join(
                f"{c.name} {c.value:.3f} ({c.lower:.3f} - {c.upper:.3f})" for c in board.style
            ),
            highlight=False,
            markup=False,
        )
    if board.lc_difficulty == "joint":
        console.print(
            "LC: length-controlled, each instruction's difficulty estimated across the systems",
            highlight=False,
            markup=False,
        )
    for note in board.notes:
        console.print(note, highlight=False, markup=False)


@app.command("leaderboard")
def leaderboard_command(
    runs: Annotated[
        list[Path], typer.Argument(metavar="RUN...", help="Pairwise run folders (jurist compare).")
    ],
    baseline: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="The system scores are win rates against (default: the one in every pair).",
        ),
    ] = None,
    csv: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Also write the table as CSV.")
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="The HTML page; default RUN/leaderboard.html (first RUN)."
        ),
    ] = None,
    bootstrap: Annotated[
        int,
        typer.Option(**bounded("bootstrap", help="Resamples for the Bradley-Terry intervals.")),
    ] = 1000,
    seed: Annotated[int, typer.Option(**bounded("seed", help="Seed of the resamples."))] = 0,
    style_control: Annotated[
        bool,
        typer.Option(
            help="Style-controlled scores: the fit also weighs length and markdown differences."
        ),
    ] = False,
) -> int:
    """Rank the systems of pairwise runs: Bradley-Terry scores with bootstrap intervals, raw
    and length-controlled win rates against a baseline; a table, CSV and an HTML page."""
    from jurist.runs import leaderboard

    board = leaderboard(
        runs, baseline=baseline, bootstrap=bootstrap, seed=seed, style_control=style_control
    )
    console = Console()
    print_leaderboard(console, board)
    if csv is not None:
        console.print(f"csv: {board.to_csv(csv)}", highlight=False, markup=False)
    page = board.report(html or runs[0] / "leaderboard.html")
    console.print(f"page: {page}", highlight=False, markup=False)
    return EXIT_OK
