"""``jurist align RUN --labels FIELD``: improve a run's judge from labelled examples.

The run's judge (rebuilt from the catalog entry every run keeps) is aligned to the labels
in FIELD with :func:`jurist.trust.align`: few-shot examples chosen greedily on a train
slice, optionally new instructions from ``--proposer``, a calibration on top for numeric
labels; then the held-out part is judged once and agreement before (the run's own scores)
and after is printed with intervals and paired gains. The plan and its most calls are
printed before the first call; ``--budget`` bounds them.

The judge's model is the run's, rebuilt with the shared model options
(:mod:`jurist.cli._model_options`): the key the run was judged with comes from
``--api-key`` or ``$JURIST_API_KEY`` (else ``$OPENAI_API_KEY``), as for ``jurist judge``;
``--timeout``, ``--max-retries``, ``--rpm`` and the cache apply; ``--model`` aligns another
model instead; ``--proposer`` is built with the same options. Calls are made afresh
unless ``--cache`` is given.

Exit status: 0 a supported gain; 1 no supported gain (nothing is saved unless
``--save-anyway``); 2 a usage error. ``--save NAME`` stores the aligned judge as the next
free version ``NAME.vN`` (``NAME.v1``, ``NAME.v2``...), recording the data it was fitted on,
the examples chosen and the held-out figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.cli._catalog import CatalogDir
from jurist.cli._help import choices_metavar
from jurist.cli._model_options import ModelOptions, model_options, resolve_model_spec
from jurist.errors import ConfigError, DataError
from jurist.metrics._labels import label_missing
from jurist.runs import Run
from jurist.runs._people_labels import open_run
from jurist.runs._state import require_finished
from jurist.trust import Alignment, align_sync

__all__ = ["EXIT_NO_GAIN", "KINDS", "align_command", "save_aligned"]

EXIT_NO_GAIN = 1  # as jurist calibrate's
KINDS = ("auto", "nominal", "ordinal", "interval")


@app.command("align")
@model_options(
    cache=False,
    cache_help="Reuse cached answers (default: every call is made afresh).",
    model_help="Align this model instead of the run's (default: the run's own model).",
    concurrency=None,
    concurrency_help="Model calls in flight at once (default: the run judge's).",
    temperature=None,
    temperature_help="Judge sampling temperature (default: the run judge's).",
)
def align_command(
    run_dir: Annotated[str, typer.Argument(help="A run folder (jurist judge --out ...).")],
    labels: Annotated[
        str,
        typer.Option(
            metavar="FIELD",
            help="The item field holding people's labels; labels.jsonl: those given on the "
            "review page (labels.jsonl:NAME: one annotator's).",
        ),
    ],
    max_examples: Annotated[
        int,
        typer.Option(
            metavar="K",
            **bounded("max_examples", help="Choose at most K few-shot examples (0: none)."),
        ),
    ] = 4,
    pool: Annotated[
        int,
        typer.Option(
            metavar="P", **bounded("pool", help="Candidate examples to try at each step.")
        ),
    ] = 8,
    budget: Annotated[
        int,
        typer.Option(metavar="N", **bounded("budget", help="At most N judge and proposer calls.")),
    ] = 2000,
    score_items: Annotated[
        int,
        typer.Option(
            metavar="M",
            **bounded("score_items", help="Judge each candidate on at most M train items."),
        ),
    ] = 100,
    held_out: Annotated[
        float, typer.Option(**bounded("held_out", help="Share of the items held out."))
    ] = 0.5,
    proposer: Annotated[
        str | None,
        typer.Option(metavar="MODEL", help="A model that proposes new instructions."),
    ] = None,
    rounds: Annotated[int, typer.Option(**bounded("rounds", help="Proposer rounds."))] = 1,
    kind: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(KINDS),
            help="The labels' kind; auto: nominal for verdict names, ordinal for at most "
            "10 whole numbers, else interval.",
        ),
    ] = "auto",
    metric: Annotated[
        str | None,
        typer.Option(
            metavar="METRIC",
            help="The metric to raise (default: cohen_kappa, quadratic_kappa, rmse).",
        ),
    ] = None,
    calibrate: Annotated[
        bool, typer.Option(help="Fit a monotone map on top where labels are numbers.")
    ] = True,
    seed: Annotated[
        int, typer.Option(**bounded("seed", help="Seed of the splits and the bootstrap."))
    ] = 0,
    save: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="Store the aligned judge as NAME.vN (next free N)."),
    ] = None,
    save_anyway: Annotated[
        bool, typer.Option("--save-anyway", help="Save even when the gain is not supported.")
    ] = False,
    catalog_dir: CatalogDir = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the whole report as JSON to this file.")
    ] = None,
    *,
    options: ModelOptions,
) -> int:
    """Align RUN's judge to the labels in FIELD; report held-out agreement before/after."""
    if kind not in KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    console = Console(width=max(120, Console().width))

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False)

    run = open_run(run_dir, labels)
    require_finished(run)
    judge = run_judge(run, options)
    items, truth, scores, keys = labelled_rows(run, labels)
    proposer_model = (
        options.build(resolve_model_spec(proposer, options.base_url)) if proposer else None
    )
    result = align_sync(
        judge,
        items,
        truth,
        scores=scores,
        keys=keys,
        max_examples=max_examples,
        pool=pool,
        budget=budget,
        held_out=held_out,
        score_items=score_items,
        proposer=proposer_model,
        proposer_rounds=rounds,
        calibrate=calibrate,
        kind=None if kind == "auto" else kind,
        metric=metric,
        seed=seed,
        label_field=labels,
        source=str(run.run_dir),
        say=say,
    )
    for line in result.report.lines()[len(result.report.plan.lines()) :]:
        say(line)
    if json_out is not None:
        json_out.write_text(result.report.model_dump_json(indent=2), encoding="utf-8")
        say(f"report: {json_out}")
    if save is not None:
        if result.report.supported or save_anyway:
            full, path = save_aligned(result, save, run=run, root=catalog_dir)
            say(f"saved {full}: {path}")
        else:
            say(f"not saved: no supported gain (--save-anyway saves {save} all the same)")
    return EXIT_OK if result.report.supported else EXIT_NO_GAIN


