"""OpenAI grader templating: ``{{ namespace.path }}`` over the ``item`` and ``sample``
namespaces, with JSON-path-like access (``a.b``, ``a[0]``, ``a["key"]``).

A string value is put in as it is; any other value as compact JSON (``1.0``, ``{"a": 1}``),
as the Evals templating did. A variable that is missing is an error naming it.

>>> ns = {"item": {"reference_answer": "Paris", "n": 1.0},
...       "sample": {"output_tools": [{"function": {"name": "get_x"}}]}}
>>> render("Reference: {{ item.reference_answer }}, n={{item.n}}", ns)
'Reference: Paris, n=1.0'
>>> render("{{sample.output_tools[0].function.name}}", ns)
'get_x'
>>> render("{{ item.missing }}", ns)
Traceback (most recent call last):
...
jurist.errors.DataError: template {{ item.missing }}: item has no 'missing'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jurist.errors import ConfigError, DataError

__all__ = ["NAMESPACES", "check_template", "lookup", "render"]

NAMESPACES = ("item", "sample")
_VAR = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_STEP = re.compile(r"""\.?([A-Za-z_][A-Za-z0-9_\-]*)|\[\s*(-?\d+)\s*\]|\[\s*(['"])(.*?)\3\s*\]""")


def _steps(path: str) -> list[str | int]:
    """``item.a[0]["b c"]`` as ``["item", "a", 0, "b c"]``; an error for any other shape."""
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None or (pos == 0 and m.group(0).startswith((".", "["))):
            raise ConfigError(
                f"template {{{{ {path} }}}}: cannot read the path at {path[pos:]!r} "
                '(expected namespace.name, .name, [index] or ["key"])'
            )
        name, index, _, key = m.groups()
        steps.append(name if name is not None else int(index) if index is not None else key)
        pos = m.end()
    if not steps or steps[0] not in NAMESPACES:
        raise ConfigError(
            f"template {{{{ {path} }}}}: the namespace must be one of {', '.join(NAMESPACES)}"
        )
    return steps


def check_template(text: str) -> None:
    """Raise :class:`~jurist.errors.ConfigError` for a malformed variable in ``text``."""
    for m in _VAR.finditer(text):
        _steps(m.group(1))


def lookup(path: str, namespaces: Mapping[str, Any]) -> Any:
    """The value at ``path`` (``item.a[0]``) in ``namespaces``."""
    steps = _steps(path)
    value: Any = namespaces
    walked = ""
    for step in steps:
        if isinstance(step, int):
            ok = isinstance(value, Sequence) and not isinstance(value, str)
            if not ok or not -len(value) <= step < len(value):
                raise DataError(f"template {{{{ {path} }}}}: {walked} has no [{step}]")
            value = value[step]
            walked += f"[{step}]"
        else:
            if not isinstance(value, Mapping) or step not in value:
                where = walked or "the namespaces"
                raise DataError(f"template {{{{ {path} }}}}: {where} has no {step!r}")
            value = value[step]
            walked += f".{step}" if walked else step
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def render(text: str, namespaces: Mapping[str, Any]) -> str:
    """``text`` with each ``{{ namespace.path }}`` replaced by its value."""
    return _VAR.sub(lambda m: _text(lookup(m.group(1), namespaces)), text)
