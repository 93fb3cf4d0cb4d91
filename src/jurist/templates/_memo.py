"""Verdicts read once per template: a short output is parsed once and remembered.

A judge that answers with the verdict alone writes the same few outputs again and again
("Correct", "Incorrect", "Score: 4"), and reading one is a pure function of the template
(frozen) and the text. :meth:`~jurist.templates.Template.parse` keeps what it read for
outputs up to :data:`MEMO_TEXT_MAX` characters here, per template object, so the hot path
of a judge on a fast server reads each distinct verdict once. Longer outputs (an
explanation, a reasoning block) are read each time. The tables are bounded: one is emptied
when it is full (a few hundred distinct short outputs), all of them past
:data:`MEMO_TEMPLATES` templates.

>>> from jurist.templates import get_template
>>> t = get_template("true_false")
>>> t.parse("Correct") is t.parse("Correct")
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MEMO_TEMPLATES", "MEMO_TEXT_MAX", "remembered"]

MEMO_TEXT_MAX = 64
"""The longest output whose reading is remembered."""
MEMO_SIZE = 512
"""Readings kept per template before its table is emptied."""
MEMO_TEMPLATES = 64
"""Templates with a table before every table is emptied."""

Key = tuple[str, bool, bool | None]
V = TypeVar("V")

# id(template) -> (the template, its table): the template is kept with its table, so an id
# reused by another object after the first is gone can never answer with the first's table
_tables: dict[int, tuple[object, dict[Key, Any]]] = {}


def remembered(owner: object, key: Key, read: Callable[[str, bool, bool | None], V]) -> V:
    """``read(*key)`` for ``owner``, computed once while it is remembered.

    ``read`` must be a pure function of ``owner`` (immutable) and ``key``, and return an
    immutable value: the same object is handed to every caller.
    """
    entry = _tables.get(id(owner))
    if entry is None or entry[0] is not owner:
        if len(_tables) >= MEMO_TEMPLATES:
            _tables.clear()
        entry = (owner, {})
        _tables[id(owner)] = entry
    table = entry[1]
    hit = table.get(key)
    if hit is None:
        hit = read(*key)
        if len(table) >= MEMO_SIZE:
            table.clear()
        table[key] = hit
    return hit
