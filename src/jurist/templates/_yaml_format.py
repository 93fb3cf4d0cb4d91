"""The YAML template format: read a template file and check every key of it.

:func:`template_kwargs` turns the mapping a file holds into the keyword arguments of
:class:`~jurist.templates.Template`, and :func:`template_error` names the file, line and
key of an error building it. :meth:`Template.from_yaml <jurist.templates.Template.from_yaml>`
and :meth:`~jurist.templates.Template.from_dict` build the template; this module imports
nothing of it, so the dependency points one way. The format is described in
:mod:`jurist.templates._yaml`.

>>> template_kwargs({"messages": [{"role": "user", "content": "{response}"}]}, source="t.yaml")
Traceback (most recent call last):
...
jurist.errors.ConfigError: t.yaml: fields: field 'prompt' has no {prompt} in the item
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from jurist._files import read_utf8
from jurist.errors import ConfigError
from jurist.templates._forms import VerdictForm
from jurist.templates._parse import CONFLICT_RULES
from jurist.templates._parse_claims import ClaimsForm
from jurist.templates._scale import Label, LabelScale, NumericScale
from jurist.types import Message

__all__ = ["read_template_file", "template_error", "template_kwargs"]

_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOP = (
    "name", "description", "kind", "fields", "optional_fields", "sections", "messages",
    "scale", "parser", "conflict", "output", "output_explained", "max_tokens",
    "max_tokens_explained",
)  # fmt: skip
_PARSER = {
    "form": ("type", "open", "close", "bare"),
    "labels": ("type", "open", "close", "bare"),
    "regex": ("type", "pattern"),
    "json": ("type", "key"),
    "claims": ("type", "claim_key", "verdict_key", "none_phrase"),
}
_RANGE = ("low", "high", "integer", "origin")
_SCALES = ("labels", "range")


class _Where:
    """Names the file and, where known, the line of a key in error messages."""

    def __init__(self, path: str, lines: dict[str, int]) -> None:
        self.path = path
        self.lines = lines

    def error(self, key: str, message: str) -> ConfigError:
        top = key.split(".", 1)[0].split("[", 1)[0]
        line = self.lines.get(top)
        at = f"{self.path}:{line}" if line else self.path
        return ConfigError(f"{at}: {key}: {message}")


def read_template_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """A template file's mapping and the line of each top-level key (errors name the file
    and line)."""
    import yaml

    p = Path(path)
    text = read_utf8(p, what="the template file")
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"{p}:{mark.line + 1}" if mark is not None else str(p)
        raise ConfigError(f"{at}: not valid YAML: {getattr(e, 'problem', e)}") from None
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for k, _v in node.value:
            lines[str(k.value)] = k.start_mark.line + 1
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a template file must be a mapping of keys to values")
    return data, lines


def template_kwargs(
    data: dict[str, Any],
    *,
    source: str = "<template>",
    default_name: str = "custom",
    lines: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Check the mapping a template file holds; the keyword arguments of
    :class:`~jurist.templates.Template` (errors name the file, line and key)."""
    where = _Where(source, dict(lines or {}))
    unknown = sorted(str(k) for k in data if k not in _TOP)
    if unknown:
        raise where.error(unknown[0], f"unknown key (known keys: {', '.join(_TOP)})")
    fields = _names(data.get("fields", ("prompt", "response")), "fields", where)
    optional = _names(data.get("optional_fields", ()), "optional_fields", where)
    sections = _sections(data.get("sections", {}), optional, where)
    system, preamble, item = _messages(data.get("messages"), where)
    _check_placeholders(item, sections, fields, optional, where)
    scale = _scale(data.get("scale"), where)
    form, json_key = _parser(data.get("parser", {}), scale, where)
    claims = _claims(data.get("parser", {}), scale, where)
    if claims is not None:  # the labels are each claim's; the score is their mean, 0-1
        scale, json_key = NumericScale(low=0.0, high=1.0), "claims"
    kind = data.get("kind", "single")
    if kind not in ("single", "pairwise"):
        raise where.error("kind", f"must be 'single' or 'pairwise', got {kind!r}")
    conflict = data.get("conflict", "fail")
    if conflict not in CONFLICT_RULES:
        raise where.error("conflict", f"must be one of {', '.join(CONFLICT_RULES)}: {conflict!r}")
    return dict(
        name=str(data.get("name") or default_name),
        description=str(data.get("description", "")),
        kind=kind,
        instructions=system,
        item=item,
        fields=fields,
        optional_fields=optional,
        sections=sections,
        preamble=preamble,
        scale=scale,
        form=form,
        verdict_key=(form.key if form is not None else None) or "Score",
        json_key=json_key or "verdict",
        json_only=json_key is not None and claims is None,
        claims=claims,
        conflict=conflict,
        output=str(data.get("output", "")),
        output_explained=str(data.get("output_explained", "")),
        max_tokens=data.get("max_tokens", 512),
        max_tokens_explained=data.get("max_tokens_explained", data.get("max_tokens", 512)),
        meta={"source": source},
    )


