"""``jurist grade DATA --rubric RUBRIC``: grade every item against a rubric, through the engine.

One or more ``--model`` judges grade each submission criterion by criterion
(:class:`~jurist.CriterionGrader` bound to the rubric). The option shuffle's ``--seed``
defaults to 42 so that the run's configuration, and so its resume, is stable.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from jurist.cli._app import app
from jurist.cli._judge import finish_run, run_folder, run_through_engine
from jurist.cli._model_options import build_model, resolve_model_spec
from jurist.models import Model


@app.command("grade")
def grade(
    data: Annotated[Path, typer.Argument(help="Submissions: .jsonl, .json, .csv or .parquet.")],
    rubric: Annotated[Path, typer.Option(help="The rubric: .yaml, .yml or .json.")],
    model: Annotated[
        list[str] | None, typer.Option(help="A judge provider:name (repeat for an ensemble).")
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible server URL.")] = None,
    api_key: Annotated[
        str | None, typer.Option(help="API key; default $OPENAI_API_KEY.", envvar="JURIST_API_KEY")
    ] = None,
    submission_field: Annotated[
        str, typer.Option(help="Column holding the submission.")
    ] = "response",
    query_field: Annotated[str, typer.Option(help="Column holding the prompt.")] = "prompt",
    aggregation: Annotated[str, typer.Option(help="Binary criteria across judges.")] = "majority",
    ordinal_aggregation: Annotated[str, typer.Option(help="Ordinal criteria.")] = "mean",
    nominal_aggregation: Annotated[str, typer.Option(help="Nominal criteria.")] = "mode",
    shuffle_options: Annotated[bool, typer.Option(help="Shuffle option order per call.")] = True,
    seed: Annotated[int, typer.Option(help="Seed of the option shuffles.")] = 42,
    concurrency: Annotated[int, typer.Option(min=1, help="Items in flight at once.")] = 16,
    retries: Annotated[int, typer.Option(min=0, help="Re-asks for an unreadable verdict.")] = 2,
    max_retries: Annotated[int, typer.Option(min=0, help="Retries of transient API errors.")] = 3,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds per API call.")] = 60.0,
    out: Annotated[
        Path | None, typer.Option(help="Output folder or .jsonl; default runs/<data>-<rubric>/.")
    ] = None,
    cache: Annotated[bool, typer.Option(help="Cache deterministic calls in SQLite.")] = True,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[bool, typer.Option(help="Continue the run in the folder.")] = True,
) -> int:
    """Grade DATA against a rubric; writes results.jsonl (a grade report per item)."""
    from jurist import CriterionGrader, Rubric

    the_rubric = Rubric.from_file(rubric)
    models: list[Model] = [
        build_model(
            resolve_model_spec(m, base_url),
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            cache=cache,
        )
        for m in (model or [None])  # type: ignore[list-item]
    ]
    grader = CriterionGrader(
        judges=models,
        aggregation=aggregation,
        ordinal_aggregation=ordinal_aggregation,
        nominal_aggregation=nominal_aggregation,
        shuffle_options=shuffle_options,
        seed=seed,
        concurrency=concurrency,
    )
    judge = grader.for_rubric(
        the_rubric, submission_field=submission_field, query_field=query_field
    )
    if out is None:
        out_path = Path("runs") / f"{data.stem}-{rubric.stem}" / "results.jsonl"
    else:
        out_path = out if out.suffix.lower() == ".jsonl" else out / "results.jsonl"
    run = asyncio.run(
        run_through_engine(
            judge,
            data,
            run_folder(out_path),
            fields=None,
            retries=retries,
            progress=progress,
            resume=resume,
            prepare=models,
        )
    )
    return finish_run(
        run, out_path, extra={"model": ", ".join(m.spec for m in models), "rubric": str(rubric)}
    )
