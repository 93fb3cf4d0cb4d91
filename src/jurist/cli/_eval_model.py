"""``jurist eval-model DATA --model M --judge NAME``: inference, then a catalog judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.cli._model_options import ModelOptions, model_options
from jurist.cli._run_flags import RunFlags, run_flags
from jurist.cli._summary import cost_text
from jurist.cli._turn import FilesRootFlag
from jurist.errors import ConfigError, DataError, OutputError
from jurist.models._backends import DEFAULT_MODEL, server_spec


def _pairs(flags: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for flag in flags:
        key, sep, value = flag.partition("=")
        if not sep or not key or not value:
            raise ConfigError(f"{what} {flag!r} must be JUDGE_FIELD=COLUMN, e.g. prompt=question")
        out[key] = value
    return out


def _out_path(out: Path | None, data: Path) -> Path:
    if out is None:
        return Path("runs") / f"{data.stem}-eval-model" / "results.jsonl"
    return out if out.suffix.lower() == ".jsonl" else out / "results.jsonl"


@app.command("eval-model")
@model_options(
    model_required=True,
    model_help="The model under test, provider:name (e.g. "
    f"{DEFAULT_MODEL.partition(':')[0]}:/path/to/model); a bare name with --base-url is "
    f"{server_spec('NAME')}.",
    base_url_help="OpenAI-compatible server of the model under test.",
    timeout=120.0,
    cache=False,
    concurrency=8,
    concurrency_help="Generations in flight.",
    temperature_help="Sampling temperature of the model under test.",
)
@run_flags(
    repeats=False,
    out_help="Output .jsonl or folder; default runs/<data>-eval-model/.",
    progress_help="Show progress bars.",
    resume_help="Continue the run in the folder.",
)
def eval_model(
    data: Annotated[Path, typer.Argument(help="Instances: .jsonl, .json, .csv or .parquet.")],
    judge: Annotated[
        str,
        typer.Option(help="A catalog judge, overrides allowed: 'judges.likert.x[temperature=0]'."),
    ],
    prompt_field: Annotated[str, typer.Option(help="Column sent to the model.")] = "prompt",
    prompt_template: Annotated[
        str | None, typer.Option(help="Instead, a prompt with {column} placeholders.")
    ] = None,
    system_prompt: Annotated[
        str | None, typer.Option(help="A system message for the model under test.")
    ] = None,
    reference_field: Annotated[
        str | None,
        typer.Option(help="Column holding the reference answer (if the judge uses one)."),
    ] = None,
    context_field: Annotated[
        list[str] | None,
        typer.Option(help="Judge field from a column, JUDGE_FIELD=COLUMN (repeatable)."),
    ] = None,
    max_tokens: Annotated[
        int, typer.Option(**bounded("max_tokens", help="Tokens per generated answer."))
    ] = 256,
    judge_concurrency: Annotated[
        int, typer.Option(**bounded("judge_concurrency", help="Judge calls in flight."))
    ] = 16,
    seed: Annotated[
        int, typer.Option(**bounded("seed", help="Seed of the bootstrap interval."))
    ] = 0,
    catalog_dir: Annotated[
        Path | None, typer.Option("--catalog", help="User catalog folder (else $JURIST_CATALOG).")
    ] = None,
    files_root: FilesRootFlag = None,
    *,
    options: ModelOptions,
    run: RunFlags,
) -> int:
    """Generate an answer per instance with --model, judge them with --judge; writes a run
    folder (results.jsonl, summary.json, report.html) that resumes."""
    from jurist import catalog
    from jurist._local_files import roots_of
    from jurist._missing import is_missing
    from jurist.cli._run import check_outputs, run_engine
    from jurist.data import read_records
    from jurist.data._item_names import item_name
    from jurist.engines import LocalEngine
    from jurist.pipeline import JudgeMetric
    from jurist.pipeline._generate_judge import GenerateThenJudge, prompt_columns

    roots = roots_of(files_root, what="--files-root")
    rows = read_records(data, files_root=roots)
    if not rows:
        raise ConfigError(f"{data}: no instances")
    context = _pairs(context_field or [], "--context-field")
    the_judge = catalog.get(judge, root=catalog_dir)
    metric = JudgeMetric(
        the_judge,
        reference_field=reference_field,
        context_fields=context or None,
        retries=run.retries,
        concurrency=judge_concurrency,
        seed=seed,
    )
    if not context and metric.context.get("prompt") == "prompt" and prompt_field != "prompt":
        metric.context["prompt"] = prompt_field
    # every field the prompt and the judge need, on every instance, before any folder or model
    for i, row in enumerate(rows):
        for column in prompt_columns(prompt_field, prompt_template):
            if is_missing(row.get(column)):
                raise DataError(
                    f"{data}: {item_name(i, row)}: the prompt needs field {column!r}, which is "
                    f"missing; the item has fields {sorted(row)}"
                )
        try:
            metric.items([""], task_data=[row])
        except DataError as e:  # JudgeMetric names its one instance "instance 0"
            why = str(e).removeprefix("instance 0: ")
            raise DataError(f"{data}: {item_name(i, row)}: {why}") from None
    out_path = _out_path(run.out, data)
    run_dir = check_outputs(out_path, [data], overwrite=run.overwrite)
    under_test = options.build()
    both = GenerateThenJudge(
        under_test,
        metric,
        prompt_field=prompt_field,
        prompt_template=prompt_template,
        system_prompt=system_prompt,
        max_tokens=max_tokens,
        temperature=options.temperature,
        concurrency=options.concurrency,
        judge_concurrency=judge_concurrency,
    )
    run_options = run.options(run_dir, concurrency=options.concurrency, files_root=roots)
    done = run_engine(both, data, run_options, LocalEngine(), command="eval-model")
    return _finish(
        done, metric, out_path, data=data, judge=judge, model=under_test.spec, otel=run.otel
    )


def _finish(
    run: Any,
    metric: Any,
    out_path: Path,
    *,
    data: Path,
    judge: str,
    model: str,
    otel: str | None = None,
) -> int:
    """Write the instance records, the summary and the report; print them."""
    from jurist._files import replaced_atomically
    from jurist._secrets import scrub
    from jurist.cli._run import first_failures, report_path, summary_path
    from jurist.pipeline import InstanceResult
    from jurist.types import Usage

    instances = []
    inference = Usage()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(out_path, what="the results") as tmp, tmp.open("wb") as f:
        for row in run.rows():
            o = row["outcome"]
            verdict = o.get("verdict", o.get("winner"))
            if not isinstance(verdict, str | int | float) or isinstance(verdict, bool):
                verdict = None
            instances.append(
                InstanceResult(
                    index=row["idx"],
                    score=row["score"],
                    verdict=verdict,
                    error=row["error"],
                    outcome=o,
                )
            )
            inference = inference + Usage.model_validate(o.get("inference_usage") or {})
            rec = {
                **row["item"],
                "index": row["idx"],
                "model_prompt": o.get("model_prompt"),
                "prediction": o.get("prediction"),
                "score": row["score"],
                "verdict": verdict,
                "explanation": o.get("explanation"),
                "error": row["error"],
                "judge_input": o.get("judge_input"),
                "judge_output": o.get("judge_output"),
            }
            f.write(orjson.dumps(rec, option=orjson.OPT_NON_STR_KEYS, default=str) + b"\n")
    g = metric.aggregate(instances)
    summary = {
        **run.summary().model_dump(),
        **g.model_dump(mode="json"),
        "data": str(data),
        "model": model,
        "judge": judge,
        "inference_usage": inference.model_dump(),
        "results": str(out_path),
    }
    summary = scrub(summary)  # the judge name may carry [model_options.api_key=...]
    target = summary_path(out_path)
    try:
        target.write_text(json.dumps(summary, indent=2) + "\n")
    except OSError as e:
        raise OutputError(f"{target}: cannot write the summary: {e.strerror or e}") from None
    report = run.report(report_path(out_path))
    _print(summary, first_failures(run), report)
    if otel:
        sent = run.to_otel(otel)
        Console().print(
            f"OpenTelemetry: {sent} gen_ai.evaluation.result events -> {scrub(otel)}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    return EXIT_FAILED_ITEMS if g.n_failed else EXIT_OK


def _print(summary: dict[str, Any], failures: list[tuple[str, str]], report: Path) -> None:
    console = Console()
    table = Table(title=f"jurist eval-model: {escape(summary['data'])}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value")

    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.4f}"

    ci = (
        f"[{num(summary['ci_low'])}, {num(summary['ci_high'])}] at {summary['confidence']:.0%}"
        if summary["ci_low"] is not None
        else "- (fewer than 3 scored)"
    )
    rows = [
        ("model under test", summary["model"]),
        ("judge", summary["judge"]),
        ("instances", str(summary["n"])),
        ("scored", str(summary["n_scored"])),
        ("failed", str(summary["n_failed"])),
        ("mean score", num(summary["mean"])),
        ("confidence interval", ci),
    ]
    if summary.get("win_rate") is not None:
        rows.append(("win rate (A)", num(summary["win_rate"])))
    rows.append(("cost", cost_text(summary)))
    rows.append(("run", summary["run_dir"]))
    rows.append(("results", summary["results"]))
    for k, v in rows:
        table.add_row(k, escape(v))
    console.print(table)
    if failures:
        failed = summary["n_failed"]
        console.print(f"[yellow]{failed} instance(s) got no score[/]; first {len(failures)}:")
        for name, error in failures:
            console.print(f"  {name}: {error}", highlight=False, markup=False)
    console.print(f"report: {report}", highlight=False, markup=False, soft_wrap=True)
