"""``jurist.cli.main``: run the app, map errors to exit codes.

The app imports a command's module when the command is used (:data:`jurist.cli._app.COMMANDS`);
the commands import only :mod:`jurist.cli._app`, never this module, so the dependency points
one way.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Sequence

import typer
from rich.markup import escape

from jurist.cli._app import (
    EXIT_CRASH,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    USAGE_ERRNOS,
    app,
    err_console,
)
from jurist.errors import JuristRuntimeError, UserError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns (and, as a script, exits with) the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, standalone_mode=False)
    except UserError as e:
        _say("error", str(e))
        return _exit(EXIT_USAGE, argv)
    except JuristRuntimeError as e:
        _say("failed", str(e))
        return _exit(EXIT_RUNTIME, argv)
    except typer.Exit as e:
        return _exit(int(e.exit_code), argv)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("aborted", highlight=False, markup=False)
        return _exit(EXIT_INTERRUPTED, argv)
    except OSError as e:
        if e.filename is not None:
            message = f"{e.filename}: {e.strerror or e}"
        else:
            message = f"{type(e).__name__}: {e}"
        if e.errno in USAGE_ERRNOS:
            _say("error", message)
            return _exit(EXIT_USAGE, argv)
        _say("failed", message + (" (disk full)" if e.errno == errno.ENOSPC else ""))
        return _exit(EXIT_RUNTIME, argv)
    except Exception as e:
        if _is_sqlite_error(e):
            if not any(k in str(e) for k in _SQLITE_RUNTIME):
                return _exit(_crash(e), argv)
            _say("failed", f"SQLite (run store or cache): {e}")
            return _exit(EXIT_RUNTIME, argv)
        # typer's (vendored) click reports bad flags with exceptions that can show themselves
        show = getattr(e, "show", None)
        if callable(show) and hasattr(e, "exit_code"):
            show()
            return _exit(EXIT_USAGE, argv)
        return _exit(_crash(e), argv)
    code = result if isinstance(result, int) else EXIT_OK
    return _exit(code, argv)


# SQLite errors that are the machine's (a full disk, a locked file), not a bug
_SQLITE_RUNTIME = ("full", "I/O", "locked", "unable to open", "readonly")


def _is_sqlite_error(e: Exception) -> bool:
    """Whether ``e`` is SQLite's OperationalError (sqlite3 is not imported to ask: a
    command that never imported it raised none of its errors)."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3 is not None and isinstance(e, sqlite3.OperationalError)


def _say(kind: str, message: str) -> None:
    """One line on stderr; the message is never read as rich markup, nor shows a key."""
    from jurist._secrets import scrub

    message = scrub(message)
    err_console.print(f"[bold red]{kind}:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _crash(e: BaseException) -> int:
    """An unexpected exception: a bug. Say so apart from every other failure; exit 70."""
    _say("internal error", f"{type(e).__name__}: {e}")
    if os.environ.get("JURIST_DEBUG"):
        traceback.print_exception(e, file=sys.stderr)
    else:
        frame = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
        at = f" at {frame[0].filename}:{frame[0].lineno}" if frame else ""
        err_console.print(
            f"(set JURIST_DEBUG=1 for the traceback{escape(at)}; please report it)",
            highlight=False,
            soft_wrap=True,
        )
    return EXIT_CRASH


def _exit(code: int, argv: Sequence[str] | None) -> int:
    if argv is None:
        sys.exit(code)
    return code