def template_error(
    e: ValidationError, source: str, lines: Mapping[str, int] | None = None
) -> ConfigError:
    """A :class:`~jurist.errors.ConfigError` naming the file, line and key that ``e``, an
    error building the template of :func:`template_kwargs`, is about."""
    where = _Where(source, dict(lines or {}))
    err = e.errors()[0]
    key = ".".join(str(x) for x in err["loc"]) or "template"
    return where.error(key, str(err["msg"]))


def _names(value: Any, key: str, where: _Where) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(
        isinstance(v, str) and _FIELD.fullmatch("{" + v + "}") for v in value
    ):
        raise where.error(key, f"must be a list of field names, got {value!r}")
    return tuple(value)


def _sections(value: Any, optional: tuple[str, ...], where: _Where) -> dict[str, str]:
    if not isinstance(value, dict):
        raise where.error("sections", "must map optional field names to text")
    for name, text in value.items():
        if name not in optional:
            raise where.error(f"sections.{name}", "is not one of optional_fields")
        if not isinstance(text, str) or "{" + name + "}" not in text:
            raise where.error(f"sections.{name}", f"must be text containing {{{name}}}")
    return {str(k): str(v) for k, v in value.items()}


def _messages(value: Any, where: _Where) -> tuple[str, tuple[Message, ...], str]:
    if not isinstance(value, list) or not value:
        raise where.error("messages", "must be a non-empty list of {role, content}")
    msgs: list[Message] = []
    for i, m in enumerate(value):
        key = f"messages[{i}]"
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise where.error(key, "must have exactly the keys 'role' and 'content'")
        if m["role"] not in ("system", "user", "assistant"):
            raise where.error(f"{key}.role", f"must be system, user or assistant: {m['role']!r}")
        if not isinstance(m["content"], str):
            raise where.error(f"{key}.content", "must be text")
        msgs.append(Message(role=m["role"], content=m["content"]))
    if msgs[-1].role != "user":
        raise where.error(f"messages[{len(msgs) - 1}]", "the last message (the item) must be user")
    system = msgs[0].content if msgs[0].role == "system" else ""
    start = 1 if msgs[0].role == "system" else 0
    for i, m in enumerate(msgs[:-1]):
        if _FIELD.search(m.content):
            raise where.error(
                f"messages[{i}].content",
                "field placeholders belong in the last message only (static text comes first)",
            )
        if i > 0 and m.role == "system":
            raise where.error(f"messages[{i}].role", "only the first message may be system")
    return system, tuple(msgs[start:-1]), msgs[-1].content


def _check_placeholders(
    item: str,
    sections: dict[str, str],
    fields: tuple[str, ...],
    optional: tuple[str, ...],
    where: _Where,
) -> None:
    used = set(_FIELD.findall(item))
    declared = set(fields) | set(optional)
    undeclared = sorted(used - declared)
    if undeclared:
        raise where.error(
            "messages",
            f"placeholder {{{undeclared[0]}}} is not declared in fields or optional_fields",
        )
    unused = [f for f in (*fields, *optional) if f not in used]
    if unused:
        raise where.error("fields", f"field {unused[0]!r} has no {{{unused[0]}}} in the item")


