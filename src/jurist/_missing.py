"""What counts as a missing value in an item: absent, null, NaN or a pandas NA.

A judge never sees the text ``"nan"`` or ``"None"``: a required field that holds no value
stops with the item's place and what was found there. An empty string is a value (an
empty response is a legitimate thing to judge), and so is ``0``.

>>> no_value({"response": None}, "response")
'is null'
>>> no_value({"response": float("nan")}, "response")
'is NaN (a missing value)'
>>> no_value({}, "response")
'is missing'
>>> no_value({"response": ""}, "response") is None
True
>>> field_problem({"answer": None}, "answer", role="response")
"field 'answer' (the response) is null"
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["field_problem", "is_missing", "no_value"]

_ABSENT = object()


def is_missing(value: Any) -> bool:
    """``None``, a float NaN (Python, NumPy), ``pandas.NA`` or ``pandas.NaT``."""
    if value is None:
        return True
    if isinstance(value, float):  # numpy.float64 is a float too
        return math.isnan(value)
    kind = type(value).__name__
    if kind in ("NAType", "NaTType"):
        return True
    if kind.startswith("float") and type(value).__module__ == "numpy":
        return bool(value != value)
    return False


def no_value(row: Mapping[str, Any], key: str) -> str | None:
    """Why ``row[key]`` holds no value (``'is missing'``, ``'is null'``...), else ``None``."""
    value = row.get(key, _ABSENT)
    if value is _ABSENT:
        return "is missing"
    if value is None:
        return "is null"
    if not is_missing(value):
        return None
    if isinstance(value, float):
        return "is NaN (a missing value)"
    return f"is {value} (a missing value)"


def field_problem(row: Mapping[str, Any], column: str, *, role: str | None = None) -> str | None:
    """``"missing field 'x'"`` or ``"field 'x' is null"`` (naming the ``role`` it plays when
    that differs from the column), or ``None`` when ``row[column]`` holds a value."""
    why = no_value(row, column)
    if why is None:
        return None
    what = f"field {column!r}" + (f" (the {role})" if role and role != column else "")
    return f"missing {what}" if why == "is missing" else f"{what} {why}"