def run_judge(run: Run, options: ModelOptions | None = None) -> Any:
    """The judge ``run`` was judged with, rebuilt from the catalog entry the run kept;
    with ``options`` (the command's model flags) its model is built through them."""
    from jurist.engines._judge_entry import rebuild_judge
    from jurist.judges import LLMJudge
    from jurist.runs._folder import STORE_NAME
    from jurist.runs._store import RunStore

    store = RunStore(run.run_dir / STORE_NAME, readonly=True)
    try:
        entry = store.get_meta("judge_entry")
    finally:
        store.close()
    if entry is None:
        raise ConfigError(
            f"{run.run_dir}: the run kept no catalog entry of its judge (a custom judge, or a "
            "run from before jurist kept one), so it cannot be aligned; use jurist.trust.align"
        )
    judge = rebuild_judge(entry, run.run_dir / STORE_NAME)
    if not isinstance(judge, LLMJudge):
        raise ConfigError(
            f"{run.run_dir}: its judge is a {entry.get('kind')!r} entry; align works on a "
            "single LLM judge (jurist judge, or jurist.LLMJudge with any template)"
        )
    return judge if options is None else with_model_options(judge, options)


def with_model_options(judge: Any, options: ModelOptions) -> Any:
    """``judge`` (rebuilt from a run's entry) with its model built through the model
    options (:meth:`ModelOptions.rebuild`: the run's server, the command line's key,
    timeout, retries, limits and cache); ``--model`` replaces it."""
    model = options.build() if options.models else options.rebuild(judge.model)
    changes: dict[str, Any] = {"model": model, "max_calls_per_min": None}
    # align's defaults of these two are None: the run judge's own, unless given
    temperature: float | None = options.temperature
    concurrency: int | None = options.concurrency
    if temperature is not None:
        changes["temperature"] = temperature
    if concurrency is not None:
        changes["concurrency"] = concurrency
    return judge.with_options(**changes)


def labelled_rows(
    run: Run, labels: str
) -> tuple[list[dict[str, Any]], list[Any], list[float | None], list[Any]]:
    """The run's items, their labels (None where missing), recorded scores and ids."""
    items: list[dict[str, Any]] = []
    truth: list[Any] = []
    scores: list[float | None] = []
    keys: list[Any] = []
    for row in run.rows():
        item = row["item"]
        value = item.get(labels)
        items.append(item)
        truth.append(None if label_missing(value) else value)
        scores.append(row["score"])
        keys.append(item.get("id", row["idx"] + 1))
    if not any(labels in it for it in items):
        raise DataError(f"{run.run_dir}: --labels {labels!r}: no item has that field")
    return items, truth, scores, keys


def save_aligned(
    result: Alignment, name: str, *, run: Run | None = None, root: Path | None = None
) -> tuple[str, Path]:
    """Store ``result``'s judge as the next version of ``name``, with its record."""
    import jurist.catalog as cat

    report = result.report
    head = report.headline
    description = (
        f"{result.judge.name} aligned to {report.fitted_on.labels} on {report.fitted_on.items} "
        f"items"
        + (f" of {run.run_dir.name}" if run is not None else "")
        + f" (data {report.fitted_on.fingerprint}): {len(report.examples)} examples; held-out "
        f"{head} {report.before[head].value:.3f} -> {report.after[head].value:.3f}"
        + ("" if report.supported else " (no supported gain)")
    )
    return cat.add_version(
        result.judge, name, description=description, root=root, alignment=report.record()
    )
