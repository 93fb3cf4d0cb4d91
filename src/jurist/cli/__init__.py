"""The ``jurist`` command line. Exit codes: 0 all items scored, 1 finished with some items
unscored, 2 usage error (bad flag, file, field, template or provider), 3 runtime failure
(model unreachable or not loadable, disk full), 70 internal error (a bug), 130 interrupted."""

from jurist.cli._app import (
    EXIT_CRASH,
    EXIT_FAILED_ITEMS,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    app,
)
from jurist.cli._main import main

__all__ = [
    "EXIT_CRASH",
    "EXIT_FAILED_ITEMS",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "app",
    "main",
]
