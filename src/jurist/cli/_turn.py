"""The ``--turn`` and ``--max-tool-chars`` flags: how conversation items are judged.

>>> parse_turn("last"), parse_turn("all"), parse_turn("-2")
('last', 'all', -2)
>>> parse_turn("first")
Traceback (most recent call last):
...
jurist.errors.ConfigError: --turn must be last, all or a reply's index (0, 1, -1, ...), not 'first'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jurist.errors import ConfigError

if TYPE_CHECKING:
    from jurist.templates import Turn

__all__ = ["MAX_TOOL_CHARS_HELP", "TURN_HELP", "parse_turn"]

TURN_HELP = (
    "For items holding a conversation (messages): the reply judged, last (the last "
    "assistant reply; the rest is context), all, or its index (0 the first, -1 the last)."
)
MAX_TOOL_CHARS_HELP = "Cut tool results longer than this (a marker shows the cut); 0: never."


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
