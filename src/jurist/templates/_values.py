"""How an item's field value becomes text in a judge's prompt.

A string is itself, ``None`` is empty, a number or a boolean is written as Python writes it
(``4``, ``0.5``, ``True``). A list, a tuple, a mapping or an array (a JSON or Parquet
list column, a dict field, a numpy array from pandas) is written as **JSON**, keys in the
item's own order and non-ASCII text as it is, so the judge reads ``["a", "b"]`` and
``{"city": "Paris"}``, never Python's ``['a', 'b']`` or an array's ``[1 2 3]``.

>>> field_text(["a", "b"]), field_text({"city": "Zürich", "n": 2}), field_text(None)
('["a","b"]', '{"city":"Zürich","n":2}', '')
>>> field_text("plain"), field_text(4), field_text(0.5)
('plain', '4', '0.5')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["field_text"]

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def field_text(value: Any) -> str:
    """The text of one field value in a prompt (see the module)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping | list | tuple) or _is_array(value):
        return orjson.dumps(value, option=_JSON_OPTIONS, default=_inner).decode()
    return str(value)


def _is_array(value: Any) -> bool:
    return type(value).__module__ == "numpy" and getattr(value, "ndim", 0) > 0


def _inner(value: Any) -> Any:
    """A value inside a list or mapping that JSON has no form for: a nested mapping or
    sequence as such, a numpy scalar as its Python value, anything else as its text."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        return item()
    return str(value)
