"""``jurist run SUITE``: every cell of a suite file, its bars, one table and one page.

Each cell (dataset x judge) is a run folder ``<out>/<dataset>/<judge>`` judged through
the run path every run command takes (:func:`jurist.cli._run.run_engine`, so
:func:`jurist.engines.aevaluate`): killed at any point, the same command resumes every
cell where it stopped and judges nothing twice. Exit status: 0 every bar met, 1 a bar
missed, 2 a bad suite file (one line naming the file, the line and the key), 3 a runtime
error, 130 / 143 interrupted. ``--dry-run`` prints the plan and its worst-case cost and
calls nothing. See ``docs/suites.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import EXIT_OK, app
from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.pipeline.suites import Plan, Suite

__all__ = ["EXIT_BAR_MISSED", "run_suite"]

EXIT_BAR_MISSED = 1
"""Exit status of ``jurist run``: a cell missed a bar."""


@app.command("run")
def run_suite(
    suite_file: Annotated[
        Path, typer.Argument(metavar="SUITE", help="The suite file (YAML, version: 1).")
    ],
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the plan and its worst-case cost; call nothing, write nothing."
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(help="The suite's output folder (default: settings.out, else runs/<suite>)."),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar per cell.")] = True,
    resume: Annotated[
        bool,
        typer.Option(help="Continue each cell's run where it stopped (--no-resume starts over)."),
    ] = True,
) -> int:
    """Run a suite file: every dataset with every judge, each cell a resumable run folder;
    exit 1 when a cell misses a bar."""
    from jurist.pipeline.suites import load_suite

    suite = load_suite(suite_file, out=out, graders=_grader_loader())
    _check_baselines(suite)
    if dry_run:
        from jurist.pipeline.suites import plan

        _print_plan(suite, plan(suite))
        return EXIT_OK
    return _run(suite, progress=progress, resume=resume)


def _grader_loader() -> Any:
    """:mod:`jurist.compat`'s OpenAI grader loader, or ``None`` when this jurist has none."""
    import importlib

    try:  # by name: the module comes with jurist's OpenAI graders support
        module = importlib.import_module("jurist.compat.openai_graders")
    except ImportError:
        return None
    return getattr(module, "load_grader", None)


def _check_baselines(suite: Suite) -> None:
    """Every baseline a ``max_drop`` bar names exists before any call (a usage error)."""
    from jurist.pipeline.suites._bars import baseline_folder

    for cell in suite.cells():
        for bar in cell.bars:
            if not hasattr(bar, "max_drop"):
                continue
            folder = baseline_folder(suite.resolve(bar.baseline), cell.dataset, cell.judge)
            if not (folder / "manifest.json").is_file():
                i = suite.file.bars.index(bar)
                raise ConfigError(
                    f"{suite.where('bars', i, 'baseline')}: no baseline run for cell "
                    f"{cell.dataset}/{cell.judge} at {folder}"
                )


