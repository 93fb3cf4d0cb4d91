"""Engines: how items travel from a dataset through a judge into a run folder.

:func:`evaluate` (sync) and :func:`aevaluate` (async) run any judge over a dataset with one
engine object: :class:`LocalEngine` (this process, bounded concurrency), :class:`RayEngine`
(Ray Data actors, each rebuilding the same judge) or :class:`BatchAPIEngine` (the provider's
batch API through :mod:`jurist.batching`). Every engine takes the same judge and the same
:class:`RunOptions`, writes to the same run store and resumes a killed run. See
``docs/evaluate.md`` and ``docs/scaling.md``.
"""

from jurist.batching import BatchAPIOptions
from jurist.engines._engines import BatchAPIEngine, Engine, LocalEngine, RayEngine
from jurist.engines._evaluate import ErrorOutcome, aevaluate, evaluate, judge_models
from jurist.engines._ingest import IngestResult, aingest, ingest
from jurist.engines._ray import judge_ray_dataset
from jurist.engines._ray_options import RayOptions
from jurist.engines._run_options import RunOptions

__all__ = [
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
]
