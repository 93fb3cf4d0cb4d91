"""Deprecated: the package ``jurist.evaluate`` became four packages of one concept each.

``jurist.evaluate`` is the function (:func:`jurist.engines.evaluate`). The names this package
exported moved: engines and :func:`evaluate` to :mod:`jurist.engines`, run folders, cost and
the report to :mod:`jurist.runs`, item sources to :mod:`jurist.data`, and
:class:`JudgeMetric` / :func:`evaluate_model` to :mod:`jurist.pipeline`. The old imports keep
working with a :class:`DeprecationWarning` naming the new place::

    from jurist.evaluate import Run      # warns: use 'from jurist.runs import Run'

Importing this module replaces the attribute ``jurist.evaluate`` (the function) with the
module, so the module is callable: ``jurist.evaluate(data, judge, ...)`` keeps working.
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any

_HOMES: dict[str, tuple[str, ...]] = {
    "jurist.engines": (
        "BatchAPIEngine",
        "BatchAPIOptions",
        "Engine",
        "ErrorOutcome",
        "IngestResult",
        "LocalEngine",
        "RayEngine",
        "RayOptions",
        "RunOptions",
        "aevaluate",
        "aingest",
        "evaluate",
        "ingest",
        "judge_models",
        "judge_ray_dataset",
    ),
    "jurist.runs": (
        "DatasetInfo",
        "Manifest",
        "Price",
        "PriceTable",
        "Run",
        "RunSummary",
    ),
    "jurist.data": (
        "ItemSource",
        "Records",
        "open_source",
        "read_records",
        "require_fields",
    ),
    "jurist.pipeline": (
        "EvaluationResults",
        "Generation",
        "GlobalScores",
        "InstanceResult",
        "JudgeCall",
        "JudgeMetric",
        "MetricResults",
        "aevaluate_model",
        "evaluate_model",
    ),
}
_MOVED = {name: home for home, names in _HOMES.items() for name in names}

__all__: list[str] = []  # nothing new is exported from here


def __getattr__(name: str) -> Any:
    """An old name: warn once per access site and hand over the object from its new home."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module 'jurist.evaluate' has no attribute {name!r}")
    warnings.warn(
        f"'jurist.evaluate.{name}' moved: use 'from {home} import {name}' "
        "(the package jurist.evaluate is deprecated)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(_MOVED)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`jurist.evaluate` (which importing it replaces)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from jurist.engines import evaluate

        return evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
