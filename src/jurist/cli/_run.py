"""The run framework of the run commands (``judge``, ``compare``, ``grade``,
``eval-model``, ``ingest``): where a run's files go, the run itself, and its end.

A command parses its flags, builds its judge, its :class:`~jurist.engines.RunOptions`
(:meth:`~jurist.cli._run_flags.RunFlags.options`) and its engine, and hands them to
:func:`run_engine`, which calls :func:`jurist.engines.aevaluate` once: the engine owns the
run's whole life (checks, resume check, manifest, store, prices, preparing the models
behind the spinner this module gives it, closing them). What stays here is what only a
command line has: the output paths (:func:`check_outputs`), Ctrl-C and SIGTERM (exit 130
/ 143 and the command that resumes), and the files and lines that end a run
(:func:`finish_run`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from jurist._progress import quiet_library_bars
from jurist._secrets import scrub
from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, err_console
from jurist.cli._resume import resume_command
from jurist.cli._summary import print_summary
from jurist.data._item_names import item_name
from jurist.engines import BatchAPIEngine, Engine, RunOptions, aevaluate
from jurist.errors import ConfigError, OutputError
from jurist.runs import Run
from jurist.runs._folder import check_run_folder

if TYPE_CHECKING:
    from jurist.judges import ItemJudge
    from jurist.models import Model

__all__ = [
    "AWAITING",
    "check_outputs",
    "finish_run",
    "first_failures",
    "report_path",
    "run_engine",
    "run_folder",
    "say_awaiting",
    "summary_path",
]


def run_folder(out_path: Path) -> Path:
    """The run store's folder: the output folder, or ``<name>.run`` beside a .jsonl file."""
    if out_path.name == "results.jsonl":
        return out_path.parent
    return out_path.with_name(out_path.stem + ".run")


def summary_path(out_path: Path) -> Path:
    """``summary.json`` in the run folder, or ``<name>.summary.json`` beside a .jsonl file
    (so two runs' files in one folder never overwrite each other)."""
    if out_path.name == "results.jsonl":
        return out_path.parent / "summary.json"
    return out_path.with_name(out_path.stem + ".summary.json")


def report_path(out_path: Path) -> Path:
    """``report.html`` in the run folder, or ``<name>.report.html`` beside a .jsonl file."""
    if out_path.name == "results.jsonl":
        return out_path.parent / "report.html"
    return out_path.with_name(out_path.stem + ".report.html")


def check_outputs(out_path: Path, inputs: Sequence[Path], *, overwrite: bool) -> Path:
    """Stop before any model is loaded if the outputs would overwrite the input or files
    jurist did not write; the run folder."""
    run_dir = run_folder(out_path)
    ours = (out_path, summary_path(out_path), report_path(out_path))
    for target in ours:
        for data in inputs:
            if target.exists() and target.resolve() == data.resolve():
                raise ConfigError(
                    f"{target}: is the input data; choose another --out (a folder or a new "
                    ".jsonl file)"
                )
    kind = check_run_folder(run_dir, overwrite=overwrite, inputs=inputs)
    if out_path.name != "results.jsonl" and kind != "run" and not overwrite:
        # FILE.jsonl, .summary.json and .report.html are ours only beside our FILE.run folder
        theirs = [str(p) for p in ours if p.exists()]
        if theirs:
            raise ConfigError(
                f"{' and '.join(theirs)} already exist(s) and jurist did not write them "
                f"(there is no run in {run_dir}); choose another --out, or --overwrite"
            )
    return run_dir


def run_engine(
    judge: ItemJudge,
    data: Any,
    options: RunOptions,
    engine: Engine,
    *,
    command: str,
) -> Run:
    """:func:`jurist.engines.aevaluate` to the end, each model's preparation behind a
    spinner; on Ctrl-C (SIGINT) or SIGTERM the run is recorded as interrupted, the saved
    items and the command that resumes are printed, and the exit is 130 (SIGINT) or 143
    (SIGTERM). ``options.run_dir`` is required."""
    if options.run_dir is None:
        raise ValueError("run_engine needs options.run_dir")
    run_dir = options.run_dir
    terminated: list[bool] = []

    async def main() -> Run:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        def on_sigterm() -> None:
            terminated.append(True)
            if task is not None:
                task.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows, not main thread
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            return await aevaluate(data, judge, options, engine=engine, announce=_preparing)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGTERM)

    batch = engine.options if isinstance(engine, BatchAPIEngine) else None
    try:
        with quiet_library_bars(not options.progress):
            run = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        _say_interrupted(run_dir, command, batch=batch is not None)
        raise typer.Exit(143 if terminated else 130) from None
    if batch is not None and batch.file_out is not None:
        _say_nothing_written(run, batch.file_out)
    return run


