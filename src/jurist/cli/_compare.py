"""``jurist compare A B``: which system answers better, pair by pair, through the engine.

Row *i* of A is compared with row *i* of B (same prompt; with ``--id-field`` their ids
must match too). The pairs are written to ``pairs.jsonl`` in the run folder and judged
there by a :class:`~jurist.judges.PairwiseJudge`, so a killed comparison resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from jurist._missing import field_problem
from jurist.cli._app import app
from jurist.cli._bounds import VERDICT_MAX_TOKENS_HELP, bounded
from jurist.cli._engine_options import EngineOptions, engine_options
from jurist.cli._help import choices_metavar, template_help
from jurist.cli._judge import (
    OVERWRITE_HELP,
    RETRY_FAILED_HELP,
    check_outputs,
    finish_run,
    run_engine,
)
from jurist.cli._model_options import ModelOptions, model_options
from jurist.cli._repeat_flags import AdaptiveFlag, MinRepeatsFlag, RepeatsFlag
from jurist.cli._turn import MAX_TOOL_CHARS_HELP, TURN_HELP, parse_turn
from jurist.data import open_source
from jurist.data._local_images import resolve_images
from jurist.engines import RunOptions
from jurist.errors import ConfigError, DataError
from jurist.runs.report._page import pair_figures


def write_pairs(
    a: Path, b: Path, out: Path, *, prompt_field: str, response_field: str, id_field: str | None
) -> int:
    """Join A and B row by row into ``out`` (JSONL); the number of pairs."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as f:
        rows_b = iter(open_source(b))
        for _, where_a, row_a in open_source(a):
            right = next(rows_b, None)
            if right is None:
                raise DataError(f"{a} has more rows than {b} ({n}); compare needs equal rows")
            _, where_b, row_b = right
            if row_a.get("messages") is not None or row_b.get("messages") is not None:
                joined = _conversation_pair(
                    where_a, row_a, where_b, row_b, a.absolute().parent, b.absolute().parent
                )
                f.write(orjson.dumps(joined) + b"\n")
                n += 1
                continue
            for where, row, field in (
                (where_a, row_a, prompt_field),
                (where_a, row_a, response_field),
                (where_b, row_b, response_field),
            ):
                problem = field_problem(row, field)
                if problem is not None:
                    raise DataError(f"{where}: {problem}; the fields are {sorted(row)}")
            if row_b.get(prompt_field) not in (None, row_a[prompt_field]):
                raise DataError(f"{where_a} and {where_b}: the prompts differ")
            if id_field is not None and row_a.get(id_field) != row_b.get(id_field):
                raise DataError(
                    f"{where_a} and {where_b}: {id_field} {row_a.get(id_field)!r} != "
                    f"{row_b.get(id_field)!r}"
                )
            pair: dict[str, Any] = {
                "prompt": row_a[prompt_field],
                "response_a": row_a[response_field],
                "response_b": row_b[response_field],
            }
            if id_field is not None:
                pair[id_field] = row_a.get(id_field)
            f.write(orjson.dumps(pair, default=str) + b"\n")
            n += 1
        if next(rows_b, None) is not None:
            raise DataError(f"{b} has more rows than {a} ({n}); compare needs equal rows")
    tmp.replace(out)
    return n


def _conversation_pair(
    where_a: str,
    row_a: dict[str, Any],
    where_b: str,
    row_b: dict[str, Any],
    base_a: Path | None,
    base_b: Path | None,
) -> dict[str, Any]:
    """Two rows holding conversations as one pair (``messages_a``, ``messages_b``); their
    context before the judged turn must match (checked when the pair is judged)."""
    for where, row in ((where_a, row_a), (where_b, row_b)):
        if row.get("messages") is None:
            raise DataError(
                f"{where}: no messages, while the other file's row holds a conversation; "
                "compare conversations with conversations"
            )
    # the pairs file lives in the run folder: relative image paths are read from each
    # data file's folder now
    row_a = resolve_images(row_a, base_a, where_a)
    row_b = resolve_images(row_b, base_b, where_b)
    return {"messages_a": row_a["messages"], "messages_b": row_b["messages"]}


