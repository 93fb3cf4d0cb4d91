"""A judge used as a metric inside an evaluation pipeline (unitxt style).

:class:`JudgeMetric` scores a prediction field with any judge and returns instance and
global scores; :func:`evaluate_model` generates answers with one model and judges them with
another. See ``docs/judge-metric.md``.
"""

from jurist.pipeline._metric import (
    GlobalScores,
    InstanceResult,
    JudgeCall,
    JudgeMetric,
    MetricResults,
)
from jurist.pipeline._pipeline import (
    EvaluationResults,
    Generation,
    aevaluate_model,
    evaluate_model,
)

__all__ = [
    "EvaluationResults",
    "Generation",
    "GlobalScores",
    "InstanceResult",
    "JudgeCall",
    "JudgeMetric",
    "MetricResults",
    "aevaluate_model",
    "evaluate_model",
]
