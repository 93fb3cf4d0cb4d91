"""The typer application, its exit codes and the error console.

The command modules (``_judge``, ``_grade``, ...) import ``app`` from here and register on
it; this module imports none of them. :mod:`jurist.cli._main` imports the commands and
runs the app, so every import points one way.
"""

from __future__ import annotations

import errno
from typing import Annotated

import typer
from rich.console import Console

from jurist._version import __version__
from jurist.cli._help import JuristTyper

__all__ = [
    "EXIT_CRASH",
    "EXIT_FAILED_ITEMS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "USAGE_ERRNOS",
    "app",
    "err_console",
]

EXIT_OK = 0
"""Exit status: every item judged."""
EXIT_FAILED_ITEMS = 1
"""Exit status: the run finished, but some items have no score."""
EXIT_USAGE = 2
"""Exit status: a usage error (a flag, a path, a column); nothing was judged."""
EXIT_RUNTIME = 3
"""Exit status: the run stopped on a runtime error (an API, a full disk)."""
EXIT_CRASH = 70  # EX_SOFTWARE: a bug in jurist, not a problem with the input
"""Exit status: a bug in jurist (EX_SOFTWARE), not a problem with the input."""
EXIT_INTERRUPTED = 130

# OS errors that a user fixes (a path): usage; the rest (a full disk, I/O): runtime
USAGE_ERRNOS = {errno.ENOENT, errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM}

app = JuristTyper(
    name="jurist",
    help="LLM-as-a-judge: score, compare and grade model outputs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
"""The ``jurist`` command (a Typer app); each subcommand module registers on it."""
err_console = Console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        Console().print(f"jurist {__version__}", highlight=False, markup=False)
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print jurist's version and exit.",
        ),
    ] = False,
) -> None:
    """LLM-as-a-judge: score, compare and grade model outputs."""
