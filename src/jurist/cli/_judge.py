"""``jurist judge DATA``: the main job."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from jurist._progress import quiet_library_bars
from jurist._secrets import scrub
from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, app, err_console
from jurist.cli._bounds import VERDICT_MAX_TOKENS_HELP, bounded
from jurist.cli._catalog_judge import HELP as CATALOG_JUDGE_HELP
from jurist.cli._catalog_judge import catalog_judge, refuse_with_judge
from jurist.cli._engine_options import EngineOptions, engine_options
from jurist.cli._help import choices_metavar, template_help
from jurist.cli._model_options import ModelOptions, model_options
from jurist.cli._repeat_flags import AdaptiveFlag, MinRepeatsFlag, RepeatsFlag
from jurist.cli._resume import resume_command
from jurist.cli._summary import print_summary
from jurist.cli._turn import MAX_TOOL_CHARS_HELP, TURN_HELP, parse_turn
from jurist.data import open_source
from jurist.data._item_names import item_name
from jurist.engines import BatchAPIEngine, Engine, RunOptions, aevaluate
from jurist.engines._evaluate import check_resume
from jurist.errors import ConfigError, OutputError
from jurist.judges import ItemJudge, LLMJudge
from jurist.judges._protocol import models_of
from jurist.judges._weigher import DEFAULT_MIN_COVERAGE
from jurist.models import Model
from jurist.runs import Run
from jurist.runs._folder import check_run_folder
from jurist.templates import get_template
from jurist.templates._criteria import CRITERIA_SCALES, criteria_template


def _parse_field_flags(flags: list[str]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for flag in flags:
        name, sep, column = flag.partition("=")
        if not sep or not name or not column:
            raise ConfigError(
                f"--field {flag!r} must be TEMPLATE_FIELD=COLUMN, e.g. prompt=question"
            )
        mapping[name] = column
    return mapping


def _output_path(out: Path | None, data: Path, template: str) -> Path:
    if out is None:
        name = Path(template).stem if template.endswith((".yaml", ".yml")) else template
        return Path("runs") / f"{data.stem}-{name}" / "results.jsonl"
    if out.suffix.lower() == ".jsonl":
        return out
    return out / "results.jsonl"


DEFAULT_TEMPLATE = "true_false_uncertain"
RETRY_FAILED_HELP = "On resume, judge again the items that failed (--no-retry-failed keeps them)."
OVERWRITE_HELP = (
    "Write into an --out folder or file that jurist did not make (it is refused otherwise)."
)


@app.command("judge")
@model_options(temperature_help="Judge sampling temperature.")
@engine_options
def judge(
    data: Annotated[Path, typer.Argument(help="Items to judge: .jsonl, .json, .csv or .parquet.")],
    template: Annotated[
        str, typer.Option(metavar="NAME", help=template_help("single"))
    ] = DEFAULT_TEMPLATE,
    judge_name: Annotated[
        str | None, typer.Option("--judge", metavar="NAME", help=CATALOG_JUDGE_HELP)
    ] = None,
    criteria: Annotated[
        str | None,
        typer.Option(
            metavar="TEXT",
            help="Ad hoc criteria instead of --template (G-Eval style), judged on --scale: "
            "'Is the answer concise and correct?'.",
        ),
    ] = None,
    scale: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(CRITERIA_SCALES),
            help="The scale of --criteria: Yes/No, Yes/No/Partly, 1-5, 0-10 or 0-100.",
        ),
    ] = "yes_no",
    prompt_field: Annotated[
        str, typer.Option(help="Column holding the prompt / question.")
    ] = "prompt",
    response_field: Annotated[
        str, typer.Option(help="Column holding the response to judge.")
    ] = "response",
    field: Annotated[
        list[str] | None, typer.Option(help="Extra mapping TEMPLATE_FIELD=COLUMN (repeatable).")
    ] = None,
    retries: Annotated[
        int, typer.Option(**bounded("retries", help="Re-asks for an unreadable verdict."))
    ] = 2,
    max_tokens: Annotated[
        int | None, typer.Option(**bounded("max_tokens", help=VERDICT_MAX_TOKENS_HELP))
    ] = None,
    explanations: Annotated[
        bool, typer.Option(help="Ask for a short explanation with each verdict.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(help="Output folder or .jsonl file; default runs/<data>-<template>/."),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[
        bool,
        typer.Option(help="Continue the run in the output folder (--no-resume starts over)."),
    ] = True,
    retry_failed: Annotated[bool, typer.Option(help=RETRY_FAILED_HELP)] = True,
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
    repeats: RepeatsFlag = 1,
    adaptive: AdaptiveFlag = False,
    min_repeats: MinRepeatsFlag = None,
    scoring: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("parse", "logprobs", "auto")),
            help="parse: read the verdict; logprobs: expected score over the verdicts' "
            "probabilities; auto: logprobs where the backend gives them.",
        ),
    ] = "parse",
    min_coverage: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="With logprob scoring: the least probability the judge must put on the "
            "verdicts for its score to count (0 turns the check off).",
        ),
    ] = DEFAULT_MIN_COVERAGE,
    low_coverage: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("fail", "flag")),
            help="Below --min-coverage: fail (no score) or flag (keep it, flagged).",
        ),
    ] = "fail",
    output: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("auto", "text", "json")),
            help="Judge answer format: auto (JSON where the backend takes a schema), text, json.",
        ),
    ] = "auto",
    turn: Annotated[str, typer.Option(help=TURN_HELP)] = "last",
    max_tool_chars: Annotated[
        int, typer.Option(**bounded("max_tool_chars", help=MAX_TOOL_CHARS_HELP))
    ] = 2000,
    *,
    options: ModelOptions,
    engine_options: EngineOptions,
) -> int:
    """Judge every item of DATA with one template and write the results as JSONL."""
    refuse_with_judge(judge_name, template=template != DEFAULT_TEMPLATE, criteria=bool(criteria))
    _check_scoring(scoring, criteria)
    if criteria is not None:
        if template != DEFAULT_TEMPLATE:
            raise ConfigError("--criteria and --template both name the judge's prompt: give one")
        tpl = criteria_template(criteria, scale)
        template = tpl.name
    elif judge_name is not None:
        given = {
            k: v
            for k, v, default in (
                ("max_tokens", max_tokens, None),
                ("explanations", explanations, False),
                ("scoring", scoring, "parse"),
                ("output", output, "auto"),
            )
            if v != default
        }
        from_catalog = catalog_judge(
            judge_name,
            kind="single",
            options=options,
            limits=engine_options.model_limits,
            changes=given,
        )
        tpl, template = judge_template(judge_name, from_catalog), judge_name
    else:
        tpl = get_template(template)
    mapping = {
        "prompt": prompt_field,
        "response": response_field,
        **_parse_field_flags(field or []),
    }
    fields = dict(mapping)  # optional template fields (a reference) map too
    specs = [options.spec] if judge_name is None else judge_models_of(from_catalog)
    engine_options.check(specs)
    out_path = _output_path(out, data, _run_name(template))
    run_dir = check_outputs(out_path, [data], overwrite=overwrite)
    source = open_source(data)
    if source.scan(fields, tpl.fields).items == 0:
        raise ConfigError(f"{data}: no items to judge")

    if output not in ("auto", "text", "json"):
        raise ConfigError(f"--output must be auto, text or json, not {output!r}")
    the_judge: ItemJudge
    if judge_name is not None:
        the_judge = from_catalog
        judge_models = list(models_of(the_judge))
    else:
        judge_model = options.build(options.spec, limits=engine_options.model_limits)
        the_judge = LLMJudge(
            judge_model,
            tpl,
            explanations=explanations,
            temperature=options.temperature,
            max_tokens=max_tokens,
            concurrency=options.concurrency,
            scoring=scoring,  # type: ignore[arg-type]
            min_coverage=min_coverage,
            low_coverage=low_coverage,  # type: ignore[arg-type]
            output=output,  # type: ignore[arg-type]
            turn=parse_turn(turn),
            max_tool_chars=max_tool_chars or None,
        )
        judge_models = [judge_model]
    run_options = RunOptions(
        run_dir=run_dir,
        resume=resume,
        retry_failed=retry_failed,
        overwrite=overwrite,
        fields=fields,
        retries=retries,
        progress=progress,
        repeats=repeats,
        adaptive=adaptive,
        min_repeats=min_repeats,
    )
    engine = engine_options.build(options)
    run = run_engine(the_judge, data, run_options, engine, command="judge", prepare=judge_models)
    spec = ", ".join(m.spec for m in judge_models)
    return finish_run(run, out_path, extra={"model": spec, "template": template})


def _run_name(template: str) -> str:
    """The default run folder's name part for a template, a catalog name or criteria."""
    return template.partition("[")[0].rsplit(".", 1)[-1] if "." in template else template


