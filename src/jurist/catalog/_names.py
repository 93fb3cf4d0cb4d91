"""Catalog names and the inline override grammar (read by :mod:`jurist._inline`).

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

import re
from pathlib import PurePosixPath

from jurist._inline import Scalar, format_overrides, parse_overrides, read_scalar
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

#: The first part of a catalog name, and the entry kinds each section may hold
#: (``judges``: every judge kind, :func:`jurist.catalog._entries.section_kinds`).
SECTIONS: dict[str, tuple[str, ...]] = {
    "judges": (),
    "templates": ("template",),
    "rubrics": ("rubric",),
}

_PART = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME = re.compile(rf"{_PART}(?:\.{_PART})+")


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
