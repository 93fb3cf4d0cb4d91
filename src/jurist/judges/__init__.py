"""Judges: configuration plus async calls that return judgments.

>>> from jurist.judges import LLMJudge
>>> LLMJudge("mock:j", template="likert").template.name
'likert'
"""

from jurist.judges._examples import Example
from jurist.judges._llm_judge import LLMJudge
from jurist.judges._pairwise import (
    PairJudgment,
    PairwiseJudge,
    PairwiseResults,
    PairwiseSummary,
)
from jurist.judges._panel import Panel, PanelJudgment, PanelResults
from jurist.judges._protocol import ItemJudge, ItemOutcome, ModelJudge
from jurist.judges._results import JudgeResults
from jurist.judges._reward_model import RewardModelJudge
from jurist.judges.rubric import (
    CriterionGrader,
    CriterionVerdict,
    GradeReport,
    JudgeSpec,
    Rubric,
    RubricDataset,
    RubricJudge,
)

__all__ = [
    "CriterionGrader",
    "CriterionVerdict",
    "Example",
    "GradeReport",
    "ItemJudge",
    "ItemOutcome",
    "JudgeResults",
    "JudgeSpec",
    "LLMJudge",
    "ModelJudge",
    "PairJudgment",
    "PairwiseJudge",
    "PairwiseResults",
    "PairwiseSummary",
    "Panel",
    "PanelJudgment",
    "PanelResults",
    "RewardModelJudge",
    "Rubric",
    "RubricDataset",
    "RubricJudge",
]
