"""Turning a catalog entry into a ready object: a judge, a template or a rubric.

Building never loads model weights or opens a connection: backends load lazily on their
first call, so ``get`` works offline and a missing model is reported by its backend at
the first call. Names inside an entry (a panel's judges, a judge's ``templates.x``, a
rubric judge's ``rubrics.x``) are resolved through the same catalog roots; a name that
refers back to itself is an error.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from jurist.catalog._entries import RubricEntry, TemplateEntry, entry_model, judge_kinds
from jurist.catalog._names import parse_name
from jurist.catalog._store import EntryFile, read_entry, validation_error
from jurist.errors import ConfigError, DataError
from jurist.judges._declare import build as build_judge

__all__ = ["build", "build_entry"]


def build(
    text: str,
    *,
    root: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    stack: tuple[str, ...] = (),
) -> Any:
    """The object for ``name[overrides]``; keyword ``overrides`` win over inline ones."""
    name, inline = parse_name(text)
    merged: dict[str, Any] = {**inline, **(overrides or {})}
    return build_entry(read_entry(name, root), merged, root=root, stack=stack)


def build_entry(
    entry: EntryFile,
    overrides: dict[str, Any] | None = None,
    *,
    root: str | Path | None = None,
    stack: tuple[str, ...] = (),
) -> Any:
    """Apply ``overrides`` to ``entry``, validate it, and build its object."""
    if entry.name in stack:
        chain = " -> ".join((*stack, entry.name))
        raise ConfigError(f"{entry.path}: catalog entries refer to each other in a loop: {chain}")
    stack = (*stack, entry.name)
    over = dict(overrides or {})
    kind = entry.data["kind"]
    model_obj = over.pop("model") if not isinstance(over.get("model"), str | None) else None
    data = dict(entry.data)
    if not isinstance(data.get("model"), str | None):
        # a model object kept in an in-memory entry (the Ray engine's); overrides win
        held = data.pop("model")
        model_obj = held if model_obj is None else model_obj
    judge_kind = judge_kinds().get(kind)
    if model_obj is not None and (judge_kind is None or not judge_kind.takes_model):
        raise ConfigError(f"{entry.name}: a {kind!r} entry has no model to replace")
    data = copy.deepcopy(data)
    _apply(data, over, entry)
    try:
        spec = entry_model(kind).model_validate(data)
    except ValidationError as e:
        raise validation_error(entry, e, over) from None
    try:
        if judge_kind is not None:
            return build_judge(kind, spec, _Context(entry, model_obj, root, stack))
        return _other(spec, entry, root, stack)
    except (ConfigError, DataError) as e:
        text = str(e)
        if str(entry.path) in text:
            raise
        raise type(e)(f"{entry.path}: {text}") from None


def _apply(data: dict[str, Any], overrides: dict[str, Any], entry: EntryFile) -> None:
    kind = entry.data["kind"]
    fields = [f for f in entry_model(kind).model_fields if f != "kind"]
    for key, value in overrides.items():
        parts = key.split(".")
        if parts[0] not in fields:
            raise ConfigError(
                f"{entry.name}[{key}=...]: {parts[0]!r} is not a key of a {kind!r} entry "
                f"(keys: {', '.join(fields)})"
            )
        node = data
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                inner = ".".join(parts[: i + 1])
                raise ConfigError(
                    f"{entry.name}[{key}=...]: {inner!r} is not a mapping, so {key!r} "
                    "cannot be set inside it"
                )
            node = child
        node[parts[-1]] = value


@dataclass(frozen=True)
class _Context:
    """What a judge kind's codecs ask the catalog while its entry is read back
    (:class:`jurist.judges._declare.LoadContext`)."""

    entry: EntryFile
    model: Any
    root: str | Path | None
    stack: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def folder(self) -> Path | None:
        return self.entry.path.parent

    def where(self, key: str) -> str:
        return self.entry.where(key)

    def resolve(self, name: str) -> Any:
        return build(name, root=self.root, stack=self.stack)

    def member(self, data: dict[str, Any], field: str, index: int | None) -> Any:
        entry_model(data["kind"])  # an unknown kind, said before anything else
        at = field if index is None else f"{field}[{index}]"
        inner = EntryFile(
            name=f"{self.entry.name}.{at}",
            path=self.entry.path,
            source=self.entry.source,
            data=data,
            lines={k: self.entry.lines.get(field, 0) for k in data},
        )
        return build_entry(inner, root=self.root, stack=self.stack)


def _other(spec: Any, entry: EntryFile, root: str | Path | None, stack: tuple[str, ...]) -> Any:
    """A template or a rubric (the kinds of entry that are not judges)."""
    if isinstance(spec, TemplateEntry):
        from jurist.judges._codecs import TemplateRef

        ctx = _Context(entry, None, root, stack)
        return TemplateRef().load("template", {"template": spec.template}, ctx)
    assert isinstance(spec, RubricEntry)
    from jurist.judges.rubric import Rubric

    return Rubric.from_dict(spec.rubric, source=f"{entry.where('rubric')}: rubric")
