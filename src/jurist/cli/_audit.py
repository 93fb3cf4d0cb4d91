"""``jurist audit PAIRS``: probe a pairwise judge's biases on your own data.

PAIRS holds rows with ``prompt``, ``response_a`` and ``response_b`` (the ``pairs.jsonl``
that ``jurist compare`` writes will do). The probes (``--probe``, repeatable; all by
default) are those of :mod:`jurist.audit`: position, verbosity, format and self-preference
(the latter needs ``--reference-model`` and ``--own``). The command prints a table and
writes ``audit.json`` and ``audit.md`` to the output folder. Exit status 0, or 1 under
``--strict`` when a probe fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from jurist._local_files import roots_of
from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.cli._help import choices_metavar, template_help
from jurist.cli._model_options import ModelOptions, model_options, resolve_model_spec
from jurist.cli._turn import FilesRootFlag
from jurist.errors import ConfigError, DataError

EXIT_BIASED = 1
"""Exit status under ``--strict``: at least one probe failed."""


def _rows(path: Path, files_root: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """The rows, their local image paths permitted by the file's policy (its folder and
    ``files_root``; see :mod:`jurist._local_files`)."""
    from jurist.data import open_source
    from jurist.data._local_images import resolve_images

    rows = []
    source = open_source(path, files_root=files_root)
    for _, where, row in source:
        if not isinstance(row, dict):
            raise DataError(f"{where}: not a record")
        rows.append(resolve_images(row, source.files, where))
    return rows


@app.command("audit")
@model_options(concurrency=16, concurrency_help="Judge calls in flight at once.")
def audit_command(
    pairs: Annotated[
        Path, typer.Argument(help="Rows with prompt, response_a, response_b (.jsonl, .csv, ...).")
    ],
    probe: Annotated[
        list[str] | None,
        typer.Option(
            metavar=choices_metavar(("position", "verbosity", "format", "self_preference")),
            help="A probe to run; repeat for several. Default: all.",
        ),
    ] = None,
    template: Annotated[
        str, typer.Option(metavar="NAME", help=template_help("pairwise"))
    ] = "mt_bench_pair",
    reference_model: Annotated[
        str | None,
        typer.Option(help="A second judge model for the self-preference probe."),
    ] = None,
    own: Annotated[
        str | None,
        typer.Option(
            metavar=choices_metavar(("a", "b")),
            help="Which side's replies the judge's own model wrote (self-preference).",
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(
            **bounded("threshold", help="Largest tolerated effect (share of verdicts swung).")
        ),
    ] = 0.1,
    pad_factor: Annotated[
        float,
        typer.Option(
            **bounded("pad_factor", help="Verbosity probe: filler added, times the reply's length.")
        ),
    ] = 1.0,
    seed: Annotated[
        int, typer.Option(**bounded("seed", help="Seed of the bootstrap intervals."))
    ] = 0,
    out: Annotated[Path | None, typer.Option(help="Folder; default runs/audit-<pairs>/.")] = None,
    strict: Annotated[bool, typer.Option(help="Exit with status 1 when a probe fails.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    files_root: FilesRootFlag = None,
    *,
    options: ModelOptions,
) -> int:
    """Audit a pairwise judge's biases (position, verbosity, format, self-preference)."""
    from jurist.audit import PROBES, audit_sync
    from jurist.judges import PairwiseJudge

    probes = tuple(probe) if probe else PROBES
    unknown = [p for p in probes if p not in PROBES]
    if unknown:
        raise ConfigError(f"--probe {unknown[0]!r} is not a probe; choose from {list(PROBES)}")
    if own not in (None, "a", "b"):
        raise ConfigError(f"--own must be a or b, not {own!r}")
    if not 0 < threshold <= 1:
        raise ConfigError(f"--threshold must lie in (0, 1], got {threshold}")
    if pad_factor <= 0:
        raise ConfigError(f"--pad-factor must be > 0, got {pad_factor}")
    rows = _rows(pairs, roots_of(files_root, what="--files-root"))

    def judge_for(spec: str) -> PairwiseJudge:
        return PairwiseJudge(
            options.build(spec),
            template,
            temperature=options.temperature,
            concurrency=options.concurrency,
        )

    judge = judge_for(options.spec)
    reference = (
        judge_for(resolve_model_spec(reference_model, options.base_url))
        if reference_model
        else None
    )
    report = audit_sync(
        judge,
        rows,
        probes=probes,
        reference=reference,
        own=own,
        thresholds={p: threshold for p in probes},
        pad_factor=pad_factor,
        seed=seed,
        progress=progress,
    )
    folder = out or Path("runs") / f"audit-{pairs.stem}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "audit.json").write_text(report.model_dump_json(indent=2) + "\n")
    (folder / "audit.md").write_text(report.to_markdown())

    console = Console()
    table = Table(title=escape(f"bias audit: {report.judge}"))
    for col in ("probe", "effect", "95% interval", "threshold", "verdict", "items", "failed"):
        table.add_column(col)
    for p in report.probes:
        if p.effect is None or p.lower is None or p.upper is None:
            table.add_row(
                p.name, "-", "-", "-", escape(f"skipped: {p.reason}"), "0", str(p.n_failed)
            )
            continue
        table.add_row(
            p.name,
            f"{p.effect:+.3f}",
            f"[{p.lower:+.3f}, {p.upper:+.3f}]",
            f"{p.threshold:.2f}",
            p.verdict,
            str(p.n),
            str(p.n_failed),
        )
    console.print(table)
    console.print(f"report: {folder / 'audit.md'}", markup=False, highlight=False)
    return EXIT_BIASED if strict and not report.passed else EXIT_OK
