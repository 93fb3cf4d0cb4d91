"""Read rubric files: every error names the file, the line (YAML), the criterion and the field.

Accepted shapes (YAML or JSON):

- a list of criteria;
- a mapping with ``criteria`` (a list) and/or ``sections`` (a list of ``{name, criteria}``),
  plus optional ``guidelines`` and ``name``; ``rubric`` may wrap either of the above.

A criterion has ``requirement`` (required), ``name``, ``weight`` (default 10; negative for an
error criterion), ``options`` (a list of ``{label, value, na}``: multi-choice), ``scale_type``
(``ordinal`` or ``nominal``) and ``aggregation``. Any other key is an error.

This module builds the parts of a rubric (:class:`RubricFields`); :meth:`jurist.Rubric.from_dict`
makes the rubric of them, so the dependency points one way (``_rubric`` imports ``_loader``).

>>> rubric_fields([{"requirement": "x", "wieght": 2}], "r.yaml")
Traceback (most recent call last):
...
jurist.errors.ConfigError: r.yaml: criterion #1: unknown key 'wieght' (known keys: ...)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import ValidationError

from jurist._files import read_utf8
from jurist.errors import ConfigError
from jurist.judges.rubric._criteria import Criterion, Option

__all__ = ["RubricFields", "load_yaml", "rubric_fields"]

_TOP_KEYS = ("name", "guidelines", "criteria", "sections", "rubric")
_SECTION_KEYS = ("name", "criteria", "description")
_CRITERION_KEYS = tuple(k for k in Criterion.model_fields if k != "section")
_OPTION_KEYS = tuple(Option.model_fields)


class _LineDict(dict[str, Any]):
    """A mapping read from YAML that remembers the line it started on (1-based)."""

    line: int = 0


class _LineLoader(yaml.SafeLoader):  # type: ignore[misc]
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    mapping = _LineDict(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; mappings remember their line for error messages."""
    text = read_utf8(path, what="the rubric file")
    try:
        return yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from e


def _where(source: str, node: Any) -> str:
    line = getattr(node, "line", 0)
    return f"{source}:{line}" if line else source


def _check_keys(node: dict[str, Any], known: tuple[str, ...], prefix: str) -> None:
    for key in node:
        if key not in known:
            raise ConfigError(f"{prefix}unknown key {key!r} (known keys: {', '.join(known)})")


def _flatten(data: Any, source: str) -> tuple[list[tuple[Any, str | None]], dict[str, Any]]:
    """The criteria entries with their section, and the rubric-level fields."""
    top: dict[str, Any] = {}
    if isinstance(data, dict) and "rubric" in data:
        _check_keys(data, _TOP_KEYS, f"{_where(source, data)}: ")
        top = {k: data[k] for k in ("name", "guidelines") if k in data}
        inner = data["rubric"]
        if isinstance(inner, dict):
            nested, inner_top = _flatten(inner, source)
            for key, value in inner_top.items():
                if key in top:
                    raise ConfigError(f"{_where(source, data)}: {key!r} given twice")
                top[key] = value
            return nested, top
        data = inner
    entries: list[tuple[Any, str | None]] = []
    if isinstance(data, list):
        blocks: list[Any] = data
    elif isinstance(data, dict):
        _check_keys(data, _TOP_KEYS, f"{_where(source, data)}: ")
        top.update({k: data[k] for k in ("name", "guidelines") if k in data})
        if "criteria" not in data and "sections" not in data:
            raise ConfigError(f"{_where(source, data)}: a rubric needs 'criteria' or 'sections'")
        blocks = []
        for key in ("sections", "criteria"):
            if key in data:
                if not isinstance(data[key], list):
                    raise ConfigError(
                        f"{_where(source, data)}: {key!r} must be a list, got "
                        f"{type(data[key]).__name__}"
                    )
                blocks.extend(data[key])
    else:
        raise ConfigError(
            f"{source}: a rubric is a list of criteria or a mapping with 'criteria', got "
            f"{type(data).__name__}"
        )
    for block in blocks:
        if isinstance(block, dict) and "criteria" in block and "requirement" not in block:
            label = block.get("name")
            _check_keys(block, _SECTION_KEYS, f"{_where(source, block)}: section {label!r}: ")
            inner_list = block["criteria"]
            if not isinstance(inner_list, list):
                raise ConfigError(
                    f"{_where(source, block)}: section {label!r}: 'criteria' must be a list"
                )
            entries.extend((c, None if label is None else str(label)) for c in inner_list)
        else:
            entries.append((block, None))
    if not entries:
        raise ConfigError(f"{source}: the rubric has no criteria")
    return entries, top


def _field_path(loc: tuple[int | str, ...], message: str) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            if parts:
                parts[-1] += f"[{part}]"
        else:
            parts.append(part)
    if parts and parts[-1].startswith("options[") and message.startswith(("value ", "option ")):
        parts.append("value")
    if not parts:  # a check across fields: name the field it is about
        parts.append("aggregation" if "aggregation" in message else "options")
    return ".".join(parts)


def _criterion(entry: Any, index: int, section: str | None, source: str) -> Criterion:
    if not isinstance(entry, dict):
        raise ConfigError(
            f"{source}: criterion #{index + 1}: expected a mapping, got {type(entry).__name__}"
        )
    label = f"criterion {entry['name']!r}" if entry.get("name") else f"criterion #{index + 1}"
    prefix = f"{_where(source, entry)}: {label}: "
    _check_keys(entry, _CRITERION_KEYS, prefix)
    options = entry.get("options")
    if isinstance(options, list):
        for j, option in enumerate(options):
            if isinstance(option, dict):
                _check_keys(option, _OPTION_KEYS, f"{prefix}field 'options[{j}]': ")
    if "requirement" not in entry:
        raise ConfigError(f"{prefix}field 'requirement' is missing")
    try:
        return Criterion.model_validate({**entry, "section": section})
    except ValidationError as e:
        first = e.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        field = _field_path(tuple(first["loc"]), message)
        raise ConfigError(f"{prefix}field {field!r}: {message}") from None


class RubricFields(NamedTuple):
    """A rubric's checked fields, read from a file: what :class:`~jurist.Rubric` is built of."""

    criteria: tuple[Criterion, ...]
    guidelines: str | None
    name: str | None


def rubric_fields(data: Any, source: str) -> RubricFields:
    """Check parsed YAML/JSON data and return the fields of a :class:`~jurist.Rubric`.

    Every error names ``source``, the line (YAML), the criterion and the field.
    """
    entries, top = _flatten(data, source)
    criteria = [_criterion(entry, i, section, source) for i, (entry, section) in enumerate(entries)]
    seen: dict[str, int] = {}
    for i, c in enumerate(criteria):
        if c.name is None:
            continue
        if c.name in seen:
            raise ConfigError(
                f"{_where(source, entries[i][0])}: criterion {c.name!r}: field 'name': "
                f"duplicate name (criterion #{seen[c.name] + 1} has it too)"
            )
        seen[c.name] = i
    guidelines = top.get("guidelines")
    if guidelines is not None and not isinstance(guidelines, str):
        raise ConfigError(f"{source}: 'guidelines' must be text, got {type(guidelines).__name__}")
    if isinstance(guidelines, str) and not guidelines.strip():
        guidelines = None
    name = top.get("name")
    return RubricFields(tuple(criteria), guidelines, None if name is None else str(name))