def _scale(value: Any, where: _Where) -> LabelScale | NumericScale:
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _SCALES:
        raise where.error("scale", "must have exactly one of 'labels' or 'range'")
    try:
        if "range" in value:
            spec = value["range"]
            if not isinstance(spec, dict):
                raise where.error("scale.range", "must be a mapping {low, high, integer, origin}")
            bad = sorted(str(k) for k in spec if k not in _RANGE)
            if bad:
                raise where.error(f"scale.range.{bad[0]}", f"unknown key (known: {_RANGE})")
            return NumericScale(**spec)
        return LabelScale(labels=_labels(value["labels"], where))
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise where.error("scale" + (f".{loc}" if loc else ""), str(err["msg"])) from None


def _labels(spec: Any, where: _Where) -> tuple[Label, ...]:
    if isinstance(spec, dict):
        out = []
        for name, score in spec.items():
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise where.error(f"scale.labels.{name}", f"score must be a number: {score!r}")
            out.append(_label(f"scale.labels.{name}", where, name=str(name), score=score))
        return tuple(out)
    if isinstance(spec, list):
        labels = []
        for i, entry in enumerate(spec):
            if (
                not isinstance(entry, dict)
                or not {"name", "score"} <= set(entry)
                or not set(entry) <= {"name", "score", "aliases"}
            ):
                raise where.error(f"scale.labels[{i}]", "must be {name, score, aliases}")
            labels.append(_label(f"scale.labels[{i}]", where, **entry))
        return tuple(labels)
    raise where.error("scale.labels", "must be a mapping name -> score or a list of labels")


def _label(key: str, where: _Where, **spec: Any) -> Label:
    try:
        return Label(**spec)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise where.error(f"{key}.{loc}" if loc else key, str(err["msg"])) from None


def _claims(value: Any, scale: LabelScale | NumericScale, where: _Where) -> ClaimsForm | None:
    """The claims form of a ``type: claims`` parser (its labels: the scale's), else None."""
    if not isinstance(value, dict) or value.get("type") != "claims":
        return None
    if not isinstance(scale, LabelScale):
        raise where.error("parser.type", "a claims parser needs a scale with labels (per claim)")
    keys = {k: value[k] for k in ("claim_key", "verdict_key", "none_phrase") if k in value}
    for key, text in keys.items():
        if not isinstance(text, str) or not text.strip():
            raise where.error(f"parser.{key}", "must be a non-empty text")
    return ClaimsForm(labels=scale, **keys)


def _parser(
    value: Any, scale: LabelScale | NumericScale, where: _Where
) -> tuple[VerdictForm | None, str | None]:
    if not isinstance(value, dict):
        raise where.error("parser", "must be a mapping with a 'type'")
    kind = value.get("type", "form")
    if kind not in _PARSER:
        raise where.error("parser.type", f"must be one of {', '.join(_PARSER)}: {kind!r}")
    bad = sorted(str(k) for k in value if k not in _PARSER[kind])
    if bad:
        raise where.error(f"parser.{bad[0]}", f"is not a key of a {kind} parser")
    if kind == "claims":
        return None, None  # read by _claims
    if kind == "json":
        key = value.get("key", "verdict")
        if not isinstance(key, str) or not key:
            raise where.error("parser.key", "must be a non-empty text")
        return None, key
    if kind == "regex":
        pattern = value.get("pattern")
        if not isinstance(pattern, str):
            raise where.error("parser.pattern", "a regex parser needs a pattern (one group)")
        try:
            return VerdictForm(regex=pattern, bare=False), None
        except ValidationError as e:
            raise where.error("parser.pattern", str(e.errors()[0]["msg"])) from None
    if kind == "labels" and not isinstance(scale, LabelScale):
        raise where.error("parser.type", "a labels parser needs a scale with labels")
    try:
        return VerdictForm(
            open=value.get("open", "Score: "),
            close=value.get("close", ""),
            bare=value.get("bare", True),
        ), None
    except ValidationError as e:
        err = e.errors()[0]
        raise where.error(f"parser.{err['loc'][0]}", str(err["msg"])) from None
