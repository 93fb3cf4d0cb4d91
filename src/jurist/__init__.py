"""jurist: LLM-as-a-judge, fast, cheap and reproducible.

>>> import jurist
>>> judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["4"]), template="likert")
>>> judge.judge_sync([{"prompt": "2+2?", "response": "4"}]).scores
[0.75]
>>> round(jurist.metrics.accuracy([1, 0, 1], [1, 1, 1]), 3)
0.667

Every public name (``jurist.LLMJudge``, ``jurist.evaluate``...) and the subpackages
``catalog``, ``metrics``, ``rewards`` and ``compat`` are attributes of ``jurist``, each
imported on first use, so that ``import jurist`` (and the ``jurist`` command, which
imports it first) costs only what is used.
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from jurist._version import __version__

if TYPE_CHECKING:  # what __getattr__ below gives, for type checkers
    from jurist import catalog as catalog
    from jurist import compat as compat
    from jurist import metrics as metrics
    from jurist import rewards as rewards
    from jurist.benchmark import abench as abench
    from jurist.benchmark import bench as bench
    from jurist.engines import aevaluate as aevaluate
    from jurist.engines import evaluate as evaluate
    from jurist.errors import JuristError as JuristError
    from jurist.judges import JudgeResults as JudgeResults
    from jurist.judges import LLMJudge as LLMJudge
    from jurist.judges import PairwiseJudge as PairwiseJudge
    from jurist.judges import Panel as Panel
    from jurist.judges import RewardModelJudge as RewardModelJudge
    from jurist.judges.rubric import CriterionGrader as CriterionGrader
    from jurist.judges.rubric import CriterionVerdict as CriterionVerdict
    from jurist.judges.rubric import GradeReport as GradeReport
    from jurist.judges.rubric import JudgeSpec as JudgeSpec
    from jurist.judges.rubric import Rubric as Rubric
    from jurist.judges.rubric import RubricDataset as RubricDataset
    from jurist.models import Model as Model
    from jurist.models import get_model as get_model
    from jurist.pipeline import JudgeMetric as JudgeMetric
    from jurist.pipeline import aevaluate_model as aevaluate_model
    from jurist.pipeline import evaluate_model as evaluate_model
    from jurist.runs import PriceTable as PriceTable
    from jurist.runs import Run as Run
    from jurist.templates import Template as Template
    from jurist.templates import get_template as get_template
    from jurist.templates import list_templates as list_templates
    from jurist.templates import load_template as load_template
    from jurist.templates import register_template as register_template
    from jurist.types import Completion as Completion
    from jurist.types import Judgment as Judgment
    from jurist.types import Message as Message
    from jurist.types import Request as Request
    from jurist.types import Usage as Usage

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
    "RewardModelJudge",
    "Rubric",
    "RubricDataset",
    "Run",
    "Template",
    "Usage",
    "__version__",
    "abench",
    "aevaluate",
    "aevaluate_model",
    "bench",
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

_SUBPACKAGES = ("catalog", "compat", "metrics", "rewards")
_HOMES = {
    "jurist.benchmark": ("abench", "bench"),
    "jurist.engines": ("aevaluate", "evaluate"),
    "jurist.errors": ("JuristError",),
    "jurist.judges": ("JudgeResults", "LLMJudge", "PairwiseJudge", "Panel", "RewardModelJudge"),
    "jurist.judges.rubric": (
        "CriterionGrader",
        "CriterionVerdict",
        "GradeReport",
        "JudgeSpec",
        "Rubric",
        "RubricDataset",
    ),
    "jurist.models": ("Model", "get_model"),
    "jurist.pipeline": ("JudgeMetric", "aevaluate_model", "evaluate_model"),
    "jurist.runs": ("PriceTable", "Run"),
    "jurist.templates": (
        "Template",
        "get_template",
        "list_templates",
        "load_template",
        "register_template",
    ),
    "jurist.types": ("Completion", "Judgment", "Message", "Request", "Usage"),
}
_HOME_OF = {name: home for home, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name or subpackage, imported on first use (and kept: the next use is a
    plain attribute)."""
    if name in _SUBPACKAGES:
        value: Any = importlib.import_module(f"jurist.{name}")
    elif name in _HOME_OF:
        value = getattr(importlib.import_module(_HOME_OF[name]), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"jurist.{name}") is not None:
        # any other subpackage (jurist.models, jurist.judges, ...), as ``import jurist``
        # made them attributes when it imported everything up front
        value = importlib.import_module(f"jurist.{name}")
    else:
        raise AttributeError(f"module 'jurist' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBPACKAGES, *_HOME_OF})
