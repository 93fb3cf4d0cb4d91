"""The catalog's entry files: the schema of each kind of entry.

Every entry is a YAML mapping with a ``kind`` and a one-line ``description``; the other
keys depend on the kind (unknown keys are errors, so a typo never goes unnoticed). The
catalog knows kinds, not options: a judge kind's keys are its declared options
(:mod:`jurist.judges._declare`), so the schema of ``judge``, ``pairwise_judge``,
``panel``, ``cascade``, ``rubric_judge`` and ``calibrated_judge`` entries is derived from
the judge kind's own declaration (the keys and their defaults: ``docs/catalog.md``).
Objects inside an entry are written as their codec says: a model as ``model``
(``provider:name``) and ``model_options``, a template by name, as a catalog name
``templates.x`` or inline, member judges as catalog names or inline entries. Two kinds
are not judges:

- ``template``: ``template`` (the YAML template format of :func:`jurist.load_template`,
  with ``messages``, or a full dump of a :class:`~jurist.Template`);
- ``rubric``: ``rubric`` (the format of :meth:`jurist.Rubric.from_dict`).

``judge`` and ``calibrated_judge`` entries saved by ``jurist align`` also keep
``alignment``: the record of the alignment; it is not used to build the judge.

>>> entry_model("judge").model_validate({"kind": "judge", "template": "likert"}).temperature
0.0
>>> sorted(entry_model("panel").model_fields)[:3]
['aggregation', 'concurrency', 'description']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from jurist.catalog._names import SECTIONS
from jurist.errors import ConfigError
from jurist.judges._declare import Kind
from jurist.judges._declare import entry_model as judge_entry_model
from jurist.judges._declare import judge_kinds as registered_kinds

__all__ = [
    "KINDS",
    "RubricEntry",
    "TemplateEntry",
    "entry_model",
    "judge_kinds",
    "section_kinds",
    "section_of",
]


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""


class TemplateEntry(_Base):
    """A prompt template."""

    kind: Literal["template"] = "template"
    template: dict[str, Any]


class RubricEntry(_Base):
    """A rubric: its criteria (and sections, guidelines)."""

    kind: Literal["rubric"] = "rubric"
    rubric: dict[str, Any] | list[Any]


OTHER_KINDS: dict[str, type[BaseModel]] = {"template": TemplateEntry, "rubric": RubricEntry}
"""The kinds of entry that are not judges."""


def judge_kinds() -> dict[str, Kind]:
    """Every judge kind the catalog stores: those registered by the packages that declare
    judge kinds (imported here, so that each has registered itself)."""
    import jurist.judges
    import jurist.trust  # noqa: F401  (its kinds register themselves)

    return registered_kinds()


def section_kinds(section: str) -> tuple[str, ...]:
    """The kinds of entry catalog section ``section`` holds (``judges``: every judge kind)."""
    return tuple(judge_kinds()) if section == "judges" else SECTIONS[section]


def section_of(kind: str) -> str:
    """The section an entry of ``kind`` is stored under."""
    return next(s for s in SECTIONS if kind in section_kinds(s))


def all_kinds() -> list[str]:
    """Every kind of entry: the judge kinds, then ``template`` and ``rubric``."""
    return [*judge_kinds(), *OTHER_KINDS]


class _Kinds(Mapping[str, type[BaseModel]]):
    """``KINDS``: kind -> entry schema, read when asked (the judge kinds register on import)."""

    def __getitem__(self, kind: str) -> type[BaseModel]:
        return entry_model(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(all_kinds())

    def __len__(self) -> int:
        return len(all_kinds())


KINDS: Mapping[str, type[BaseModel]] = _Kinds()


def entry_model(kind: Any) -> type[BaseModel]:
    """The entry schema of ``kind``, or a ConfigError listing the kinds."""
    if isinstance(kind, str):
        if kind in OTHER_KINDS:
            return OTHER_KINDS[kind]
        if kind in judge_kinds():
            return judge_entry_model(kind)
    raise ConfigError(f"kind {kind!r} is not one of {', '.join(all_kinds())}")
