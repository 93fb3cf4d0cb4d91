"""jurist: LLM-as-a-judge, fast, cheap and reproducible.

>>> import jurist
>>> judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["4"]), template="likert")
>>> judge.judge_sync([{"prompt": "2+2?", "response": "4"}]).scores
[0.75]
>>> round(jurist.metrics.accuracy([1, 0, 1], [1, 1, 1]), 3)
0.667

The subpackages ``metrics``, ``rewards`` and ``compat`` are attributes of ``jurist`` too,
imported on first use so that ``import jurist`` stays fast.
"""

import importlib
from typing import TYPE_CHECKING, Any

from jurist import catalog
from jurist._version import __version__
from jurist.engines import aevaluate, evaluate
from jurist.errors import JuristError
from jurist.judges import JudgeResults, LLMJudge, PairwiseJudge, Panel
from jurist.judges.rubric import (
    CriterionGrader,
    CriterionVerdict,
    GradeReport,
    JudgeSpec,
    Rubric,
    RubricDataset,
)
from jurist.models import Model, get_model
from jurist.pipeline import JudgeMetric, aevaluate_model, evaluate_model
from jurist.runs import PriceTable, Run
from jurist.templates import (
    Template,
    get_template,
    list_templates,
    load_template,
    register_template,
)
from jurist.types import Completion, Judgment, Message, Request, Usage

if TYPE_CHECKING:  # what __getattr__ below gives, for type checkers
    from jurist import compat as compat
    from jurist import metrics as metrics
    from jurist import rewards as rewards

__all__ = [
    "Completion",
    "CriterionGrader",
    "CriterionVerdict",
    "GradeReport",
    "JudgeMetric",
    "JudgeResults",
    "JudgeSpec",
    "Judgment",
    "JuristError",
    "LLMJudge",
    "Message",
    "Model",
    "PairwiseJudge",
    "Panel",
    "PriceTable",
    "Request",
    "Rubric",
    "RubricDataset",
    "Run",
    "Template",
    "Usage",
    "__version__",
    "aevaluate",
    "aevaluate_model",
    "catalog",
    "evaluate",
    "evaluate_model",
    "get_model",
    "get_template",
    "list_templates",
    "load_template",
    "metrics",
    "register_template",
]

_LAZY_SUBPACKAGES = ("compat", "metrics", "rewards")


def __getattr__(name: str) -> Any:
    """``jurist.metrics``, ``jurist.rewards``, ``jurist.compat``: imported on first use."""
    if name in _LAZY_SUBPACKAGES:
        return importlib.import_module(f"jurist.{name}")
    raise AttributeError(f"module 'jurist' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_SUBPACKAGES})