def _money(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def _print_plan(suite: Suite, the_plan: Plan) -> None:
    console = Console()
    table = Table(title=f"jurist run --dry-run: {escape(suite.name)} (nothing is called)")
    for name in ("dataset", "judge", "items", "done", "calls ≤", "prompt tokens ≤",
                 "answer tokens ≤", "cost ≤"):  # fmt: skip
        table.add_column(name, justify="right" if "≤" in name or name in ("items", "done")
                         else "left")  # fmt: skip
    for c in the_plan.cells:
        num = [("-" if v is None else str(v)) for v in (c.calls, c.prompt_tokens,
               c.completion_tokens)]  # fmt: skip
        table.add_row(c.dataset, c.judge, str(c.items), str(c.done), *num, _money(c.cost))
    console.print(table)
    for c in the_plan.cells:
        lines = [f"bars: {'; '.join(c.bars)}"] if c.bars else []
        lines += [f"cost unknown: {c.note}"] if c.note else []
        for line in lines:
            console.print(f"{c.dataset} x {c.judge}: {line}", highlight=False, markup=False,
                          soft_wrap=True)  # fmt: skip
    console.print(
        f"worst-case cost: {_money(the_plan.cost)} over {len(the_plan.cells)} cells "
        f"(every item judged, every retry taken, every answer as long as allowed); "
        f"output: {suite.out}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _run(suite: Suite, *, progress: bool, resume: bool) -> int:
    from jurist._secrets import scrub
    from jurist.cli._run import run_engine
    from jurist.cli._run_flags import RunFlags
    from jurist.engines import LocalEngine
    from jurist.engines._run_options import with_overrides
    from jurist.pipeline.suites import cell_data, cell_fields, cell_judge, check_bars
    from jurist.pipeline.suites._page import CellRow

    settings = suite.file.settings
    console = Console()
    cache: dict[str, Any] = {}
    rows: list[CellRow] = []
    cells = suite.cells()
    for n, cell in enumerate(cells, 1):
        console.print(
            f"[{n}/{len(cells)}] {cell.dataset} x {cell.judge} -> {cell.run_dir}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        flags = RunFlags(
            progress=progress,
            resume=resume,
            retry_failed=settings.retry_failed,
            retries=settings.retries,
        )
        options = flags.options(
            cell.run_dir, fields=cell_fields(cell), concurrency=settings.concurrency
        )
        options = with_overrides(options, {"prices": settings.prices or None})
        data = cell_data(suite, cell, cache)
        run = run_engine(cell_judge(suite, cell), data, options, LocalEngine(), command="run")
        summary = run.summary()
        run.to_jsonl(cell.run_dir / "results.jsonl")
        (cell.run_dir / "summary.json").write_text(
            json.dumps(scrub(summary.model_dump()), indent=2) + "\n", encoding="utf-8"
        )
        run.report(cell.run_dir / "report.html")
        results = check_bars(
            run, cell.bars, settings, dataset=cell.dataset, judge=cell.judge,
            resolve=suite.resolve,
        )  # fmt: skip
        rows.append(
            CellRow(
                dataset=cell.dataset,
                judge=cell.judge,
                report=f"{cell.dataset}/{cell.judge}/report.html",
                items=summary.items,
                scored=summary.scored,
                failed=summary.failed,
                mean=summary.mean_score,
                cost=summary.cost,
                bars=results,
            )
        )
    return _finish(suite, rows, console)


def _finish(suite: Suite, rows: list[Any], console: Console) -> int:
    from jurist.pipeline.suites._page import write_suite_page

    table = Table(title=f"jurist run: {escape(suite.name)}")
    for name in ("dataset", "judge", "items", "scored", "failed", "mean", "cost", "bars"):
        table.add_column(name, justify="right" if name in ("items", "scored", "failed",
                         "mean", "cost") else "left")  # fmt: skip
    mark = {"pass": "pass", "fail": "[red]MISSED[/]", "inconclusive": "[yellow]inconclusive[/]"}
    for r in rows:
        bars = "\n".join(
            f"{escape(b.bar)}: {'-' if b.value is None else f'{b.value:.3f}'} {mark[b.outcome]}"
            for b in r.bars
        )
        mean = "-" if r.mean is None else f"{r.mean:.3f}"
        table.add_row(escape(r.dataset), escape(r.judge), str(r.items), str(r.scored),
                      str(r.failed), mean, _money(r.cost), bars or "-")  # fmt: skip
    console.print(table)
    results = [b for r in rows for b in r.bars]
    missed = [b for b in results if not b.passed]
    page = write_suite_page(suite.name, rows, suite.out / "suite.html")
    record = {
        "suite": str(suite.path),
        "passed": not missed,
        "cells": [
            {
                "dataset": r.dataset,
                "judge": r.judge,
                "items": r.items,
                "scored": r.scored,
                "failed": r.failed,
                "mean_score": r.mean,
                "cost": r.cost,
                "bars": [b.model_dump() for b in r.bars],
            }
            for r in rows
        ],
    }
    (suite.out / "suite.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    console.print(f"page: {page}", highlight=False, markup=False, soft_wrap=True)
    if missed:
        console.print(
            f"{len(missed)} of {len(results)} bar(s) missed: "
            + "; ".join(f"{b.dataset}/{b.judge}: {b.bar}" for b in missed),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        return EXIT_BAR_MISSED
    console.print(f"every bar met ({len(results)} checked)", highlight=False, markup=False)
    return EXIT_OK
