"""``jurist judge DATA``: the main job."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, app, err_console
from jurist.cli._model_options import build_model, resolve_model_spec
from jurist.cli._summary import print_summary
from jurist.errors import ConfigError
from jurist.evaluate import read_records, require_fields
from jurist.judges import JudgeResults, LLMJudge
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
        return Path("runs") / f"{data.stem}-{template}" / "results.jsonl"
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
) -> int:
    """Judge every item of DATA with one template and write the results as JSONL."""
    tpl = get_template(template)
    rows = read_records(data)
    if not rows:
        raise ConfigError(f"{data}: no items to judge")
    mapping = {
        "prompt": prompt_field,
        "response": response_field,
        **_parse_field_flags(field or []),
    }
    require_fields(rows, {f: mapping.get(f, f) for f in tpl.fields})

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
    )
    the_judge = LLMJudge(
        judge_model,
        tpl,
        explanations=explanations,
        temperature=temperature,
        concurrency=concurrency,
    )
    out_path = _output_path(out, data, template)
    started = time.perf_counter()
    results = asyncio.run(_run(the_judge, rows, mapping, retries, progress))
    elapsed = time.perf_counter() - started
    _write_results(out_path, results)
    summary = _summary(results, spec, template, data, out_path, elapsed)
    (out_path.parent / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_summary(Console(), summary, results)
    return EXIT_FAILED_ITEMS if results.n_failed else EXIT_OK


async def _run(
    judge: LLMJudge,
    rows: list[dict[str, Any]],
    mapping: dict[str, str],
    retries: int,
    progress: bool,
) -> JudgeResults:
    try:
        with err_console.status(f"preparing {judge.model.spec} ...", spinner="dots"):
            await judge.model.prepare()
        return await judge.judge_items(rows, retries=retries, fields=mapping, progress=progress)
    finally:
        await judge.model.aclose()


def _write_results(path: Path, results: JudgeResults) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in results.to_records():
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)


def _summary(
    results: JudgeResults, spec: str, template: str, data: Path, out: Path, elapsed: float
) -> dict[str, Any]:
    usage = results.usage
    verdicts: dict[str, int] = {}
    for j in results:
        key = "(failed)" if j.score is None else str(j.verdict)
        verdicts[key] = verdicts.get(key, 0) + 1
    errors: dict[str, int] = {}
    for _, j in results.failures:
        category = (j.error or "error").split(":", 1)[0]
        errors[category] = errors.get(category, 0) + 1
    return {
        "data": str(data),
        "model": spec,
        "template": template,
        "items": len(results),
        "scored": len(results) - results.n_failed,
        "failed": results.n_failed,
        "mean_score": results.mean(),
        "verdicts": verdicts,
        "errors": errors,
        "calls": usage.calls,
        "cache_hits": usage.cache_hits,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "seconds": round(elapsed, 3),
        "results": str(out),
    }
