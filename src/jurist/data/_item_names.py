"""One item numbering for everything a user reads: the data's id, else a 1-based row number.

The run store keys rows by their 0-based position (``idx``) and keeps doing so; what a
person reads (the CLI's messages, the report, ``jurist agreement``, errors) names an item
through :func:`item_label` / :func:`item_name` only: the value of the row's id column
when it has one (the first of :data:`ID_COLUMNS` holding a plain value), else its
1-based row number.

>>> item_label(0, {"prompt": "q"}), item_label(4, {"id": "q17", "prompt": "q"})
('1', 'q17')
>>> item_name(2, {"question_id": 81}), item_name(2, {"id": None}), item_name(9, None)
('item 81', 'item 3', 'item 10')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jurist._missing import is_missing

__all__ = ["ID_COLUMNS", "item_id", "item_label", "item_name"]

ID_COLUMNS = ("id", "item_id", "question_id", "example_id", "uid", "_id")
"""The columns read as an item's own id, in this order."""


def item_id(row: Mapping[str, Any] | None) -> str | None:
    """The row's own id as text (a string or a whole number in an id column), or None."""
    if not row:
        return None
    for column in ID_COLUMNS:
        value = row.get(column)
        if isinstance(value, bool) or is_missing(value):
            continue
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, int):
            return str(value)
    return None


def item_label(idx: int, row: Mapping[str, Any] | None = None) -> str:
    """What a user reads for the item at 0-based position ``idx``: its id, else its
    1-based row number."""
    found = item_id(row)
    return found if found is not None else str(idx + 1)


def item_name(idx: int, row: Mapping[str, Any] | None = None) -> str:
    """``item <label>`` (see :func:`item_label`)."""
    return f"item {item_label(idx, row)}"
