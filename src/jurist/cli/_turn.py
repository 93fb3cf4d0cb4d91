"""The flags on how items are read and judged: ``--turn`` and ``--max-tool-chars``
(conversation items), and ``--files-root DIR`` (the folders local image files may be read
from; typed once here, :data:`FilesRootFlag`, for every command that reads items).

>>> parse_turn("last"), parse_turn("all"), parse_turn("-2")
('last', 'all', -2)
>>> parse_turn("first")
Traceback (most recent call last):
...
jurist.errors.ConfigError: --turn must be last, all or a reply's index (0, 1, -1, ...), not 'first'
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.templates import Turn

__all__ = ["FILES_ROOT_HELP", "MAX_TOOL_CHARS_HELP", "TURN_HELP", "FilesRootFlag", "parse_turn"]

TURN_HELP = (
    "For items holding a conversation (messages): the reply judged, last (the last "
    "assistant reply; the rest is context), all, or its index (0 the first, -1 the last)."
)
MAX_TOOL_CHARS_HELP = "Cut tool results longer than this (a marker shows the cut); 0: never."
FILES_ROOT_HELP = (
    "Also read the local image files items name from this folder (repeatable). By default "
    "only the data file's own folder is read (real paths: a symlink or ../ leaving it, an "
    "absolute or ~ path elsewhere is refused); see docs/security.md."
)
FilesRootFlag = Annotated[
    list[Path] | None,
    typer.Option("--files-root", metavar="DIR", help=FILES_ROOT_HELP, show_default=False),
]


def parse_turn(text: str) -> Turn:
    """The ``--turn`` value as a judge takes it."""
    value = text.strip().lower()
    if value in ("last", "all"):
        return "last" if value == "last" else "all"
    try:
        return int(value)
    except ValueError:
        raise ConfigError(
            f"--turn must be last, all or a reply's index (0, 1, -1, ...), not {text!r}"
        ) from None
