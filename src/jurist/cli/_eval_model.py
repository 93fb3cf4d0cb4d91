"""``jurist eval-model DATA --model M --judge NAME``: inference, then a catalog judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist._secrets import scrub
from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, app, err_console
from jurist.cli._bounds import bounded
from jurist.cli._judge import summary_path  # FILE.summary.json beside FILE.jsonl
from jurist.cli._model_options import ModelOptions, model_options
from jurist.errors import ConfigError


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
    model_help="The model under test, provider:name (e.g. hf:/path/to/model); a bare name "
    "with --base-url is openai:NAME.",
    base_url_help="OpenAI-compatible server of the model under test.",
    timeout=120.0,
    cache=False,
    concurrency=8,
    concurrency_help="Generations in flight.",
    temperature_help="Sampling temperature of the model under test.",
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
    retries: Annotated[
        int, typer.Option(**bounded("retries", help="Re-asks for an unreadable verdict."))
    ] = 2,
    seed: Annotated[
        int, typer.Option(**bounded("seed", help="Seed of the bootstrap interval."))
    ] = 0,
    catalog_dir: Annotated[
        Path | None, typer.Option("--catalog", help="User catalog folder (else $JURIST_CATALOG).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output .jsonl or folder; default runs/<data>-eval-model/.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    *,
    options: ModelOptions,
) -> int:
    """Generate an answer per instance with --model, judge them with --judge, write JSONL."""
    from jurist import catalog
    from jurist.data import read_records
    from jurist.pipeline import JudgeMetric, aevaluate_model

    rows = read_records(data)
    if not rows:
        raise ConfigError(f"{data}: no instances")
    context = _pairs(context_field or [], "--context-field")
    the_judge = catalog.get(judge, root=catalog_dir)
    metric = JudgeMetric(
        the_judge,
        reference_field=reference_field,
        context_fields=context or None,
        retries=retries,
        concurrency=judge_concurrency,
        seed=seed,
    )
    if not context and metric.context.get("prompt") == "prompt" and prompt_field != "prompt":
        metric.context["prompt"] = prompt_field
    under_test = options.build()
    result = asyncio.run(
        _run(
            rows,
            under_test,
            metric,
            prompt_field=prompt_field,
            prompt_template=prompt_template,
            system_prompt=system_prompt,
            max_tokens=max_tokens,
            temperature=options.temperature,
            concurrency=options.concurrency,
            progress=progress,
            evaluate=aevaluate_model,
        )
    )
    out_path = _out_path(out, data)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as f:
        for rec in result.to_records(rows):
            f.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    g = result.global_scores
    summary = {
        "data": str(data),
        "model": result.model,
        "judge": judge,
        **g.model_dump(mode="json"),
        "inference_usage": result.inference_usage.model_dump(),
        "results": str(out_path),
    }
    summary = scrub(summary)  # the judge name may carry [model_options.api_key=...]
    summary_path(out_path).write_text(json.dumps(summary, indent=2) + "\n")
    _print(summary, [(r.index, r.error or "") for r in result.instances if r.score is None])
    return EXIT_FAILED_ITEMS if g.n_failed else EXIT_OK


async def _run(rows: Any, under_test: Any, metric: Any, *, evaluate: Any, **kw: Any) -> Any:
    try:
        with err_console.status(f"preparing {escape(under_test.spec)} ...", spinner="dots"):
            await under_test.prepare()
        return await evaluate(rows, under_test, metric, **kw)
    finally:
        await under_test.aclose()


def _print(summary: dict[str, Any], failures: list[tuple[int, str]]) -> None:
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
    rows.append(("results", summary["results"]))
    for k, v in rows:
        table.add_row(k, escape(v))
    console.print(table)
    if failures:
        console.print(f"[yellow]{len(failures)} instance(s) got no score[/]; first 5:")
        for i, error in failures[:5]:
            console.print(f"  instance {i}: {error}", highlight=False, markup=False)
