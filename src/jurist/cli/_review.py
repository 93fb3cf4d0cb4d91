"""``jurist review RUN``: serve a page where people label a run's items (``docs/review.md``).

The page is served on 127.0.0.1 behind a random token (every route needs it) and writes
each label at once to ``RUN/labels.jsonl``; ``--export FILE.html`` writes the same page as
one offline file whose labels download as JSON Lines, and ``--import FILE`` adds such a
download to the run. ``RUN`` may also be a queue file inside a run folder (the cascade's
``review.jsonl``): the page then shows its items only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from jurist.cli._app import EXIT_OK, app
from jurist.cli._bounds import bounded
from jurist.errors import ConfigError


@app.command("review")
def review_command(
    run: Annotated[
        str,
        typer.Argument(
            metavar="RUN",
            help="A run folder, or a queue of its items (a cascade's RUN/review.jsonl).",
        ),
    ],
    scale: Annotated[
        str | None,
        typer.Option(
            metavar="SCALE",
            help="The labels to give: LOW-HIGH (like 1-5) or names (like yes,no); default: "
            "the judge's scale.",
        ),
    ] = None,
    queue: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Only the items of this JSON Lines file, in its order (lines name an item "
            "by `item`, or hold its fields as review.jsonl does).",
        ),
    ] = None,
    show_verdict: Annotated[
        bool,
        typer.Option("--show-verdict", help="Show the judge's verdict before the label is given."),
    ] = False,
    port: Annotated[
        int, typer.Option(**bounded("port", help="The port on 127.0.0.1 (0: a free one)."))
    ] = 0,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="JURIST_REVIEW_TOKEN",
            help="The page's token (default: a new random one); the same --port and "
            "--token after a restart let open pages carry on.",
        ),
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE.html",
            help="Write the page as one offline file (labels save as a download); no server.",
        ),
    ] = None,
    import_file: Annotated[
        Path | None,
        typer.Option(
            "--import",
            metavar="FILE",
            help="Add the labels of a downloaded file (an exported page's) to RUN's "
            "labels.jsonl; no server.",
        ),
    ] = None,
    plan: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            **bounded(
                "plan",
                help="Choose N items to label so the corrected interval narrows most; writes "
                "RUN/plan.jsonl (open it with --queue RUN/plan.jsonl); no server.",
            ),
        ),
    ] = None,
    labels: Annotated[
        str | None,
        typer.Option(
            metavar="LABELS",
            help="With --plan: the labels so far, an item field or a labels file (default: "
            "RUN/labels.jsonl if there is one).",
        ),
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            metavar="auto|uniform|spread",
            help="With --plan: how items are chosen (auto: by how far a label may fall from "
            "the judge, where that can be told).",
        ),
    ] = "auto",
    target_width: Annotated[
        float | None,
        typer.Option(
            metavar="W",
            **bounded(
                "target_width", help="With --plan: say how many labels an interval this wide needs."
            ),
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(**bounded("seed", help="With --plan: the draw's seed."))
    ] = None,
) -> int:
    """Serve a page where people label RUN's items; each label is written at once to
    RUN/labels.jsonl (or --plan which items to label, --export an offline page, --import
    its labels)."""
    if plan is not None:  # a plan is a queue: the page opens RUN/plan.jsonl with --queue
        from jurist.cli._review_plan import run_plan

        return run_plan(run, plan, labels=labels, by=by, target_width=target_width, seed=seed)
    from jurist.runs.review import import_labels, load_items, serve, write_export

    target = Path(run)
    if target.is_file():  # a queue inside a run folder: RUN/review.jsonl, RUN/plan.jsonl
        if queue is not None:
            raise ConfigError("give RUN as a folder when --queue names the queue")
        target, queue = target.parent, target
    if token is not None and (len(token) < 16 or not token.isascii() or not token.isprintable()):
        raise ConfigError("--token: at least 16 printable ASCII characters")
    found = load_items(target, scale=scale, queue=queue)
    out = Console()
    if import_file is not None:
        written, already = import_labels(found, import_file)
        out.print(
            f"labels: {written} added to {target / 'labels.jsonl'}, {already} already there",
            highlight=False,
            markup=False,
        )
        return EXIT_OK
    if export is not None:
        path = write_export(found, export, show_verdict=show_verdict)
        out.print(f"review page: {path} ({len(found.items)} items)", highlight=False, markup=False)
        return EXIT_OK
    import asyncio

    def ready(url: str) -> None:
        out.print(f"review page: {url}", highlight=False, markup=False, soft_wrap=True)
        out.print(
            f"{len(found.items)} items, scale {', '.join(found.scale.names)}; labels go to "
            f"{target / 'labels.jsonl'}; Ctrl+C stops",
            highlight=False,
            markup=False,
        )
        out.file.flush()

    asyncio.run(serve(found, port=port, token=token, show_verdict=show_verdict, ready=ready))
    return EXIT_OK
