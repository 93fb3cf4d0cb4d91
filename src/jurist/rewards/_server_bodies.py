"""Reading the reward server's request bodies: their bounds, fields, labels, chat prompts.

Helpers of :mod:`jurist.rewards._server`; :class:`BadBody` is a body that is not the
documented shape (HTTP 400), naming the field and index.

Every body is read under three explicit bounds, each answered before anything is judged:

- :data:`MAX_BODY_BYTES` (256 MiB): a longer body is not read (HTTP 413);
- :data:`MAX_DEPTH` (64 levels of arrays and objects): a body nested deeper is HTTP 400,
  checked without recursion (:func:`jurist._json.loads`), never a ``RecursionError``;
- :data:`MAX_SAMPLES` (100,000 samples in one request: ``query`` entries, ``items``, or
  the responses of all ``groups``): more is HTTP 400.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jurist.errors import JuristError

__all__ = ["ABSENT", "MAX_BODY_BYTES", "MAX_DEPTH", "MAX_SAMPLES", "BadBody"]

MAX_BODY_BYTES = 256 * 1024 * 1024
"""The largest request body read (a big OpenRLHF batch of long rollouts)."""
MAX_DEPTH = 64
"""The deepest nesting of arrays and objects in a body; the documented bodies are at
most 4 deep (``{"groups": [{"responses": [...]}]}``)."""
MAX_SAMPLES = 100_000
"""The most samples one request may ask to judge."""

ABSENT = object()
"""A field that is not in the body (apart from one that is ``null``)."""


class BadBody(JuristError):
    """A request body the server cannot judge; the message names the field and index."""


def _count(field: str, n: int) -> None:
    """Refuse a request of more than :data:`MAX_SAMPLES` samples (``n`` in ``field``)."""
    if n > MAX_SAMPLES:
        raise BadBody(
            f"{field}: {n} samples in one request; the server judges at most "
            f"{MAX_SAMPLES:,} per request (split the batch)"
        )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    names.update({list: "a list", dict: "an object"})
    return names.get(type(value), f"a {type(value).__name__}")


def _last_user(messages: list[Any]) -> str | None:
    """The content of the last ``user`` message of chat messages (a slime prompt)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str | None):
            raise BadBody(f"prompt[{i}]: expected a {{'role', 'content'}} message, got {_kind(m)}")
        if m.get("role") == "user":
            content = m.get("content")
            return content if isinstance(content, str) else None
    return None


def _strings(
    body: Mapping[str, Any], field: str, n: int | None, *, required: bool = False
) -> list[str | None] | None:
    value = body.get(field)
    if value is None:
        if required:
            raise BadBody(f"{field}: missing; expected a list of strings")
        return None
    if not isinstance(value, list):
        raise BadBody(f"{field}: expected a list of strings, got {_kind(value)}")
    if n is None:
        _count(field, len(value))
    elif len(value) != n:
        raise BadBody(f"{field}: has {len(value)} items but query has {n}")
    for i, entry in enumerate(value):
        ok = isinstance(entry, str) or (entry is None and not required)
        if not ok:
            raise BadBody(f"{field}[{i}]: expected a string, got {_kind(entry)}")
    return list(value)


def _labels(body: Mapping[str, Any], field: str, n: int) -> list[Any] | None:
    """The labels list as sent; each label's value is checked per sample (see :func:`_value`)."""
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadBody(f"{field}: expected a list, got {_kind(value)}")
    if len(value) != n:
        raise BadBody(f"{field}: has {len(value)} items but query has {n}")
    return list(value)


def _value(value: Any) -> tuple[str | None, str, bool]:
    """A prompt or reference as the judge takes it: ``(text, why, invalid)``.

    ``text`` is None when there is no usable value; ``why`` says what was found then
    (``"is missing"``, ``"is null"``, ``"is an empty string"``, ``"is NaN (a missing
    value)"``, ...), and ``invalid`` is True when a value was given that no template can
    take (a list, an object, a boolean, an infinite number). A number is its text.

    >>> _value(42), _value("")
    (('42', '', False), (None, 'is an empty string', False))
    >>> _value(float("nan"))
    (None, 'is NaN (a missing value)', False)
    >>> _value([1])
    (None, 'is a list, not a string or a number', True)
    """
    if value is ABSENT:
        return None, "is missing", False
    if value is None:
        return None, "is null", False
    if isinstance(value, str):
        return (value, "", False) if value else (None, "is an empty string", False)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return None, "is NaN (a missing value)", False
        if isinstance(value, float) and math.isinf(value):
            return None, f"is {value:g}, not a finite number", True
        return str(value), "", False
    return None, f"is {_kind(value)}, not a string or a number", True
