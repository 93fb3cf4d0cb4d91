"""``jurist judge DATA``: the main job."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, app, err_console
from jurist.cli._model_options import build_model, resolve_model_spec
from jurist.cli._summary import print_summary
from jurist.errors import ConfigError
from jurist.evaluate import Run, aevaluate, open_source
from jurist.judges import ItemJudge, LLMJudge
from jurist.models import Model
from jurist.templates import get_template


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


@app.command("judge")
def judge(
    data: Annotated[Path, typer.Argument(help="Items to judge: .jsonl, .json, .csv or .parquet.")],
    template: Annotated[
        str, typer.Option(help="Template name (see `jurist templates`).")
    ] = "true_false_uncertain",
    model: Annotated[
        str | None,
        typer.Option(
            help="provider:name; default $JURIST_MODEL, else hf:Qwen/Qwen2.5-0.5B-Instruct."
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible server URL (vLLM, llama.cpp, Ollama...).")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option(help="API key; default $OPENAI_API_KEY.", envvar="JURIST_API_KEY")
    ] = None,
    prompt_field: Annotated[
        str, typer.Option(help="Column holding the prompt / question.")
    ] = "prompt",
    response_field: Annotated[
        str, typer.Option(help="Column holding the response to judge.")
    ] = "response",
    field: Annotated[
        list[str] | None, typer.Option(help="Extra mapping TEMPLATE_FIELD=COLUMN (repeatable).")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight at once.")] = 32,
    rpm: Annotated[
        int | None, typer.Option(min=1, help="Max calls per minute (paced smoothly).")
    ] = None,
    tpm: Annotated[int | None, typer.Option(min=1, help="Max tokens per minute.")] = None,
    retries: Annotated[int, typer.Option(min=0, help="Re-asks for an unreadable verdict.")] = 2,
    max_retries: Annotated[
        int, typer.Option(min=0, help="Retries of transient API errors (429, 5xx, timeouts).")
    ] = 3,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds per API call.")] = 60.0,
    explanations: Annotated[
        bool, typer.Option(help="Ask for a short explanation with each verdict.")
    ] = False,
    temperature: Annotated[float, typer.Option(min=0.0, help="Judge sampling temperature.")] = 0.0,
    out: Annotated[
        Path | None,
        typer.Option(help="Output folder or .jsonl file; default runs/<data>-<template>/."),
    ] = None,
    cache: Annotated[
        bool, typer.Option(help="Cache deterministic calls in SQLite (--no-cache to turn off).")
    ] = True,
    cache_path: Annotated[
        Path | None, typer.Option(help="Cache file; default $JURIST_CACHE_DIR/cache.sqlite.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[
        bool,
        typer.Option(help="Continue the run in the output folder (--no-resume starts over)."),
    ] = True,
    scoring: Annotated[
        str,
        typer.Option(
            help="parse: read the verdict; logprobs: expected score over the verdicts' "
            "probabilities; auto: logprobs where the backend gives them."
        ),
    ] = "parse",
    output: Annotated[
        str,
        typer.Option(
            help="Judge answer format: auto (JSON where the backend takes a schema), text, json."
        ),
    ] = "auto",
    json_mode: Annotated[
        str,
        typer.Option(
            help="How an openai: server takes a JSON schema: json_schema (OpenAI, vLLM), "
            "json_object (llama-cpp-python), none (no JSON output)."
        ),
    ] = "json_schema",
) -> int:
    """Judge every item of DATA with one template and write the results as JSONL."""
    tpl = get_template(template)
    mapping = {
        "prompt": prompt_field,
        "response": response_field,
        **_parse_field_flags(field or []),
    }
    fields = dict(mapping)  # optional template fields (a reference) map too
    source = open_source(data)
    if source.scan(fields, tpl.fields).items == 0:
        raise ConfigError(f"{data}: no items to judge")

    spec = resolve_model_spec(model, base_url)
    judge_model = build_model(
        spec,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=max_retries,
        rpm=rpm,
        tpm=tpm,
        cache=cache,
        cache_path=cache_path,
        json_mode=json_mode,
    )
    if scoring not in ("parse", "logprobs", "auto"):
        raise ConfigError(f"--scoring must be parse, logprobs or auto, not {scoring!r}")
    if output not in ("auto", "text", "json"):
        raise ConfigError(f"--output must be auto, text or json, not {output!r}")
    the_judge = LLMJudge(
        judge_model,
        tpl,
        explanations=explanations,
        temperature=temperature,
        concurrency=concurrency,
        scoring=scoring,  # type: ignore[arg-type]
        output=output,  # type: ignore[arg-type]
    )
    out_path = _output_path(out, data, template)
    run_dir = run_folder(out_path)
    run = asyncio.run(
        run_through_engine(
            the_judge,
            data,
            run_dir,
            fields=fields,
            retries=retries,
            progress=progress,
            resume=resume,
            prepare=the_judge.model,
        )
    )
    return finish_run(run, out_path, extra={"model": spec, "template": template})


def run_folder(out_path: Path) -> Path:
    """The run store's folder: the output folder, or ``<name>.run`` beside a .jsonl file."""
    if out_path.name == "results.jsonl":
        return out_path.parent
    return out_path.with_name(out_path.stem + ".run")


async def run_through_engine(
    judge: ItemJudge,
    data: Path,
    run_dir: Path,
    *,
    fields: dict[str, str] | None,
    retries: int,
    progress: bool,
    resume: bool,
    prepare: Model | Sequence[Model],
) -> Run:
    """Prepare the model(s), run the engine, and close them whatever happens."""
    models = [prepare] if isinstance(prepare, Model) else list(prepare)
    try:
        for m in models:
            with err_console.status(f"preparing {m.spec} ...", spinner="dots"):
                await m.prepare()
        return await aevaluate(
            data,
            judge,
            run_dir=run_dir,
            resume=resume,
            fields=fields,
            retries=retries,
            progress=progress,
        )
    finally:
        for m in models:
            await m.aclose()


def finish_run(run: Run, out_path: Path, *, extra: dict[str, Any]) -> int:
    """Write results.jsonl and summary.json, print the summary; the exit code."""
    run.to_jsonl(out_path)
    summary = {**run.summary().model_dump(), **extra, "results": str(out_path)}
    (out_path.parent / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_summary(Console(), summary, run.failures(limit=5))
    return EXIT_FAILED_ITEMS if summary["failed"] else EXIT_OK