@app.command("compare")
@model_options(concurrency=16, concurrency_help="Pairs in flight at once.")
@engine_options
def compare(
    a: Annotated[Path, typer.Argument(help="System A's outputs (.jsonl, .json, .csv, .parquet).")],
    b: Annotated[Path, typer.Argument(help="System B's outputs, same prompts in the same order.")],
    template: Annotated[
        str, typer.Option(metavar="NAME", help=template_help("pairwise"))
    ] = "mt_bench_pair",
    prompt_field: Annotated[str, typer.Option(help="Column holding the prompt.")] = "prompt",
    response_field: Annotated[str, typer.Option(help="Column holding the answer.")] = "response",
    id_field: Annotated[
        str | None, typer.Option(help="Column that must match between A and B.")
    ] = None,
    swap: Annotated[bool, typer.Option(help="Judge both orders (position-bias control).")] = True,
    consistency: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("tie", "inconsistent")),
            help="A pair whose orders disagree becomes: tie or inconsistent.",
        ),
    ] = "tie",
    retries: Annotated[
        int, typer.Option(**bounded("retries", help="Re-asks for an unreadable verdict."))
    ] = 2,
    max_tokens: Annotated[
        int | None, typer.Option(**bounded("max_tokens", help=VERDICT_MAX_TOKENS_HELP))
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Run folder; default runs/<a>-vs-<b>/.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[bool, typer.Option(help="Continue the run in the folder.")] = True,
    retry_failed: Annotated[bool, typer.Option(help=RETRY_FAILED_HELP)] = True,
    overwrite: Annotated[bool, typer.Option(help=OVERWRITE_HELP)] = False,
    repeats: RepeatsFlag = 1,
    adaptive: AdaptiveFlag = False,
    min_repeats: MinRepeatsFlag = None,
    turn: Annotated[str, typer.Option(help=TURN_HELP)] = "last",
    max_tool_chars: Annotated[int, typer.Option(min=0, help=MAX_TOOL_CHARS_HELP)] = 2000,
    *,
    options: ModelOptions,
    engine_options: EngineOptions,
) -> int:
    """Compare two systems' answers with a pairwise judge; writes results.jsonl and a summary."""
    from jurist.judges import PairwiseJudge

    if consistency not in ("tie", "inconsistent"):
        raise ConfigError(f"--consistency must be tie or inconsistent, not {consistency!r}")
    engine_options.check([options.spec])
    run_dir = out or Path("runs") / f"{a.stem}-vs-{b.stem}"
    # the folder is checked before pairs.jsonl is written into it
    check_outputs(run_dir / "results.jsonl", [a, b], overwrite=overwrite)
    pairs = run_dir / "pairs.jsonl"
    if (
        write_pairs(
            a, b, pairs, prompt_field=prompt_field, response_field=response_field, id_field=id_field
        )
        == 0
    ):
        raise ConfigError(f"{a}: no items to compare")
    spec = options.spec
    judge_model = options.build(spec, limits=engine_options.model_limits)
    judge = PairwiseJudge(
        judge_model,
        template,
        swap=swap,
        consistency=consistency,  # type: ignore[arg-type]
        temperature=options.temperature,
        concurrency=options.concurrency,
        max_tokens=max_tokens,
        turn=parse_turn(turn),
        max_tool_chars=max_tool_chars or None,
    )
    run_options = RunOptions(
        run_dir=run_dir,
        resume=resume,
        retry_failed=retry_failed,
        overwrite=overwrite,
        retries=retries,
        progress=progress,
        repeats=repeats,
        adaptive=adaptive,
        min_repeats=min_repeats,
    )
    engine = engine_options.build(options)
    run = run_engine(judge, pairs, run_options, engine, command="compare", prepare=judge_model)
    figures = pair_figures(run.rows())  # the report's figures, one definition
    extra = {"model": judge_model.spec, "template": template, **figures}
    return finish_run(run, run_dir / "results.jsonl", extra=extra)
