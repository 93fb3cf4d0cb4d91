"""Rubric grading: criteria, ensembles of judges, option shuffling, weighted scores.

>>> import jurist
>>> rubric = jurist.Rubric.from_dict([{"name": "polite", "requirement": "Is polite"}])
>>> model = jurist.get_model("mock:j", outputs=['{"c1": {"verdict": "MET"}}'], cycle=True)
>>> jurist.CriterionGrader(judges=[model]).grade_sync(rubric, "Thank you!").score
1.0
"""

from jurist.judges.rubric._criteria import AUTO_NA_LABEL, Criterion, CriterionVerdict, Option
from jurist.judges.rubric._dataset import DataItem, RubricDataset
from jurist.judges.rubric._grader import CriterionGrader
from jurist.judges.rubric._item_judge import RubricJudge
from jurist.judges.rubric._judge_config import RubricJudgeConfig
from jurist.judges.rubric._judge_spec import JudgeSpec
from jurist.judges.rubric._report import CriterionReport, FinalVerdict, GradeReport, Vote
from jurist.judges.rubric._rubric import Rubric
from jurist.judges.rubric._scoring import CannotAssess

__all__ = [
    "AUTO_NA_LABEL",
    "CannotAssess",
    "Criterion",
    "CriterionGrader",
    "CriterionReport",
    "CriterionVerdict",
    "DataItem",
    "FinalVerdict",
    "GradeReport",
    "JudgeSpec",
    "Option",
    "Rubric",
    "RubricDataset",
    "RubricJudge",
    "RubricJudgeConfig",
    "Vote",
]
