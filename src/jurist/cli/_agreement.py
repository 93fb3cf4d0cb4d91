"""``jurist agreement RUN --labels FIELD``: how well a run's judge agrees with labels.

For a rubric run (its results carry criteria) FIELD holds each item's ground truth, one
label per criterion; the command prints per-criterion, between-judge and per-judge
figures. Otherwise FIELD holds one label per item, compared as the HTML report compares
it: with the judge's verdicts when every label is on the judge's scale (a 1-5 judge and
1-5 labels: ordinal figures on 1-5), else with the 0-1 score; the table's title says which.
``--kind`` picks the statistics, never the scale: ``--kind interval`` on 1-5 labels gives
RMSE in stars, not between a 0-1 score and stars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist.cli._app import EXIT_OK, app, err_console
from jurist.cli._help import choices_metavar
from jurist.errors import ConfigError, DataError

if TYPE_CHECKING:
    from jurist.metrics import Agreement, RubricMetrics


def choose_kind(verdicts: list[Any], labels: list[Any]) -> str:
    """``ordinal`` for whole-number labels and verdicts (10 values at most), ``interval``
    for other numbers, ``nominal`` for anything else."""
    nums = all(isinstance(v, int | float) and not isinstance(v, bool) for v in labels)
    if not nums:
        return "nominal"
    whole = all(float(v).is_integer() for v in labels) and len(set(labels)) <= 10
    verdicts_whole = all(
        isinstance(v, int | float) and float(v).is_integer() for v in verdicts if v is not None
    )
    return "ordinal" if whole and verdicts_whole else "interval"


def _print_agreement(console: Console, res: Agreement, what: str) -> None:
    table = Table(title=escape(f"agreement ({res.kind}): {what}"))
    for col in ("metric", "value", "95% CI"):
        table.add_column(col)
    for name, est in res.metrics.items():
        ci = "-" if est.low is None or est.high is None else f"[{est.low:.4f}, {est.high:.4f}]"
        table.add_row(escape(name), f"{est.value:.4f}", escape(ci))
    console.print(table)
    console.print(f"{res.n} pairs; {res.dropped} left out (no score or no label)", markup=False)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def _print_rubric(console: Console, m: RubricMetrics) -> None:
    table = Table(title="per criterion (final verdict vs ground truth)")
    cols = ["criterion", "kind", "n", "accuracy", "kappa", "lin. kappa", "quad. kappa"]
    cols += ["RMSE", "MAE", "judges alpha", "judges Fleiss"]
    for col in cols:
        table.add_column(col)
    for c in m.criteria:
        table.add_row(
            escape(c.name),
            escape(c.kind),
            str(c.n),
            *map(_fmt, (c.accuracy, c.kappa, c.linear_kappa, c.quadratic_kappa, c.rmse, c.mae)),
            _fmt(c.judges_alpha),
            _fmt(c.judges_fleiss_kappa),
        )
    console.print(table)
    judges = Table(title="per judge (votes vs ground truth)")
    judges.add_column("judge")
    judges.add_column("accuracy")
    for name, acc in sorted(m.judges.items()):
        judges.add_row(escape(name), _fmt(acc))
    console.print(judges)
    console.print(f"overall accuracy: {_fmt(m.overall_accuracy)}")


@app.command("agreement")
def agreement_command(
    run_dir: Annotated[str, typer.Argument(help="A run folder (jurist judge --out ...).")],
    labels: Annotated[
        str,
        typer.Option(
            help="The item field holding the human labels; "
            "labels.jsonl: those given on the review page (labels.jsonl:NAME: one annotator's)."
        ),
    ],
    kind: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("auto", "nominal", "ordinal", "interval")),
            help="auto, nominal, ordinal or interval (see docs/metrics.md).",
        ),
    ] = "auto",
    ci: Annotated[bool, typer.Option(help="Bootstrap 95% confidence intervals.")] = True,
) -> int:
    """Agreement between a run's judge and the labels in FIELD."""
    from jurist.data._item_names import item_label, item_name
    from jurist.metrics import agreement, criteria_info, rubric_metrics
    from jurist.metrics._labels import check_labels, label_missing
    from jurist.runs._people_labels import open_run
    from jurist.runs._state import partial_note
    from jurist.runs.report._scale import as_number, choose, scale_of, text_verdicts, verdict_text

    if kind not in ("auto", "nominal", "ordinal", "interval"):
        raise ConfigError(f"--kind must be auto, nominal, ordinal or interval, not {kind!r}")
    run = open_run(run_dir, labels)
    console = Console(width=max(140, Console().width))
    note = partial_note(run)
    if note is not None:  # the figures stand for the items judged so far, and say so
        err_console.print(note, markup=False, highlight=False)
    truth: list[Any] = []
    outcomes: list[dict[str, Any]] = []
    scores: list[Any] = []
    fields: set[str] = set()
    lacking: list[str] = []
    names: list[str] = []
    for row in run.rows():
        fields.update(row["item"])
        names.append(item_label(row["idx"], row["item"]))
        if labels not in row["item"]:
            lacking.append(item_name(row["idx"], row["item"]))
        value = row["item"].get(labels)
        truth.append(None if label_missing(value) else value)
        outcomes.append(row["outcome"])
        scores.append(row["score"])
    _check_present(run_dir, labels, lacking, len(truth), sorted(fields))
    if all(t is None for t in truth):
        raise DataError(
            f"{run_dir}: --labels {labels!r} has no usable values: it is missing (null, NaN "
            f"or blank) in all {len(truth)} items"
        )
    if any("criteria" in o for o in outcomes):
        from jurist.judges.rubric import Rubric

        spec = run.manifest.judge.get("rubric")
        if spec is None:
            raise ConfigError(f"{run_dir}: the run's manifest holds no rubric")
        info = criteria_info(Rubric.from_dict(spec))
        _print_rubric(console, rubric_metrics(info, truth, outcomes))
        return EXIT_OK
    check_labels(truth, field=labels, keys=names, where=run_dir)
    verdicts = [o.get("verdict") for o in outcomes]
    scale = scale_of(run.manifest.judge)
    if scale is not None:
        # the report's rule: on the verdict scale when the labels are on it, else the score
        triples = [
            (s, v, t)
            for s, v, t in zip(scores, verdicts, truth, strict=True)
            if s is not None and t is not None
        ]
        comparison = choose(triples, scale)
        chosen = comparison.kind if kind == "auto" else kind
        if comparison.on == "text":
            allowed = text_verdicts(scale, verdicts)
            off = [t for t in truth if t is not None and verdict_text(t, scale) not in allowed]
            _refuse(run_dir, labels, off, truth, f"not verdicts of the scale {scale.describe()}")
        if chosen != "nominal" and comparison.on != "score":
            off = [t for t in truth if t is not None and as_number(t) is None]
            _refuse(run_dir, labels, off, truth, f"not numbers, and --kind {chosen} needs them")
        pairs = [comparison.values(*x, scale) for x in zip(scores, verdicts, truth, strict=True)]
        values: list[Any] = [None if p is None else p[0] for p in pairs]
        truth = [None if p is None else p[1] for p in pairs]
        what = f"{comparison.note}; labels from {labels}"
    else:
        chosen = (
            choose_kind(verdicts, [t for t in truth if t is not None]) if kind == "auto" else kind
        )
        if chosen != "nominal":
            off = [t for t in truth if t is not None and as_number(t) is None]
            _refuse(run_dir, labels, off, truth, f"not numbers, and --kind {chosen} needs them")
        values = scores if chosen == "interval" else verdicts
        what = f"judge {'score' if chosen == 'interval' else 'verdict'} vs {labels}"
    if not any(v is not None and t is not None for v, t in zip(values, truth, strict=True)):
        raise DataError(
            f"{run_dir}: --labels {labels!r}: no item has both a judge score and a label "
            f"({sum(s is None for s in scores)} of {len(scores)} items got no score)"
        )
    res = agreement(values, truth, kind=chosen, ci=ci)  # type: ignore[arg-type]
    _print_agreement(console, res, what)
    return EXIT_OK


def _check_present(
    run_dir: str, labels: str, lacking: list[str], items: int, fields: list[str]
) -> None:
    """A :class:`~jurist.errors.DataError` when the label field is absent from any item."""
    if lacking and len(lacking) == items:
        raise DataError(
            f"{run_dir}: --labels {labels!r} is absent: {lacking[0]} has no field "
            f"{labels!r}, nor does any other of the {items} items; their fields are {fields}"
        )
    if lacking:
        raise DataError(
            f"{run_dir}: --labels {labels!r} is absent from {len(lacking)} of {items} items "
            f"({lacking[0]} has no field {labels!r})"
        )


def _refuse(run_dir: str, labels: str, off: list[Any], truth: list[Any], why: str) -> None:
    """A :class:`~jurist.errors.DataError` when some labels cannot be compared, naming
    how many and one of them."""
    if off:
        given = sum(t is not None for t in truth)
        raise DataError(
            f"{run_dir}: --labels {labels!r}: {len(off)} of {given} labels are unusable, "
            f"{why} (e.g. {off[0]!r})"
        )
