"""The typer application, its error handling and exit codes."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
from rich.console import Console

from jurist.errors import JuristRuntimeError, UserError

__all__ = ["EXIT_FAILED_ITEMS", "EXIT_OK", "EXIT_RUNTIME", "EXIT_USAGE", "app", "main"]

EXIT_OK = 0
EXIT_FAILED_ITEMS = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3

app = typer.Typer(
    name="jurist",
    help="LLM-as-a-judge: score, compare and grade model outputs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True)


def _register() -> None:
    # commands register on import
    from jurist.cli import (  # noqa: F401
        _agreement,
        _catalog,
        _compare,
        _eval_model,
        _grade,
        _judge,
        _report,
        _templates,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns (and, as a script, exits with) the exit code."""
    _register()
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, standalone_mode=False)
    except UserError as e:
        err_console.print(f"[bold red]error:[/] {e}", highlight=False, soft_wrap=True)
        return _exit(EXIT_USAGE, argv)
    except JuristRuntimeError as e:
        err_console.print(f"[bold red]failed:[/] {e}", highlight=False, soft_wrap=True)
        return _exit(EXIT_RUNTIME, argv)
    except typer.Exit as e:
        return _exit(int(e.exit_code), argv)
    except typer.Abort:
        err_console.print("aborted")
        return _exit(130, argv)
    except Exception as e:
        # typer's (vendored) click reports bad flags with exceptions that can show themselves
        show = getattr(e, "show", None)
        if callable(show) and hasattr(e, "exit_code"):
            show()
            return _exit(EXIT_USAGE, argv)
        raise
    code = result if isinstance(result, int) else EXIT_OK
    return _exit(code, argv)


def _exit(code: int, argv: Sequence[str] | None) -> int:
    if argv is None:
        sys.exit(code)
    return code