def _check_scoring(scoring: str, criteria: str | None) -> None:
    if scoring in ("parse", "logprobs", "auto"):
        return
    hint = ""
    if scoring in CRITERIA_SCALES or scoring == "true_false":
        hint = (
            f"; the scale of --criteria is --scale ({', '.join(CRITERIA_SCALES)})"
            if criteria is not None
            else f"; a template's scale comes with --template {scoring}"
        )
    raise ConfigError(
        f"--scoring picks how the verdict is read: parse, logprobs or auto, not {scoring!r}{hint}"
    )


def judge_models_of(judge: ItemJudge) -> list[str]:
    return [m.spec for m in models_of(judge)]


def judge_template(name: str, found: ItemJudge) -> Any:
    """The template of the catalog judge ``found`` (what the data is checked against)."""
    tpl = getattr(found, "template", None)
    if tpl is None:
        judges = getattr(found, "judges", None) or ()
        tpl = getattr(judges[0], "template", None) if judges else None
    if tpl is None:
        raise ConfigError(f"--judge {name!r} has no template (a judges.* entry is needed)")
    return tpl


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
    data: Path,
    options: RunOptions,
    engine: Engine,
    *,
    command: str,
    prepare: Model | Sequence[Model],
) -> Run:
    """:func:`run_through_engine` to the end; on Ctrl-C (SIGINT) or SIGTERM the run is
    recorded as interrupted, the saved items and the command that resumes are printed,
    and the exit is 130 (SIGINT) or 143 (SIGTERM). ``options.run_dir`` is required."""
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
            return await run_through_engine(judge, data, options, engine, prepare=prepare)
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


async def run_through_engine(
    judge: ItemJudge,
    data: Path,
    options: RunOptions,
    engine: Engine,
    *,
    prepare: Model | Sequence[Model],
) -> Run:
    """Let the engine check the judge, refuse a resume whose settings changed, then
    prepare the model(s)
    (:meth:`~jurist.engines.Engine.prepare`: the local engine loads them, behind a
    spinner; the Ray and batch-API engines load nothing in this process), run it, and
    close them whatever happens."""
    models = [prepare] if isinstance(prepare, Model) else list(prepare)
    try:
        engine.check(judge, options)  # before any model is loaded
        check_resume(data, judge, options, engine)  # a changed setting, before the weights
        await engine.prepare(
            models,
            announce=lambda m: err_console.status(
                f"preparing {escape(m.spec)} ...", spinner="dots"
            ),
        )
        return await aevaluate(data, judge, options, engine=engine)
    finally:
        for m in models:
            await m.aclose()


def finish_run(run: Run, out_path: Path, *, extra: dict[str, Any]) -> int:
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
