"""Turning a judge, template or rubric object back into a catalog entry (for ``add``).

A judge's entry is derived from its kind's declaration
(:func:`jurist.judges._declare.entry_of`): its kind and the declared options that differ
from the defaults, objects written by their codecs (the model's ``provider:name`` with the
backend options that rebuild it, :meth:`~jurist.models.Model.rebuild_options`, never a
secret: API keys stay in the environment; the template by name when it is the registered
one and inline otherwise; member judges as entries of their own). A template or a rubric
is written whole.

>>> import jurist
>>> judge = jurist.LLMJudge("mock:j", template="likert", temperature=0.3)
>>> d = entry_of(judge)
>>> d["kind"], d["model"], d["template"], d["temperature"]
('judge', 'mock:j', 'likert', 0.3)
"""

from __future__ import annotations

from typing import Any

from jurist.catalog._entries import all_kinds, judge_kinds
from jurist.errors import ConfigError

__all__ = ["entry_of", "kind_of"]


def kind_of(obj: Any) -> str:
    """The entry kind ``obj`` is stored as."""
    from jurist.judges._declare import kind_of as judge_kind
    from jurist.judges.rubric import Rubric
    from jurist.templates import Template

    judge_kinds()  # every kind registered
    kind = judge_kind(obj)
    if kind is not None:
        return kind.name
    if isinstance(obj, Template):
        return "template"
    if isinstance(obj, Rubric):
        return "rubric"
    classes = ", ".join(k.judge.__name__ for k in judge_kinds().values())
    raise ConfigError(
        f"cannot store a {type(obj).__name__} in the catalog: it takes a judge ({classes}), "
        f"a Template or a Rubric (the kinds: {', '.join(all_kinds())})"
    )


def entry_of(obj: Any, description: str | None = None) -> dict[str, Any]:
    """The catalog entry (a JSON/YAML-able mapping) that rebuilds ``obj``."""
    from jurist.judges._declare import entry_of as judge_entry

    kind = kind_of(obj)
    out: dict[str, Any] = {"kind": kind}
    if description is not None:
        out["description"] = description
    if kind == "template":
        out["template"] = obj.model_dump(mode="json")
    elif kind == "rubric":
        out["rubric"] = obj.to_dict()
    else:
        out.update(judge_entry(obj))
    return out
