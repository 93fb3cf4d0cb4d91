"""The ``jurist`` command line. Exit codes: 0 all items scored, 1 finished with some items
unscored, 2 usage error (bad flag, file, field, template or provider), 3 runtime failure
(model unreachable or not loadable)."""

from jurist.cli._app import EXIT_FAILED_ITEMS, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, app, main

__all__ = ["EXIT_FAILED_ITEMS", "EXIT_OK", "EXIT_RUNTIME", "EXIT_USAGE", "app", "main"]
