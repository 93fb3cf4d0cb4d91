"""``jurist bench DATA... --setup SPEC...``: judge setups side by side on labelled data.

DATA is a bench file (.jsonl, .json, .csv, .parquet; see docs/bench.md) or a public
layout read by its reader, ``LAYOUT:FOLDER`` (``judgebench:``, ``llmbar:``,
``rewardbench2:``, ``mtbench-human:``, ``pandalm:``, ``judge-bench:``). Each ``--setup``
is ``[NAME=]SPEC``: ``recorded:JUDGE@TEMPLATE``, ``scores:MODEL``, a catalog name, or
``PROVIDER:MODEL@TEMPLATE``. Prints the ranked table per dataset and the cascades, and
writes the bench folder (the runs, ``figures.json``, ``bench.html``); ``--json`` and
``--page`` write the figures and the page elsewhere too. The figures:
:func:`jurist.bench`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.benchmark import BenchResult

__all__ = ["bench_command", "print_bench"]


def _pct(e: Any) -> str:
    if e is None or e.value != e.value:
        return "-"
    if e.low is None or e.high is None:
        return f"{100 * e.value:.1f}"
    return f"{100 * e.value:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def print_bench(console: Console, result: BenchResult) -> None:
    """The ranked tables and the cascades, on the terminal."""
    for d in result.datasets:
        tables = result.ranked(d["name"])
        table = Table(title=f"{escape(d['name'])}: {d['kind']}, {d['rows']} rows")
        head = tables[0].headline if tables else "accuracy"
        for name in ("#", "setup", f"{head} [95%]", "first order", "consistency"):
            table.add_column(name, justify="left" if name == "setup" else "right")
        for name in ("abstained", "tokens/item", "cost/correct", "s/item"):
            table.add_column(name, justify="right")
        for k, t in enumerate(tables, 1):
            table.add_row(
                str(k),
                escape(t.setup),
                _pct(t.value),
                _pct(t.first_order_accuracy),
                _num(t.position_consistency),
                f"{t.abstained}/{t.n}",
                _num(t.cost.tokens_per_item),
                _num(t.cost.cost_per_correct),
                _num(t.cost.latency_per_item),
            )
        console.print(table)
    for note in result.notes:
        console.print(note, highlight=False, markup=False)
    for c in result.cascades:
        console.print(
            f"cascade {c.cheap} -> {c.strong} on {c.dataset}, {c.splits} half splits: accuracy "
            f"{_pct(c.accuracy)}, sent on {_pct(c.sent_on)} (cheap alone "
            f"{_pct(c.cheap_accuracy)}, strong alone {_pct(c.strong_accuracy)})",
            highlight=False,
            markup=False,
        )


def _data(given: list[str]) -> list[Any]:
    from jurist.benchmark import READERS

    out: list[Any] = []
    for spec in given:
        layout, sep, folder = spec.partition(":")
        if sep and layout in READERS:
            out.extend(READERS[layout](Path(folder)))
        elif sep and not Path(spec).exists() and len(layout) > 1:
            raise ConfigError(
                f"DATA {spec!r}: no layout {layout!r}; layouts: {', '.join(sorted(READERS))}"
            )
        else:
            out.append(Path(spec))
    return out


def _cascade(spec: str) -> tuple[str, str]:
    cheap, sep, strong = spec.partition(">")
    if not sep or not cheap or not strong:
        raise ConfigError(f"--cascade {spec!r} must be CHEAP>STRONG (two setup names)")
    return cheap.strip(), strong.strip()


@app.command("bench")
def bench_command(
    data: Annotated[
        list[str],
        typer.Argument(
            metavar="DATA...", help="Bench files, or LAYOUT:FOLDER (judgebench:path/to/JudgeBench)."
        ),
    ],
    setup: Annotated[
        list[str],
        typer.Option(
            metavar="[NAME=]SPEC",
            help="A judge setup (repeatable): recorded:JUDGE@TEMPLATE, scores:MODEL, a catalog "
            "name, or PROVIDER:MODEL@TEMPLATE.",
        ),
    ],
    out: Annotated[
        Path, typer.Option(metavar="DIR", help="The bench folder (runs, figures, page).")
    ] = Path("runs/bench"),
    json_out: Annotated[
        Path | None,
        typer.Option("--json", metavar="FILE", help="Also write every figure as JSON here."),
    ] = None,
    page: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Also write the page here.")
    ] = None,
    cascade: Annotated[
        list[str] | None,
        typer.Option(metavar="CHEAP>STRONG", help="Replay a cascade of two setups (repeatable)."),
    ] = None,
    cascade_splits: Annotated[
        int, typer.Option(**bounded("cascade_splits", help="Random half splits per cascade."))
    ] = 200,
    cascade_target: Annotated[
        float | None,
        typer.Option(
            **bounded(
                "cascade_target",
                help="Accuracy the cheap tier must keep (default: the strong one's).",
            )
        ),
    ] = None,
    cascade_delta: Annotated[
        float, typer.Option(**bounded("cascade_delta", help="Risk of the cascade's bound."))
    ] = 0.1,
    resume: Annotated[
        bool, typer.Option(help="Keep what an earlier bench in DIR finished.")
    ] = True,
    concurrency: Annotated[
        int | None, typer.Option(**bounded("concurrency", help="Items in flight per run."))
    ] = None,
    retries: Annotated[
        int, typer.Option(**bounded("retries", help="Re-asks of an unreadable verdict."))
    ] = 0,
    bootstrap: Annotated[
        int, typer.Option(**bounded("bootstrap", help="Resamples per interval."))
    ] = 1000,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = False,
) -> int:
    """Put judge setups side by side on labelled data: accuracy with intervals, position
    consistency, bias probes, cost per correct decision; a table, JSON and an HTML page."""
    from jurist.benchmark import bench, write_bench_page

    result = bench(
        _data(data),
        setup,
        out=out,
        resume=resume,
        cascades=[_cascade(c) for c in cascade or ()],
        cascade_splits=cascade_splits,
        cascade_target=cascade_target,
        cascade_delta=cascade_delta,
        concurrency=concurrency,
        retries=retries,
        progress=progress,
        n_resamples=bootstrap,
    )
    console = Console()
    print_bench(console, result)
    if json_out is not None:
        console.print(f"json: {result.to_json(json_out)}", highlight=False, markup=False)
    if page is not None:
        console.print(f"page: {write_bench_page(result, page)}", highlight=False, markup=False)
    console.print(f"folder: {result.folder}", highlight=False, markup=False)
    return EXIT_OK
