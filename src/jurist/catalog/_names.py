"""Catalog names and the inline override grammar.

A catalog name is a dotted path of identifiers whose first part is the section:
``judges.mt_bench.hf_qwen2_5_0_5b_instruct``, ``templates.helpful_yes_no``,
``rubrics.answer_quality``. Each part matches ``[A-Za-z_][A-Za-z0-9_]*``; the entry lives
in the file ``judges/mt_bench/hf_qwen2_5_0_5b_instruct.yaml`` under a catalog root.

A name may carry **inline overrides** in square brackets, ``name[key=value,...]``:

- *keys* are entry keys (``temperature``, ``max_tokens``, ``template``, ``model``) or
  dotted paths into a mapping-valued key (``model_options.base_url``,
  ``extra_body.top_k``); a key may appear once;
- *values*: ``true`` / ``false`` are booleans, ``null`` / ``none`` is ``None`` (these
  four words in any case), an
  integer (``64``, ``-1``) or a decimal (``0.2``, ``1e-3``, ``.5``) is a number,
  ``'...'`` or ``"..."`` is a string taken literally, except that a backslash escapes
  the next character (so quotes may hold ``,``, ``]``, ``=``, spaces and the other
  quote); anything else is a bare string with the spaces around it trimmed, and may not
  hold ``, [ ] = ' "``. A quoted ``'true'`` or ``'64'`` stays a string.
- there are no lists and no nested brackets; ``name[]`` is the name itself.

Every mistake is a :class:`~jurist.errors.ConfigError` that quotes the text and points at
the bad part.

>>> parse_name("judges.mt_bench.hf_qwen2_5_0_5b_instruct[temperature=0.2,max_tokens=64]")
('judges.mt_bench.hf_qwen2_5_0_5b_instruct', {'temperature': 0.2, 'max_tokens': 64})
>>> parse_name("judges.x[model_options.base_url='http://127.0.0.1:8000/v1',explanations=true]")
('judges.x', {'model_options.base_url': 'http://127.0.0.1:8000/v1', 'explanations': True})
>>> parse_name("judges.x[temperature=0.2")
Traceback (most recent call last):
...
jurist.errors.ConfigError: catalog name 'judges.x[temperature=0.2': the overrides are not closed ...
>>> format_overrides({"instructions": "Be strict, please", "max_tokens": 64})
"[instructions='Be strict, please',max_tokens=64]"
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from jurist.errors import ConfigError

__all__ = [
    "SECTIONS",
    "Scalar",
    "check_name",
    "format_overrides",
    "name_to_relpath",
    "parse_name",
    "parse_overrides",
    "read_scalar",
]

Scalar = str | int | float | bool | None

#: The first part of a catalog name, and the entry kinds each section may hold.
SECTIONS: dict[str, tuple[str, ...]] = {
    "judges": ("judge", "pairwise_judge", "panel", "rubric_judge"),
    "templates": ("template",),
    "rubrics": ("rubric",),
}

_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME = re.compile(rf"{_PART}(?:\.{_PART})+")
_KEY = re.compile(rf"{_PART}(?:\.{_PART})*")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+(?:\.\d*)?[eE][+-]?\d+|\.\d+[eE][+-]?\d+)")
_WORDS: dict[str, Scalar] = {"true": True, "false": False, "null": None, "none": None}
_SPECIAL = set(",[]='\"")


def check_name(name: str) -> str:
    """Check a bare catalog name (no overrides); returns it.

    >>> check_name("templates.helpful_yes_no")
    'templates.helpful_yes_no'
    >>> check_name("judges")
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: catalog name 'judges': a name is two or more dotted parts ...
    """
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"catalog name {name!r}: a name is two or more dotted parts of letters, digits "
            "and '_' (not starting with a digit), e.g. 'judges.mt_bench.hf_qwen2_5_0_5b_instruct'"
        )
    section = name.split(".", 1)[0]
    if section not in SECTIONS:
        raise ConfigError(
            f"catalog name {name!r}: the first part must be one of {', '.join(SECTIONS)}, "
            f"not {section!r}"
        )
    return name


def name_to_relpath(name: str) -> PurePosixPath:
    """The entry's file under a catalog root: ``a.b.c`` -> ``a/b/c.yaml``."""
    parts = check_name(name).split(".")
    return PurePosixPath(*parts[:-1], parts[-1] + ".yaml")


def parse_name(text: str) -> tuple[str, dict[str, Scalar]]:
    """Split ``name[key=value,...]`` into the name and its overrides (see the module doc)."""
    text = text.strip()
    if "[" not in text:
        if "]" in text:
            raise ConfigError(f"catalog name {text!r}: ']' without '['")
        return check_name(text), {}
    head, _, rest = text.partition("[")
    check_name(head.strip())
    if not rest.endswith("]"):
        raise ConfigError(f"catalog name {text!r}: the overrides are not closed with ']'")
    return head.strip(), parse_overrides(rest[:-1], context=text)


def parse_overrides(body: str, *, context: str | None = None) -> dict[str, Scalar]:
    """Parse ``key=value,key=value`` (the part between the brackets).

    >>> parse_overrides("a=1, b = two words ,c='x,y',d=\\"it's\\",e=none")
    {'a': 1, 'b': 'two words', 'c': 'x,y', 'd': "it's", 'e': None}
    >>> parse_overrides("temperature")
    Traceback (most recent call last):
    ...
    jurist.errors.ConfigError: overrides 'temperature': 'temperature' at column 1 has no '=value'
    """
    where = context if context is not None else body
    label = f"catalog name {where!r}" if context is not None else f"overrides {where!r}"
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
