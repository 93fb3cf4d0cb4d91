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
        int, typer.Option(min=0, max=65535, help="The port on 127.0.0.1 (0: a free one).")
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
) -> int:
    """Serve a page where people label RUN's items; each label is written at once to
    RUN/labels.jsonl (or --export an offline page, --import its labels)."""
    from jurist.runs.review import import_labels, load_items, serve, write_export

    target = Path(run)
    if target.is_file():  # a queue inside a run folder: RUN/review.jsonl
        if queue is not None:
            raise ConfigError("give RUN as a folder when --queue names the queue")
        target, queue = target.parent, target
    # Choosing which items to label (`--plan N`) goes here: a plan is a queue, one line per
    # chosen item with its `item` key and its `inclusion_probability`, which the page opens
    # as any --queue file is opened (load_items(target, queue=...)), and every label given
    # for a planned item carries its inclusion probability into labels.jsonl.
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
