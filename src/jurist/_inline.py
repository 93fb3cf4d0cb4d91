"""The inline override grammar: ``key=value,key=value`` between square brackets.

Catalog names (``judges.x[temperature=0.2]``, see :mod:`jurist.catalog._names`) and model
specs (``openai:gpt-4o-mini[api_key=...]``, see :mod:`jurist.models._spec`) carry options
this way; both read them here.

- *keys* are identifiers or dotted paths of identifiers (``model_options.base_url``); a
  key may appear once;
- *values*: ``true`` / ``false`` are booleans, ``null`` / ``none`` is ``None`` (these
  four words in any case), an integer (``64``, ``-1``) or a decimal (``0.2``, ``1e-3``,
  ``.5``) is a number, ``'...'`` or ``"..."`` is a string taken literally, except that a
  backslash escapes the next character (so quotes may hold ``,``, ``]``, ``=``, spaces and
  the other quote); anything else is a bare string with the spaces around it trimmed, and
  may not hold ``, [ ] = ' "``. A quoted ``'true'`` or ``'64'`` stays a string.

>>> format_overrides({"instructions": "Be strict, please", "max_tokens": 64})
"[instructions='Be strict, please',max_tokens=64]"
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from jurist._secrets import scrub
from jurist.errors import ConfigError

__all__ = ["Scalar", "format_overrides", "parse_overrides", "read_scalar"]

Scalar = str | int | float | bool | None

_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_KEY = re.compile(rf"{_PART}(?:\.{_PART})*")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+|\.\d+[eE][+-]?\d+)")
_WORDS: dict[str, Scalar] = {"true": True, "false": False, "null": None, "none": None}
_SPECIAL = set(",[]='\"")


def parse_overrides(
    body: str, *, context: str | None = None, what: str = "catalog name"
) -> dict[str, Scalar]:
    """Parse ``key=value,key=value`` (the part between the brackets).

    ``context`` is the whole text the brackets belong to and ``what`` names it in an error
    (``catalog name 'judges.x[...]'``, ``model spec 'openai:x[...]'``); a credential in it
    is shown as ``***``.

    >>> parse_overrides("a=1, b = two words ,c='x,y',d=\\"it's\\",e=none")
    {'a': 1, 'b': 'two words', 'c': 'x,y', 'd': "it's", 'e': None}
    >>> parse_overrides("temperature")
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: overrides 'temperature': 'temperature' at column 1 has no '=value'
    """
    where = context if context is not None else body
    label = f"{what} {scrub(where)!r}" if context is not None else f"overrides {scrub(where)!r}"
    out: dict[str, Scalar] = {}
    i, n = 0, len(body)
    if not body.strip():
        return out
    while True:
        start = i
        while i < n and body[i] not in "=,":
            i += 1
        key = body[start:i].strip()
        col = start + 1
        if i >= n or body[i] == ",":
            shown = key or body[start:i]
            raise ConfigError(f"{label}: {shown!r} at column {col} has no '=value'")
        if not _KEY.fullmatch(key):
            raise ConfigError(
                f"{label}: {key!r} at column {col} is not a key (letters, digits, '_', "
                "dots between parts)"
            )
        if key in out:
            raise ConfigError(f"{label}: key {key!r} is given twice")
        i += 1  # past '='
        value, i = _read_value(body, i, key, label)
        out[key] = value
        while i < n and body[i] == " ":
            i += 1
        if i >= n:
            return out
        if body[i] != ",":
            raise ConfigError(
                f"{label}: unexpected {body[i]!r} at column {i + 1} after the value of {key!r} "
                "(quote values that hold , [ ] = or quotes)"
            )
        i += 1
        if not body[i:].strip():
            raise ConfigError(f"{label}: a trailing ',' with no key after it")


def _read_value(body: str, i: int, key: str, label: str) -> tuple[Scalar, int]:
    n = len(body)
    while i < n and body[i] == " ":
        i += 1
    if i < n and body[i] in "'\"":
        quote, start = body[i], i
        i += 1
        chars: list[str] = []
        while i < n and body[i] != quote:
            if body[i] == "\\" and i + 1 < n:
                i += 1
            chars.append(body[i])
            i += 1
        if i >= n:
            raise ConfigError(
                f"{label}: the value of {key!r} opens a quote {quote} at column {start + 1} "
                "that is never closed"
            )
        return "".join(chars), i + 1
    start = i
    while i < n and body[i] not in _SPECIAL:
        i += 1
    raw = body[start:i].strip()
    if i < n and body[i] != ",":
        raise ConfigError(
            f"{label}: the value of {key!r} holds {body[i]!r} at column {i + 1}; quote it "
            f"({key}='...')"
        )
    if not raw:
        raise ConfigError(f"{label}: {key!r} has an empty value (write {key}='' for '')")
    return _scalar(raw), i


def read_scalar(raw: str) -> Scalar:
    """A value as an inline override reads it: ``true``/``false``/``null``, a whole or
    decimal number, else the text.

    >>> read_scalar("8192"), read_scalar("0.5"), read_scalar("True"), read_scalar("bf16")
    (8192, 0.5, True, 'bf16')
    """
    return _scalar(raw)


def _scalar(raw: str) -> Scalar:
    word = raw.lower()
    if word in _WORDS:
        return _WORDS[word]
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw


def format_overrides(overrides: Mapping[str, Any]) -> str:
    """The inline text for ``overrides`` that :func:`parse_overrides` reads back."""
    if not overrides:
        return ""
    parts = []
    for key, value in overrides.items():
        if not _KEY.fullmatch(key):
            raise ConfigError(f"override key {key!r} is not a key")
        parts.append(f"{key}={_format_value(value)}")
    return "[" + ",".join(parts) + "]"


def _format_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"override value {value!r}: numbers must be finite")
        return repr(value)
    if isinstance(value, str):
        bare = value and value == value.strip() and not (_SPECIAL & set(value))
        if bare and isinstance(_scalar(value), str):
            return value
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        return f"'{escaped}'"
    raise ConfigError(f"override value {value!r}: only strings, numbers, booleans and null")