def _preparing(model: Model) -> Any:
    """The spinner a model's preparation (loading weights, reaching a server) runs in."""
    return err_console.status(f"preparing {escape(model.spec)} ...", spinner="dots")


def _say_nothing_written(run: Run, file_out: Path) -> None:
    """``--batch-file-out`` on a run with nothing left to ask (every answer in the cache,
    or the run already judged): no request file, and the run is finished: say so."""
    summary = run.summary()
    if summary.status == AWAITING:
        return
    why = (
        "every answer was already in the cache"
        if summary.cache_hits and not summary.calls
        else "every item of the run already has its answer"
    )
    Console().print(
        f"--batch-file-out {file_out}: no request file written: {why}; the run is "
        f"{summary.status} and its results are in {run.run_dir}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _say_interrupted(run_dir: Path, command: str, *, batch: bool = False) -> None:
    try:
        run = Run(run_dir)
        saved, expected = len(run), run.manifest.dataset.items
    except ConfigError:  # interrupted before the run folder was made (no manifest yet)
        err_console.print("interrupted before any item was judged", highlight=False, markup=False)
        return
    argv = sys.argv[1:]
    again = (
        resume_command(argv).say()  # keys become variables to set, never printed
        if argv[:1] == [command]
        else f"run again the same `jurist {command} ...` command"
    )
    of = f" of {expected}" if expected is not None else ""
    how = (
        "batches already submitted keep running at the provider and are polled again, "
        "never sent twice; to resume"
        if batch
        else "to resume"
    )
    err_console.print(
        f"interrupted: {saved}{of} items saved in {run_dir}; {how}, {again}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def finish_run(run: Run, out_path: Path, *, extra: dict[str, Any], otel: str | None = None) -> int:
    """Write the results, the summary (:func:`summary_path`) and the HTML report
    (:func:`report_path`), print the summary and the report's path; the exit code.

    A run whose requests were written to a file for an offline engine
    (``--batch-file-out``; status ``awaiting results``) writes only its summary (with the
    request files in ``batch_files``), says which files to answer and the ``jurist
    ingest`` command that reads the answers, and exits 0.
    """
    summary = {**run.summary().model_dump(), **extra, "results": str(out_path)}
    waiting = [Path(p) for p in summary.get("batch_files") or []]
    if summary["status"] != AWAITING or not waiting:
        run.to_jsonl(out_path)
    summary = scrub(summary)
    target = summary_path(out_path)
    try:
        target.write_text(json.dumps(summary, indent=2) + "\n")
    except OSError as e:
        raise OutputError(f"{target}: cannot write the summary: {e.strerror or e}") from None
    if summary["status"] == AWAITING and waiting:
        say_awaiting(run, waiting, str(summary.get("model") or ""), summary["cache_hits"])
        return EXIT_OK
    console = Console()
    print_summary(console, summary, first_failures(run))
    if otel:
        sent = run.to_otel(otel)
        console.print(
            f"OpenTelemetry: {sent} gen_ai.evaluation.result events -> {scrub(otel)}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    report = run.report(report_path(out_path))
    console.print(f"report: {report}", highlight=False, markup=False, soft_wrap=True)
    return EXIT_FAILED_ITEMS if summary["failed"] else EXIT_OK


AWAITING = "awaiting results"


def first_failures(run: Run, limit: int = 5) -> list[tuple[str, str]]:
    """The first failed items of ``run``: each one's name (its id, else its 1-based row
    number) and error."""
    return [
        (item_name(r["idx"], r["item"]), r["error"] or "error")
        for r in run.rows(failed_only=True, limit=limit)
    ]


def say_awaiting(run: Run, files: Sequence[Path], model: str, cache_hits: int = 0) -> None:
    """Name the request files to answer and the ``jurist ingest`` command that follows."""
    saved = len(run)
    expected = run.manifest.dataset.items
    of = f" of {expected}" if expected is not None else ""
    cached = f" ({cache_hits} answer{'s' if cache_hits != 1 else ''} from the cache)"
    first = files[0]
    results = first.with_name(first.stem + ".results" + first.suffix)
    served = model.partition(":")[2] or "MODEL"
    lines = [
        f"{saved}{of} items judged{cached if cache_hits else ''}; the requests of the "
        "others are in " + ", ".join(str(p) for p in files) + " (Batch API lines).",
        "Answer them with an offline engine (or a provider's batch API), e.g.:",
        f"  vllm run-batch -i {shlex.quote(str(first))} -o {shlex.quote(str(results))} "
        f"--model {shlex.quote(served)}",
        "then read the answers into the run:",
        f"  jurist ingest {shlex.quote(str(run.run_dir))} {shlex.quote(str(results))}",
    ]
    Console().print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
