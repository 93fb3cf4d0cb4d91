"""jurist: LLM-as-a-judge, fast, cheap and reproducible.

>>> import jurist
>>> judge = jurist.LLMJudge(jurist.get_model("mock:judge", outputs=["4"]), template="likert")
>>> judge.judge_sync([{"prompt": "2+2?", "response": "4"}]).scores
[0.75]
"""

from jurist import catalog
from jurist._version import __version__
from jurist.errors import JuristError
from jurist.evaluate import (
    JudgeMetric,
    PriceTable,
    Run,
    aevaluate,
    aevaluate_model,
    evaluate,
    evaluate_model,
)
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
from jurist.templates import (
    Template,
    get_template,
    list_templates,
    load_template,
    register_template,
)
from jurist.types import Completion, Judgment, Message, Request, Usage

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
    "register_template",
]
