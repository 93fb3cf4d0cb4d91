"""``jurist estimate RUN --labels FIELD|labels.jsonl``: the run's figure corrected by labels.

The judge scored every item; people labelled a few. The command prints the PPI++
estimate (:func:`jurist.runs._estimate.estimate_run`) with its interval, beside the labels alone
and the judge alone, and how many labels alone the corrected interval is worth.
``--json FILE`` writes the corrected figure at the top level (``estimate``, ``lower``,
``upper``, ``labels``) and ``labels_only`` / ``judge_only`` with the same keys.
``--target-width W`` adds how many uniformly drawn labels such an interval needs.

Labels the estimate cannot trust are refused with the reason (exit 2): too few, all
alike, a subset that is not random, labels from a file without a plan (unless
``--random-subset``). See docs/estimate.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import EXIT_OK, app, err_console
from jurist.cli._bounds import bounded
from jurist.cli._help import choices_metavar
from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.runs._estimate import RunEstimate

__all__ = ["estimate_command", "print_estimate"]

_KINDS = ("auto", "mean", "win_rate", "agreement")
_METHODS = ("analytic", "bootstrap")


def print_estimate(
    console: Console, est: RunEstimate, width: tuple[float, int | None, int | None] | None = None
) -> None:
    """The three figures as a table, then what the labels are worth and the notes."""
    r = est.result
    pct = f"{r.level:.0%}"
    table = Table(title=escape(f"{est.kind} of {est.run} ({est.source}; judge {est.judge_on})"))
    for col in ("figure", "estimate", f"{pct} interval", "width", "labels"):
        table.add_column(col)
    rows = [("corrected (PPI++)", r), ("labels only", r.labels_only)]
    if r.judge_only is not None:
        rows.append(("judge only", r.judge_only))
    for name, x in rows:
        table.add_row(
            name,
            f"{x.estimate:.4f}",
            f"[{x.lower:.4f}, {x.upper:.4f}]",
            f"{x.width:.4f}",
            str(x.labels) if name != "judge only" else f"({r.items} items)",
        )
    console.print(table)
    if r.strata:
        strata = Table(title="per stratum (corrected)")
        for col in ("stratum", "estimate", f"{pct} interval", "labels"):
            strata.add_column(col)
        for key, x in r.strata.items():
            strata.add_row(
                escape(key), f"{x.estimate:.4f}", f"[{x.lower:.4f}, {x.upper:.4f}]", str(x.labels)
            )
        console.print(strata)
    worth = r.effective_labels
    console.print(
        f"{r.labels} labels on {r.items} items ({r.design} draw, {r.method} interval, power "
        f"{r.power:.3f}); the corrected interval is as narrow as {worth:.0f} labels alone "
        "would give"
        if worth != float("inf")
        else f"{r.labels} labels on {r.items} items",
        markup=False,
        highlight=False,
    )
    if width is not None:
        target, with_judge, alone = width

        def say(n: int | None) -> str:
            return "out of reach (more than every item)" if n is None else f"{n} labels"

        console.print(
            f"a {pct} interval {target:g} wide needs about {say(with_judge)} with the judge, "
            f"{say(alone)} alone (uniform draw; from the spread of the labels so far)",
            markup=False,
            highlight=False,
        )
    for note in [*r.notes, *est.notes]:
        err_console.print(f"note: {note}", markup=False, highlight=False)


@app.command("estimate")
def estimate_command(
    run_dir: Annotated[Path, typer.Argument(help="A finished run folder.")],
    labels: Annotated[
        str,
        typer.Option(
            help="The item field holding people's labels, or a labels file (labels.jsonl: "
            "the run folder's)."
        ),
    ],
    kind: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(_KINDS),
            help="What to estimate: the mean label, a pairwise win rate, or the agreement "
            "rate (auto: win_rate for a pairwise run, else mean).",
        ),
    ] = "auto",
    random_subset: Annotated[
        bool,
        typer.Option(
            help="The labels in the file were drawn uniformly at random (without a plan)."
        ),
    ] = False,
    strata: Annotated[
        str | None, typer.Option(help="Estimate per value of this item field, weighted by size.")
    ] = None,
    level: Annotated[
        float, typer.Option(**bounded("level", help="The interval's confidence level."))
    ] = 0.95,
    method: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(_METHODS),
            help="analytic (normal) or bootstrap (percentile) intervals.",
        ),
    ] = "analytic",
    resamples: Annotated[
        int, typer.Option(**bounded("resamples", help="Bootstrap resamples."))
    ] = 2000,
    min_labels: Annotated[
        int,
        typer.Option(**bounded("min_labels", help="The fewest labels an interval may rest on.")),
    ] = 30,
    target_width: Annotated[
        float | None,
        typer.Option(
            **bounded("target_width", help="Also say how many labels an interval this wide needs.")
        ),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the figures as JSON to this file.")
    ] = None,
) -> int:
    """The run's figure corrected by a few labels (PPI++), beside the labels and the judge alone."""
    from jurist.cli._gate import open_finished
    from jurist.runs._estimate import estimate_run

    if kind not in _KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(_KINDS)}, not {kind!r}")
    if method not in _METHODS:
        raise ConfigError(f"--method must be analytic or bootstrap, not {method!r}")
    run = open_finished(run_dir)
    labels_arg: str | Path = Path(labels) if labels.endswith(".jsonl") else labels
    est = estimate_run(
        run,
        labels_arg,
        kind=kind,  # type: ignore[arg-type]  # checked against _KINDS above
        random_subset=random_subset,
        strata=strata,
        level=level,
        method=method,  # type: ignore[arg-type]  # checked against _METHODS above
        n_resamples=resamples,
        min_labels=min_labels,
    )
    width = None
    if target_width is not None:
        width = (target_width, *needed_labels(est, target_width))
    print_estimate(Console(width=max(120, Console().width)), est, width)
    if json_out is not None:
        out = est.as_json()
        if width is not None:
            out["target_width"] = {
                "width": width[0],
                "labels_with_judge": width[1],
                "labels_alone": width[2],
            }
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return EXIT_OK


def needed_labels(est: RunEstimate, width: float) -> tuple[int | None, int | None]:
    """Labels needed for ``width`` (with the judge, alone), from the labels so far."""
    from jurist.metrics import labels_for_width

    return labels_for_width(est.judge, est.values, width, level=est.result.level)
