""":class:`JudgeSpec` and how a grader's ``judges=`` list becomes models with ids and weights.

>>> from jurist.models import MockModel
>>> [judge_id for _, _, judge_id in resolve_judges([MockModel("a"), (MockModel("a"), 2.0)])]
['mock:a', 'mock:a#2']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jurist.errors import ConfigError
from jurist.models import Model, get_model

__all__ = ["JudgeSpec", "resolve_judges"]


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of an ensemble: a model (object or ``"provider:name"``), its vote weight,
    an id (default: the model's spec), and optional sampling of its own."""

    model: Model | str | Any
    weight: float = 1.0
    judge_id: str | None = None
    temperature: float | None = None
    seed: int | None = None


def _as_spec(judge: Any) -> JudgeSpec:
    if isinstance(judge, JudgeSpec):
        return judge
    if isinstance(judge, tuple) and len(judge) == 2:
        return JudgeSpec(model=judge[0], weight=judge[1])
    return JudgeSpec(model=judge)


def resolve_judges(judges: Sequence[Any] | Any) -> list[tuple[Model, JudgeSpec, str]]:
    """Each judge as (model, spec, unique id); ids repeated by default get ``#2``, ``#3``.

    Judges are models, ``"provider:name"`` specs, ``(model, weight)`` pairs or
    :class:`JudgeSpec`; weights must be positive; an explicit id given twice is an error.
    """
    if isinstance(judges, str | Model | JudgeSpec | tuple) or not isinstance(judges, Sequence):
        judges = [judges]
    if not judges:
        raise ConfigError("a CriterionGrader needs at least one judge")
    resolved: list[tuple[Model, JudgeSpec, str]] = []
    used: set[str] = set()
    for spec in map(_as_spec, judges):
        weight = spec.weight
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ConfigError(f"judge weight must be a positive number, got {weight!r}")
        if not (math.isfinite(weight) and weight > 0):
            raise ConfigError(f"judge weight must be a positive number, got {weight!r}")
        model = get_model(spec.model)
        judge_id = spec.judge_id or model.spec
        if judge_id in used:
            if spec.judge_id is not None:
                raise ConfigError(f"judge_id {judge_id!r} is given to two judges")
            n = 2
            while f"{judge_id}#{n}" in used:
                n += 1
            judge_id = f"{judge_id}#{n}"
        used.add(judge_id)
        resolved.append((model, spec, judge_id))
    return resolved
