"""``jurist compare A B [C...]``: which system answers better, pair by pair, through the engine.

Row *i* of A is compared with row *i* of B (same prompt; with ``--id-field`` the items
are matched by id instead). More systems (more files, or one file with ``--system-column``)
are compared against ``--baseline`` or round robin, all pairs or ``--pairs-budget`` of
them (:mod:`jurist.cli._compare_pairs`). The pairs, each naming its two systems, are
written to ``pairs.jsonl`` in the run folder and judged there by a
:class:`~jurist.judges.PairwiseJudge`, so a killed comparison resumes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from jurist._local_files import roots_of
from jurist.cli._app import app
from jurist.cli._bounds import VERDICT_MAX_TOKENS_HELP, bounded
from jurist.cli._catalog_judge import HELP as CATALOG_JUDGE_HELP
from jurist.cli._catalog_judge import catalog_judge, refuse_with_judge
from jurist.cli._engine_options import EngineOptions, engine_options
from jurist.cli._help import choices_metavar, template_help
from jurist.cli._model_options import ModelOptions, model_options
from jurist.cli._run_flags import RunFlags, run_flags
from jurist.cli._turn import MAX_TOOL_CHARS_HELP, TURN_HELP, FilesRootFlag, parse_turn
from jurist.errors import ConfigError

_SYSTEM_COLUMNS = ("system", "generator", "model")


def system_names(a: Path, b: Path) -> tuple[str, str]:
    """The names of the systems behind A and B: the value of a ``system`` (or
    ``generator``, ``model``) column when each file holds one, else the file names."""
    from jurist.data import open_source

    def named(path: Path) -> str | None:
        for _, _, row in open_source(path):
            for column in _SYSTEM_COLUMNS:
                value = row.get(column)
                if isinstance(value, str) and value.strip():
                    return value.strip()
            return None
        return None

    found = named(a), named(b)
    if found[0] and found[1] and found[0] != found[1]:
        return found[0], found[1]
    return a.stem if a.stem != b.stem else str(a), b.stem if a.stem != b.stem else str(b)


@app.command("compare")
@model_options(thinking=True, concurrency=16, concurrency_help="Pairs in flight at once.")
@engine_options
@run_flags(
    out_help="Run folder; default runs/<a>-vs-<b>/ (runs/<a>-and-<n>-more/ for more).",
    resume_help="Continue the run in the folder.",
)
def compare(
    answers: Annotated[
        list[Path],
        typer.Argument(
            metavar="A B [C...]",
            help="Each system's answers (.jsonl, .json, .csv, .parquet), the same prompts in "
            "the same order; a system is named by its file's stem. Or one file with "
            "--system-column.",
            show_default=False,
        ),
    ],
    template: Annotated[
        str, typer.Option(metavar="NAME", help=template_help("pairwise"))
    ] = "mt_bench_pair",
    judge_name: Annotated[
        str | None, typer.Option("--judge", metavar="NAME", help=CATALOG_JUDGE_HELP)
    ] = None,
    prompt_field: Annotated[str, typer.Option(help="Column holding the prompt.")] = "prompt",
    response_field: Annotated[str, typer.Option(help="Column holding the answer.")] = "response",
    id_field: Annotated[
        str | None,
        typer.Option(help="Column naming the item: answers are matched by it, not by row."),
    ] = None,
    system_column: Annotated[
        str | None,
        typer.Option(
            metavar="COLUMN", help="Column naming each row's system (one file, N systems)."
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="Compare every other system with this one."),
    ] = None,
    pairs_budget: Annotated[
        int | None,
        typer.Option(
            **bounded(
                "pairs_budget",
                help="Judge only this many pairs, balanced across the systems (each pair "
                "still in both orders).",
            )
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            **bounded("seed", help="Which items --pairs-budget draws (same seed, same pairs).")
        ),
    ] = 0,
    swap: Annotated[bool, typer.Option(help="Judge both orders (position-bias control).")] = True,
    consistency: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("tie", "inconsistent")),
            help="A pair whose orders disagree becomes: tie or inconsistent.",
        ),
    ] = "tie",
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
    """Compare systems' answers with a pairwise judge; writes results.jsonl and a summary.

    Two systems: A against B on every item. More: each against --baseline, or round robin;
    --pairs-budget K judges K pairs of them. Rank them with `jurist leaderboard RUN`."""
    from jurist.cli._compare_pairs import plan_pairs, read_systems, write_pairs
    from jurist.cli._run import check_outputs, finish_run, run_engine
    from jurist.judges import ItemJudge, PairwiseJudge
    from jurist.judges._protocol import models_of
    from jurist.runs._run import record_systems
    from jurist.runs.report._page import pair_figures

    roots = roots_of(files_root, what="--files-root")

    if consistency not in ("tie", "inconsistent"):
        raise ConfigError(f"--consistency must be tie or inconsistent, not {consistency!r}")
    refuse_with_judge(judge_name, template=template != "mt_bench_pair")
    from_catalog = None
    if judge_name is not None:
        given = {"max_tokens": max_tokens, "swap": swap, "consistency": consistency}
        defaults = {"max_tokens": None, "swap": True, "consistency": "tie"}
        from_catalog = catalog_judge(
            judge_name,
            kind="pairwise",
            options=options,
            limits=engine_options.model_limits,
            changes={
                **{k: v for k, v in given.items() if v != defaults[k]},
                **options.judge_options(),
            },
        )
        template = judge_name
    engine_options.check(
        [options.spec] if from_catalog is None else [m.spec for m in models_of(from_catalog)]
    )
    systems = read_systems(
        answers,
        prompt_field=prompt_field,
        response_field=response_field,
        id_field=id_field,
        system_column=system_column,
        files_root=roots,
    )
    plan = plan_pairs(systems, baseline=baseline, pairs_budget=pairs_budget, seed=seed)
    names = systems.names
    default = (
        f"{names[0]}-vs-{names[1]}" if len(names) == 2 else f"{names[0]}-and-{len(names) - 1}-more"
    )
    run_dir = run.out or Path("runs") / default
    # the folder is checked before pairs.jsonl is written into it
    check_outputs(run_dir / "results.jsonl", answers, overwrite=run.overwrite)
    pairs = run_dir / "pairs.jsonl"
    write_pairs(systems, plan, pairs, id_field=id_field)
    if from_catalog is None:
        judge: ItemJudge = PairwiseJudge(
            options.build(options.spec, limits=engine_options.model_limits),
            template,
            swap=swap,
            consistency=consistency,  # type: ignore[arg-type]
            temperature=options.temperature,
            concurrency=options.concurrency,
            max_tokens=max_tokens,
            turn=parse_turn(turn),
            max_tool_chars=max_tool_chars or None,
            **options.judge_options(),
        )
    else:
        judge = from_catalog
    judge_models = list(models_of(judge))
    run_options = run.options(
        run_dir,
        # pairs.jsonl names each answer file's images by real path: their folders, and
        # the folders given, are the ones allowed
        files_root=(*roots, *(Path(os.path.realpath(a)).parent for a in answers)),
    )
    engine = engine_options.build(options)
    done = run_engine(judge, pairs, run_options, engine, command="compare")
    if len(names) == 2:  # the report and the summary name the two systems
        two = system_names(*answers) if len(answers) == 2 and system_column is None else names
        record_systems(run_dir, two[0], two[1])
    figures = pair_figures(done.rows())  # the report's figures, one definition
    if len(names) > 2:  # A is a different system from pair to pair: `jurist leaderboard` ranks
        del figures["win_rate_a"]
    extra = {
        "model": ", ".join(m.spec for m in judge_models),
        "template": template,
        # two systems: the summary's systems by side (A = ..., B = ...); more: their names
        **({"systems": names} if len(names) > 2 else {}),
        "baseline": baseline,
        **figures,
    }
    code = finish_run(done, run_dir / "results.jsonl", extra=extra, otel=run.otel)
    if len(names) > 2:
        Console().print(f"rank them: jurist leaderboard {run_dir}", highlight=False, markup=False)
    return code
