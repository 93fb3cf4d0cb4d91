"""``jurist calibrate RUN --labels FIELD``: fit a monotone map from a run's scores to labels.

Half the labelled items (``--fraction``) fit the map, the others test it: the command prints
agreement on the held-out items before and after, with intervals and the paired gain, and
says whether the headline gain's interval clears zero. ``--save NAME`` stores the run's
judge with the calibration as a catalog entry (``jurist.catalog.get(NAME)`` then judges
with calibrated scores), carrying a fingerprint of the items it was fitted on; ``--json``
writes the whole report.

Exit status, as ``jurist align``'s: 0 a supported gain; 1 no supported gain (the
calibration is not saved unless ``--save-anyway``); 2 a usage error (an unfinished run, a
label field that cannot be used: absent, not numbers, not finite, one value only, fewer
than 10 labelled items; a catalog name that exists without ``--overwrite``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.cli._catalog import CatalogDir, refuse_existing
from jurist.cli._help import choices_metavar
from jurist.errors import ConfigError, DataError
from jurist.metrics._labels import label_missing
from jurist.runs import Run
from jurist.runs._people_labels import open_run
from jurist.runs._state import require_finished
from jurist.trust import CalibratedJudge, CalibrationReport, fit_calibration

__all__ = ["EXIT_NO_GAIN", "calibrate_command", "calibrate_run", "save_calibrated"]

EXIT_NO_GAIN = 1
"""Exit status of ``jurist calibrate`` and ``jurist align``: no supported gain."""


@app.command("calibrate")
def calibrate_command(
    run_dir: Annotated[str, typer.Argument(help="A run folder (jurist judge --out ...).")],
    labels: Annotated[
        str,
        typer.Option(
            help="The item field holding numeric labels; "
            "labels.jsonl: those given on the review page (labels.jsonl:NAME: one annotator's)."
        ),
    ],
    kind: Annotated[
        str,
        typer.Option(
            metavar=choices_metavar(("auto", "ordinal", "interval")),
            help="ordinal (verdicts round to the label values) or interval; auto: ordinal "
            "for at most 10 whole-number label values.",
        ),
    ] = "auto",
    fraction: Annotated[
        float, typer.Option(**bounded("fraction", help="Share of the items the map is fitted on."))
    ] = 0.5,
    seed: Annotated[
        int, typer.Option(**bounded("seed", help="Seed of the split and the bootstrap."))
    ] = 0,
    save: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="Store the calibrated judge as catalog entry NAME."),
    ] = None,
    catalog_dir: CatalogDir = None,
    overwrite: Annotated[bool, typer.Option(help="Replace a catalog entry of that name.")] = False,
    save_anyway: Annotated[
        bool, typer.Option("--save-anyway", help="Save even when the gain is not supported.")
    ] = False,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the whole report as JSON to this file.")
    ] = None,
) -> int:
    """Calibrate RUN's judge to the labels in FIELD; report held-out agreement before/after.

    Exit status: 0 a supported gain; 1 no supported gain (nothing is saved unless
    --save-anyway); 2 a usage error.
    """
    if kind not in ("auto", "ordinal", "interval"):
        raise ConfigError(f"--kind must be auto, ordinal or interval, not {kind!r}")
    run = open_run(run_dir, labels)
    require_finished(run)
    if save is not None and not overwrite:
        refuse_existing(save, catalog_dir)  # before the fit, naming the flag
    report = calibrate_run(run, labels, kind=kind, fraction=fraction, seed=seed)
    console = Console(width=max(120, Console().width))
    for line in report.lines():
        console.print(line, markup=False, highlight=False)
    if json_out is not None:
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        console.print(f"report: {json_out}", markup=False, highlight=False)
    if save is not None:
        if report.supported or save_anyway:
            path = save_calibrated(run, report, save, root=catalog_dir, overwrite=overwrite)
            console.print(f"saved {save}: {path}", markup=False, highlight=False)
        else:
            console.print(
                f"not saved: no supported gain (--save-anyway saves {save} all the same)",
                markup=False,
                highlight=False,
            )
    return EXIT_OK if report.supported else EXIT_NO_GAIN


def calibrate_run(
    run: Run,
    labels: str,
    *,
    kind: str = "auto",
    fraction: float = 0.5,
    seed: int = 0,
    n_resamples: int = 1000,
) -> CalibrationReport:
    """:func:`~jurist.trust.fit_calibration` over ``run``'s scores and its items' labels."""
    scores: list[float | None] = []
    truth: list[Any] = []
    keys: list[Any] = []
    lacking = 0
    for row in run.rows():
        item = row["item"]
        if labels not in item:
            lacking += 1
        value = item.get(labels)
        truth.append(None if label_missing(value) else value)
        scores.append(row["score"])
        keys.append(item.get("id", row["idx"] + 1))
    if lacking == len(truth):
        raise DataError(f"{run.run_dir}: --labels {labels!r}: no item has that field")
    off = [t for t in truth if t is not None and (isinstance(t, bool) or not _number(t))]
    if off:
        raise DataError(
            f"{run.run_dir}: --labels {labels!r}: {len(off)} labels are not numbers "
            f"(e.g. {off[0]!r}); calibration maps scores onto numeric labels"
        )
    return fit_calibration(
        scores,
        [None if t is None else float(t) for t in truth],
        kind=None if kind == "auto" else kind,  # type: ignore[arg-type]
        keys=keys,
        calibration_fraction=fraction,
        seed=seed,
        label_field=labels,
        source=str(run.run_dir),
        n_resamples=n_resamples,
    )


def _number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def save_calibrated(
    run: Run,
    report: CalibrationReport,
    name: str,
    *,
    root: Path | None = None,
    overwrite: bool = False,
) -> Path:
    """Store ``run``'s judge with ``report``'s calibration as catalog entry ``name``."""
    import jurist.catalog as cat
    from jurist.engines._judge_entry import rebuild_judge
    from jurist.runs._folder import STORE_NAME
    from jurist.runs._store import RunStore

    store = RunStore(run.run_dir / STORE_NAME, readonly=True)
    try:
        entry = store.get_meta("judge_entry")
    finally:
        store.close()
    if entry is None:
        raise ConfigError(
            f"{run.run_dir}: the run kept no catalog entry of its judge (a custom judge, or "
            "a run from before jurist kept one), so the calibrated judge cannot be saved; "
            "--json keeps the calibration"
        )
    judge = rebuild_judge(entry, run.run_dir / STORE_NAME)
    calibrated = CalibratedJudge(judge, report.calibration)
    fitted = report.calibration.fitted_on
    description = (
        f"{judge.name} calibrated to {fitted.labels} on {fitted.items} items of "
        f"{run.run_dir.name} (data {fitted.fingerprint}); held-out {report.headline} "
        f"{report.before[report.headline].value:.3f} -> {report.after[report.headline].value:.3f}"
    )
    return cat.add(calibrated, name, root=root, overwrite=overwrite, description=description)
