"""``jurist gate RUN``: fail a CI job when a judged run misses its bar.

The bar is ``--min-score X`` (the run's mean score) and/or ``--max-drop D`` with
``--baseline RUN2`` (the fall from the baseline's mean score); each is checked against an
interval at ``--level`` (default 0.95) that includes the judge's own variance when the
run has repeats (:func:`jurist.trust.gate_scores` has the rule). Exit status: 0 the bar
is met (or, without ``--strict``, not shown missed: a warning says so), 1 the bar is
missed, 2 a usage error (no run there, an unfinished run, a bad flag, a baseline of
another kind).

Both runs must have finished (:func:`jurist.runs._state.require_finished`: a run killed
while running is told apart from a live one by its lock, and named interrupted, with how
to resume it). A baseline must be a run of the same kind judged on the same scale (a
pairwise baseline for a likert run, or a 1-10 baseline for a 1-5 run, gives a
meaningless change): another one is refused, naming both.

With ``--labels FIELD|labels.jsonl`` the bar ``--min-score`` is checked against the
mean score corrected by people's labels (PPI++, :func:`jurist.runs._estimate.estimate_run`), not
the judge's own interval: a judge biased upward no longer passes a run on its bias.

The markdown summary goes to stdout, to ``--summary FILE``, and is appended to
``$GITHUB_STEP_SUMMARY`` when that is set (GitHub Actions shows it on the job's page).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from jurist.cli._app import EXIT_OK, app, err_console
from jurist.cli._bounds import bounded
from jurist.errors import ConfigError
from jurist.runs import Run
from jurist.runs._state import check_same_kind, require_finished
from jurist.trust import Bar, GateResult, gate_scores

__all__ = ["EXIT_GATE_FAILED", "gate", "open_finished"]

EXIT_GATE_FAILED = 1
"""Exit status of ``jurist gate``: the run missed its bar."""


def open_finished(folder: Path, what: str = "run") -> Run:
    """The run in ``folder``, refused (a usage error) unless it finished."""
    run = Run(folder)
    require_finished(run, what)
    return run


def same_items(run: Run, baseline: Run) -> bool:
    """Whether two runs judged the same items in the same order (their data's hash)."""
    a, b = run.manifest.dataset, baseline.manifest.dataset
    return a.hash is not None and a.hash == b.hash and a.items == b.items


def gate_run(
    run: Run,
    bar: Bar,
    baseline: Run | None = None,
) -> GateResult:
    """:func:`~jurist.trust.gate_scores` over a run (and a baseline run)."""
    return gate_scores(
        run.item_scores(),
        bar,
        baseline=baseline.item_scores() if baseline is not None else None,
        paired=baseline is not None and same_items(run, baseline),
    )


def gate_labelled(run: Run, bar: Bar, labels: str, random_subset: bool) -> tuple[GateResult, str]:
    """The gate on the run's mean score corrected by ``labels`` (a field or a labels file),
    and a note giving the labels' source and the judge-only interval beside it."""
    from jurist.runs._estimate import estimate_run
    from jurist.trust._gate import gate_corrected

    source: str | Path = Path(labels) if labels.endswith(".jsonl") else labels
    est = estimate_run(run, source, kind="mean", random_subset=random_subset, level=bar.level)
    r = est.result
    if est.judge_on == "verdict":  # labels on the verdict scale: the bar is on 0-1 scores
        from jurist.runs.report._scale import scale_of

        scale = scale_of(run.manifest.judge)
        low, high = float(scale.low), float(scale.high)  # type: ignore[union-attr]
        r = r.model_copy(
            update={k: (getattr(r, k) - low) / (high - low) for k in ("estimate", "lower", "upper")}
        )
    scored = r.items - r.unscored
    result = gate_corrected(r, bar, items=r.items, scored=scored)
    note = f"Corrected by {r.labels} labels ({est.source}; PPI++, power {r.power:.3f})."
    if r.judge_only is not None:
        j = r.judge_only
        note += f" The judge alone: {j.estimate:.4f} [{j.lower:.4f}, {j.upper:.4f}]."
    return result, note


@app.command("gate")
def gate(
    run: Annotated[Path, typer.Argument(help="The run folder to check.")],
    min_score: Annotated[
        float | None,
        typer.Option(**bounded("min_score", help="The least mean score (scores are 0..1).")),
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option(help="A baseline run folder to compare with (--max-drop).")
    ] = None,
    max_drop: Annotated[
        float | None,
        typer.Option(
            **bounded("max_drop", help="With --baseline: the largest fall in mean score.")
        ),
    ] = None,
    level: Annotated[
        float, typer.Option(**bounded("level", help="The intervals' confidence level."))
    ] = 0.95,
    strict: Annotated[
        bool,
        typer.Option(
            help="Pass only when every interval clears its bar (default: fail only when an "
            "interval lies wholly below it)."
        ),
    ] = False,
    summary: Annotated[
        Path | None, typer.Option(help="Also write the markdown summary to this file.")
    ] = None,
    labels: Annotated[
        str | None,
        typer.Option(
            help="Decide on the mean score corrected by people's labels (PPI++): an item "
            "field, or a labels file (labels.jsonl). See jurist estimate."
        ),
    ] = None,
    random_subset: Annotated[
        bool,
        typer.Option(help="With --labels FILE: the labels were drawn uniformly at random."),
    ] = False,
) -> int:
    """Exit 1 when the run's interval says it misses the bar; print a markdown summary."""
    if max_drop is not None and baseline is None:
        raise ConfigError("--max-drop needs --baseline RUN (the run to compare with)")
    if baseline is not None and max_drop is None:
        raise ConfigError("--baseline needs --max-drop D (the largest fall allowed)")
    bar = Bar(min_score=min_score, max_drop=max_drop, level=level, strict=strict)
    the_run = open_finished(run)
    base = open_finished(baseline, "baseline run") if baseline is not None else None
    if base is not None:
        check_same_kind(the_run, base)
    note = None
    if labels is not None:
        if base is not None:
            raise ConfigError("--labels decides on --min-score only; it takes no --baseline")
        result, note = gate_labelled(the_run, bar, labels, random_subset)
    else:
        result = gate_run(the_run, bar, base)
    if base is not None:
        how = "paired over the same items" if same_items(the_run, base) else "unpaired"
        note = f"Baseline: `{baseline}` ({how})."
    text = result.markdown(f"jurist gate `{run}`", note=note)
    Console(soft_wrap=True).print(text, markup=False, highlight=False, emoji=False, end="")
    if summary is not None:
        summary.parent.mkdir(parents=True, exist_ok=True)
        summary.write_text(text, encoding="utf-8")
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    if result.status == "warn":
        err_console.print(
            "warning: an interval straddles its bar: the run is not shown to miss it "
            "(--strict fails such a run)",
            highlight=False,
            markup=False,
        )
    return EXIT_OK if result.passed else EXIT_GATE_FAILED
