"""``jurist judge DATA``: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from jurist._local_files import roots_of
from jurist.cli._app import app
from jurist.cli._bounds import VERDICT_MAX_TOKENS_HELP, bounded
from jurist.cli._catalog_judge import HELP as CATALOG_JUDGE_HELP
from jurist.cli._catalog_judge import catalog_judge, refuse_with_judge
from jurist.cli._choices import CRITERIA_SCALES, DEFAULT_MIN_COVERAGE
from jurist.cli._engine_options import EngineOptions, engine_options
from jurist.cli._help import choices_metavar, template_help
from jurist.cli._model_options import ModelOptions, model_options
from jurist.cli._run_flags import RunFlags, run_flags
from jurist.cli._turn import MAX_TOOL_CHARS_HELP, TURN_HELP, FilesRootFlag, parse_turn
from jurist.errors import ConfigError


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


@app.command("judge")
@model_options(thinking=True, temperature_help="Judge sampling temperature.")
@engine_options
@run_flags(out_help="Output folder or .jsonl file; default runs/<data>-<template>/.")
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
    max_tokens: Annotated[
        int | None, typer.Option(**bounded("max_tokens", help=VERDICT_MAX_TOKENS_HELP))
    ] = None,
    explanations: Annotated[
        bool, typer.Option(help="Ask for a short explanation with each verdict.")
    ] = False,
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
    grader: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="An OpenAI grader JSON (one grader, a list, or an eval's testing_criteria) "
            "instead of --template: {{ item.x }} is the row, {{ sample.output_text }} the "
            "--response-field. Model graders call their OpenAI model unless --model is given.",
        ),
    ] = None,
    allow_python_graders: Annotated[
        bool,
        typer.Option(
            help="Run the grader file's python graders (code from the file) in a separate, "
            "time- and memory-bounded process; refused without this flag.",
        ),
    ] = False,
    turn: Annotated[str, typer.Option(help=TURN_HELP)] = "last",
    max_tool_chars: Annotated[
        int, typer.Option(**bounded("max_tool_chars", help=MAX_TOOL_CHARS_HELP))
    ] = 2000,
    files_root: FilesRootFlag = None,
    *,
    options: ModelOptions,
    engine_options: EngineOptions,
    run: RunFlags,
) -> int:
    """Judge every item of DATA with one template and write the results as JSONL."""
    from jurist.cli._run import check_outputs, finish_run, run_engine
    from jurist.data import open_source
    from jurist.judges import ItemJudge, LLMJudge
    from jurist.judges._protocol import models_of
    from jurist.templates import get_template
    from jurist.templates._criteria import criteria_template

    roots = roots_of(files_root, what="--files-root")
    if grader is not None:
        if judge_name is not None or criteria is not None or template != DEFAULT_TEMPLATE:
            raise ConfigError("--grader names the judge: give no --template, --criteria or --judge")
        return _judge_with_grader(
            data,
            grader,
            allow_python=allow_python_graders,
            fields={
                "prompt": prompt_field,
                "response": response_field,
                **_parse_field_flags(field or []),
            },
            roots=roots,
            options=options,
            engine_options=engine_options,
            run=run,
        )
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
        given.update(options.judge_options())
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
    out_path = _output_path(run.out, data, _run_name(template))
    run_dir = check_outputs(out_path, [data], overwrite=run.overwrite)
    source = open_source(data, files_root=roots)
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
    if judge_name is None and judge_model.capabilities.scalar:
        # a scalar reward model: its reward, mapped to (0, 1), is the score
        if template != DEFAULT_TEMPLATE or criteria is not None:
            raise ConfigError(
                f"{judge_model.spec} is a scalar reward model: it takes no --template or "
                "--criteria (it scores the response itself)"
            )
        from jurist.judges import RewardModelJudge

        the_judge = RewardModelJudge(judge_model, concurrency=options.concurrency)
        template = "reward_model"
    elif judge_name is None:
        the_judge = LLMJudge(
            judge_model,
            tpl,
            explanations=explanations,
            temperature=options.temperature,
            max_tokens=max_tokens,
            concurrency=options.concurrency,
            scoring=scoring,
            min_coverage=min_coverage,
            low_coverage=low_coverage,
            output=output,
            turn=parse_turn(turn),
            max_tool_chars=max_tool_chars or None,
            **options.judge_options(),
        )
    if judge_name is None:
        judge_models = [judge_model]
    engine = engine_options.build(options)
    run_options = run.options(run_dir, fields=fields, files_root=roots)
    note = options.default_note if judge_name is None else None
    if note is not None:  # the demonstration model stands in for the default: say so first
        say_default_note(note)
        run_options = run_options.model_copy(update={"notes": {"default_model": note}})
    done = run_engine(the_judge, data, run_options, engine, command="judge")
    spec = ", ".join(m.spec for m in judge_models)
    extra = {"model": spec, "template": template, **({"note": note} if note else {})}
    return finish_run(done, out_path, extra=extra, otel=run.otel)


def _judge_with_grader(
    data: Path,
    grader: Path,
    *,
    allow_python: bool,
    fields: dict[str, str],
    roots: Any,
    options: ModelOptions,
    engine_options: EngineOptions,
    run: RunFlags,
) -> int:
    """``jurist judge DATA --grader FILE``: the grader file's graders as the judge."""
    from jurist.cli._run import check_outputs, finish_run, run_engine
    from jurist.compat.openai_graders import load_grader
    from jurist.data import open_source
    from jurist.judges._protocol import models_of
    from jurist.models import server_spec

    limits = engine_options.model_limits
    given = options.build(options.spec, limits=limits) if options.models else None
    the_judge = load_grader(
        grader,
        model=given
        if given is not None
        else (lambda name: options.build(server_spec(name), limits=limits)),
        allow_python=allow_python,
    )
    specs = [m.spec for m in models_of(the_judge)]
    engine_options.check(specs)
    out_path = _output_path(run.out, data, grader.stem)
    run_dir = check_outputs(out_path, [data], overwrite=run.overwrite)
    source = open_source(data, files_root=roots)
    if source.scan(fields, the_judge.required_fields).items == 0:
        raise ConfigError(f"{data}: no items to judge")
    engine = engine_options.build(options)
    run_options = run.options(run_dir, fields=fields, files_root=roots)
    done = run_engine(the_judge, data, run_options, engine, command="judge")
    spec = ", ".join(specs) or "none"
    return finish_run(done, out_path, extra={"model": spec, "grader": str(grader)}, otel=run.otel)


def say_default_note(note: str) -> None:
    """Print why the judge is the demonstration model, plainly, on stderr."""
    from rich.console import Console

    Console(stderr=True).print(f"WARNING: {note}", style="bold", markup=False, soft_wrap=True)


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


def judge_models_of(judge: Any) -> list[str]:
    from jurist.judges._protocol import models_of

    return [m.spec for m in models_of(judge)]


def judge_template(name: str, found: Any) -> Any:
    """The template of the catalog judge ``found`` (what the data is checked against)."""
    tpl = getattr(found, "template", None)
    if tpl is None:
        judges = getattr(found, "judges", None) or ()
        tpl = getattr(judges[0], "template", None) if judges else None
    if tpl is None:
        raise ConfigError(f"--judge {name!r} has no template (a judges.* entry is needed)")
    return tpl
