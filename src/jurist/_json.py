"""Reading JSON that comes from elsewhere (trace exports, reward-server bodies) with an
explicit bound on its nesting.

Python's ``json`` parser recurses once per nested array or object: a document nested
about a thousand levels deep stops it with a ``RecursionError`` (a traceback, not a
message), and deeper ones are what a hostile body is made of. :func:`loads` reads a
document with orjson (which refuses anything past 1,024 levels), falls back to Python's
``json`` for what orjson refuses and ``json`` reads (the ``NaN`` and ``Infinity`` tokens,
integers past 64 bits), and then checks the value it got against ``max_depth``. A
document nested deeper than the bound, at any of those steps, is a :class:`TooDeep`
naming the bound; a document that is not JSON is the parser's ``ValueError``.

The depth counts arrays and objects: ``1`` and ``"a"`` are 0 deep, ``[1]`` is 1, and
``{"a": [1]}`` is 2.

>>> loads('{"a": [1, NaN]}')
{'a': [1, nan]}
>>> depth([[1], {"a": [2]}])
3
>>> loads("[" * 200 + "]" * 200)
Traceback (most recent call last):
...
jurist._json.TooDeep: JSON nested deeper than 128 levels (arrays and objects)
>>> loads("[" * 5000 + "]" * 5000, max_depth=10)
Traceback (most recent call last):
...
jurist._json.TooDeep: JSON nested deeper than 10 levels (arrays and objects)
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "TooDeep", "depth", "loads"]

MAX_DEPTH = 128
"""The deepest nesting read by default: far past any trace export's or request body's
own shape (an OTLP span's attributes are 6 levels down), far short of the parsers'
recursion limits."""


class TooDeep(ValueError):
    """A JSON document nested deeper than the bound it was read under."""

    def __init__(self, max_depth: int) -> None:
        super().__init__(f"JSON nested deeper than {max_depth} levels (arrays and objects)")
        self.max_depth = max_depth


def depth(value: Any, *, limit: int | None = None) -> int:
    """How deep ``value`` (decoded JSON) nests lists and dicts; walked without recursion,
    and stopped once past ``limit`` (then the result is ``limit + 1``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if limit is not None and deepest > limit:
            return deepest
        stack.extend((c, level) for c in children if isinstance(c, dict | list))
    return deepest


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """The value of the JSON document ``data``, nested at most ``max_depth`` deep.

    Bytes are UTF-8. Raises :class:`TooDeep` past the bound, and ``ValueError``
    (``json.JSONDecodeError``, ``UnicodeDecodeError``) for what is not JSON.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if any(word in str(e).lower() for word in ("depth", "recursion")):
            raise TooDeep(max_depth) from None  # orjson's own limit (1,024 levels)
        try:
            value = json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
        except RecursionError:  # far past any bound: Python's parser ran out of stack
            raise TooDeep(max_depth) from None
    if depth(value, limit=max_depth) > max_depth:
        raise TooDeep(max_depth)
    return value
