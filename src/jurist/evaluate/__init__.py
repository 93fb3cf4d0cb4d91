"""The batch engine: datasets in, runs out.

:func:`evaluate` (sync) and :func:`aevaluate` (async) run any judge over a dataset into a
run folder that survives a crash and resumes; :class:`Run` reads it back (records,
JSONL / Parquet / pandas, summary, HTML report). See ``docs/evaluate.md``.
"""

from jurist.evaluate._batch_options import BatchAPIOptions
from jurist.evaluate._cost import Price, PriceTable
from jurist.evaluate._engine import ErrorOutcome, aevaluate, evaluate, judge_models
from jurist.evaluate._engines import BatchAPIEngine, Engine, LocalEngine, RayEngine
from jurist.evaluate._ingest import IngestResult, aingest, ingest
from jurist.evaluate._manifest import DatasetInfo, Manifest
from jurist.evaluate._metric import (
    GlobalScores,
    InstanceResult,
    JudgeCall,
    JudgeMetric,
    MetricResults,
)
from jurist.evaluate._pipeline import (
    EvaluationResults,
    Generation,
    aevaluate_model,
    evaluate_model,
)
from jurist.evaluate._ray import judge_ray_dataset
from jurist.evaluate._ray_options import RayOptions
from jurist.evaluate._readers import Records, read_records, require_fields
from jurist.evaluate._run import Run, RunSummary
from jurist.evaluate._run_options import RunOptions
from jurist.evaluate._source import ItemSource, open_source

__all__ = [
    "BatchAPIEngine",
    "BatchAPIOptions",
    "DatasetInfo",
    "Engine",
    "ErrorOutcome",
    "EvaluationResults",
    "Generation",
    "GlobalScores",
    "IngestResult",
    "InstanceResult",
    "ItemSource",
    "JudgeCall",
    "JudgeMetric",
    "LocalEngine",
    "Manifest",
    "MetricResults",
    "Price",
    "PriceTable",
    "RayEngine",
    "RayOptions",
    "Records",
    "Run",
    "RunOptions",
    "RunSummary",
    "aevaluate",
    "aevaluate_model",
    "aingest",
    "evaluate",
    "evaluate_model",
    "ingest",
    "judge_models",
    "judge_ray_dataset",
    "open_source",
    "read_records",
    "require_fields",
]
