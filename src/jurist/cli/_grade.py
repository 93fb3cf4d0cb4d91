"""``jurist grade DATA --rubric RUBRIC``: grade every item against a rubric, through the engine.

One or more ``--model`` judges grade each submission criterion by criterion
(:class:`~jurist.CriterionGrader` bound to the rubric). The option shuffle's ``--seed``
defaults to 42 so that the run's configuration, and so its resume, is stable.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from jurist._local_files import roots_of
from jurist.cli._app import app
from jurist.cli._bounds import VERDICT_MAX_TOKENS_HELP, bounded
from jurist.cli._catalog_judge import catalog_models
from jurist.cli._choices import (
    BINARY_AGGREGATIONS,
    NOMINAL_AGGREGATIONS,
    ORDINAL_AGGREGATIONS,
)
from jurist.cli._engine_options import EngineOptions, engine_options
from jurist.cli._help import choices_metavar
from jurist.cli._model_options import ModelOptions, model_options
from jurist.cli._run_flags import RunFlags, run_flags
from jurist.cli._turn import MAX_TOOL_CHARS_HELP, TURN_HELP, FilesRootFlag, parse_turn

if TYPE_CHECKING:
    from jurist.models import Model


@app.command("grade")
@model_options(
    thinking=True, multiple_models=True, concurrency=16, concurrency_help="Items in flight at once."
)
@engine_options
@run_flags(
    out_help="Output folder or .jsonl; default runs/<data>-<rubric>/.",
    resume_help="Continue the run in the folder.",
)
def grade(
    data: Annotated[Path, typer.Argument(help="Submissions: .jsonl, .json, .csv or .parquet.")],
    rubric: Annotated[Path, typer.Option(help="The rubric: .yaml, .yml or .json.")],
    judge_name: Annotated[
        str | None,
        typer.Option(
            "--judge",
            metavar="NAME",
            help="A catalog judge whose model(s) grade instead of --model (a panel's: one "
            "grader each), overrides allowed: 'judges.likert.NAME[temperature=0]'.",
        ),
    ] = None,
    submission_field: Annotated[
        str, typer.Option(help="Column holding the submission.")
    ] = "response",
    query_field: Annotated[str, typer.Option(help="Column holding the prompt.")] = "prompt",
    aggregation: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(BINARY_AGGREGATIONS), help="Binary criteria across judges."
        ),
    ] = "majority",
    ordinal_aggregation: Annotated[
        str, typer.Option(metavar=choices_metavar(ORDINAL_AGGREGATIONS), help="Ordinal criteria.")
    ] = "mean",
    nominal_aggregation: Annotated[
        str, typer.Option(metavar=choices_metavar(NOMINAL_AGGREGATIONS), help="Nominal criteria.")
    ] = "mode",
    shuffle_options: Annotated[bool, typer.Option(help="Shuffle option order per call.")] = True,
    seed: Annotated[int, typer.Option(**bounded("seed", help="Seed of the option shuffles."))] = 42,
    max_tokens: Annotated[
        int | None, typer.Option(**bounded("max_tokens", help=VERDICT_MAX_TOKENS_HELP))
    ] = None,
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
    """Grade DATA against a rubric; writes results.jsonl (a grade report per item)."""
    from jurist.cli._run import check_outputs, finish_run, run_engine
    from jurist.cli._traces import trajectory_judge
    from jurist.judges.rubric import CriterionGrader, Rubric
    from jurist.trajectories import TrajectoryRubric

    roots = roots_of(files_root, what="--files-root")

    trajectory = TrajectoryRubric.from_file_if_trajectory(rubric)  # checks beside criteria
    the_rubric = Rubric.from_file(rubric) if trajectory is None else None
    out = run.out
    if out is None:
        out_path = Path("runs") / f"{data.stem}-{rubric.stem}" / "results.jsonl"
    else:
        out_path = out if out.suffix.lower() == ".jsonl" else out / "results.jsonl"
    run_dir = check_outputs(out_path, [data, rubric], overwrite=run.overwrite)
    models: list[Model]
    temperature: float | None
    if judge_name is not None:
        models, temperature = catalog_models(
            judge_name, options, limits=engine_options.model_limits
        )
        engine_options.check([m.spec for m in models])
    else:
        temperature = options.temperature
        engine_options.check(options.specs)
        models = options.build_all(limits=engine_options.model_limits)
    grader = CriterionGrader(
        judges=models,
        aggregation=aggregation,
        ordinal_aggregation=ordinal_aggregation,
        nominal_aggregation=nominal_aggregation,
        shuffle_options=shuffle_options,
        seed=seed,
        temperature=options.temperature if temperature is None else temperature,
        concurrency=options.concurrency,
        max_tokens=max_tokens,
        turn=parse_turn(turn),
        max_tool_chars=max_tool_chars or None,
        **options.judge_options(),
    )
    judge: Any = (
        grader.for_rubric(the_rubric, submission_field=submission_field, query_field=query_field)
        if the_rubric is not None
        else trajectory_judge(trajectory, grader, models, query_field)
    )
    engine = engine_options.build(options)
    done = run_engine(judge, data, run.options(run_dir, files_root=roots), engine, command="grade")
    return finish_run(
        done,
        out_path,
        extra={"model": ", ".join(m.spec for m in models), "rubric": str(rubric)},
        otel=run.otel,
    )
